"""The C extensions are optional for users (Python code takes over, with identical results) but never in CI:
a C file that does not compile must fail the run, not silently skip its tests. Here a missing build or compiler
is a skip, which tests/conftest.py turns into a failure under CI=true."""

from __future__ import annotations

import importlib
import os
import shutil
import subprocess
import sys
import tomllib

import pytest

from tests.helpers import REPO_ROOT

pytestmark = pytest.mark.slow  # builds the C extensions under ASan and UBSan


def _declared() -> list[str]:
    with (REPO_ROOT / "pyproject.toml").open("rb") as handle:
        modules = tomllib.load(handle)["tool"]["setuptools"].get("ext-modules", [])
    return [module["name"] for module in modules]


def test_some_extension_is_declared() -> None:
    assert _declared(), "pyproject.toml declares no C extension: drop this file and .ci/sanitize with it"


@pytest.mark.parametrize("name", _declared())
def test_declared_extension_built(name: str) -> None:
    try:
        importlib.import_module(name)
    except ImportError as problem:
        pytest.skip(f"{name} did not build: {problem}")


def test_extensions_under_sanitizers() -> None:
    """Every declared extension, built with ASan and UBSan, passes the tests that drive it (.ci/sanitize says
    which): a read out of bounds or undefined behaviour the regular build gets away with fails here, and an
    extension the script did not build and import from its sanitized copy fails too."""
    if shutil.which("gcc") is None:
        pytest.skip("no gcc for the sanitizer build")
    done = subprocess.run(
        ["bash", str(REPO_ROOT / ".ci" / "sanitize")],
        env={**os.environ, "PYTHON": sys.executable},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    # a sanitizer's report comes before the Python traceback of the abort: keep room for both
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-12000:]
    sanitized = {line.split()[2] for line in done.stdout.splitlines() if line.startswith("sanitized build: ")}
    assert sanitized == set(_declared()), done.stdout[-4000:]
