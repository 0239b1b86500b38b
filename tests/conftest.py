"""Shared fixtures: a real project directory built from this repository's contracts and templates."""

from __future__ import annotations

import ipaddress
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Protocol

import pytest

import promptops.cli
from promptops import Contract, Parser, load_contract
from tests.helpers import REPO_ROOT

REPO = REPO_ROOT

# Under CI=true a skipped test fails the run unless its file is listed here with the reason CI cannot run it:
# a green CI must mean every check ran (a missing Chromium or an uncompiled C extension is installed or
# built by .ci/run, or the run fails).
CI_ALLOWED_SKIPS: dict[str, str] = {
    # The peer conformance vectors are published outside this repository and CI checks out the repository
    # alone; the same compatibility rules are covered by the repository's own tests in tests/compat/.
    "tests/compat/test_compat_conformance.py": "the peer conformance vectors live outside the repository",
}


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if not (report.skipped and _under_ci()) or hasattr(report, "wasxfail"):
        return
    if item.nodeid.split("::")[0] in CI_ALLOWED_SKIPS:
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under CI=true, which allows no skip outside tests/conftest.py's CI_ALLOWED_SKIPS: {reason}"
    )


class NetworkBlocked(OSError):
    """A test tried to reach another machine."""


def _remote(address: object) -> str | None:
    """The host of an AF_INET/AF_INET6 address that is not this machine; None for loopback and AF_UNIX."""
    if not isinstance(address, tuple) or not address:
        return None  # a path: AF_UNIX
    host = str(address[0]).split("%")[0]
    if host in ("localhost", ""):
        return None
    try:
        return None if ipaddress.ip_address(host).is_loopback else host
    except ValueError:
        return host  # a name: resolving it already asks the network


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every test fails if it connects to another machine (the GitHub collector's tests replay recorded answers
    on 127.0.0.1). Loopback stays open in-process (py4j talks to Spark's JVM on it) and subprocesses are not
    watched. Attempts are also recorded, so a test that swallows the error still fails at teardown."""
    attempts: list[str] = []
    connect, connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(address: object) -> None:
        host = _remote(address)
        if host is not None:
            attempts.append(host)
            raise NetworkBlocked(f"tests do not reach the network (connect to {host})")

    def guarded(self: socket.socket, address: object) -> None:
        check(address)
        connect(self, address)  # type: ignore[arg-type]

    def guarded_ex(self: socket.socket, address: object) -> int:
        check(address)
        return connect_ex(self, address)  # type: ignore[arg-type]

    monkeypatch.setattr(socket.socket, "connect", guarded)
    monkeypatch.setattr(socket.socket, "connect_ex", guarded_ex)
    yield attempts
    assert not attempts, f"the test tried to reach the network: {', '.join(attempts)}"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root with the review-result contract only, as it stood when its first release was cut: its
    contract.yaml, schema 1.0, and the head template and partials of release 1.0.0 (from the frozen snapshot),
    with no release lock. The lint and render machinery tests count and name files against this one contract,
    so it must not move each time the repository cuts a release."""
    root = tmp_path / "project"
    source = REPO / "versions" / "review-result"
    contract = root / "versions" / "review-result"
    (contract / "schemas").mkdir(parents=True)
    shutil.copy(source / "contract.yaml", contract / "contract.yaml")
    shutil.copy(source / "schemas" / "1.0.json", contract / "schemas" / "1.0.json")
    shutil.copytree(source / "prompts" / "1.0.0" / "_partials", root / "templates" / "_partials")
    shutil.copy(source / "prompts" / "1.0.0.j2", root / "templates" / "review-result.j2")
    return root


@pytest.fixture
def full_project(tmp_path: Path) -> Path:
    """A project root holding copies of this repository's whole versions/ and templates/ (every contract)."""
    root = tmp_path / "full-project"
    root.mkdir()
    shutil.copytree(REPO / "versions", root / "versions")
    shutil.copytree(REPO / "templates", root / "templates")
    return root


class Cli(Protocol):
    def __call__(self, root: Path, *args: str) -> tuple[int, str, str]: ...


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    """Run the real ``promptops`` command line in-process: (exit code, stdout, stderr).

    The template bytecode cache is off here so tests leave nothing in the system's temporary directory;
    test_lint_cli covers the cache with a directory of its own.
    """
    monkeypatch.setenv("PROMPTOPS_NO_TEMPLATE_CACHE", "1")

    def run(root: Path, *args: str) -> tuple[int, str, str]:
        code = promptops.cli.run(["--root", str(root), *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture(scope="session")
def contract() -> Contract:
    return load_contract(REPO_ROOT, "review-result")


@pytest.fixture(scope="session")
def parser(contract: Contract) -> Parser:
    return Parser(contract)


@pytest.fixture(scope="session")
def slow_parser(contract: Contract) -> Parser:
    return Parser(contract, fast_path=False)


@pytest.fixture(params=["fast", "slow"])
def both(request: pytest.FixtureRequest, parser: Parser, slow_parser: Parser) -> Parser:
    """Each rule test runs with the fast path on and off: their outcomes must be the same."""
    return {"fast": parser, "slow": slow_parser}[request.param]
