"""The lean install: linting, rendering, compat, release checks and scaffolding never import the store's
dependencies (duckdb, pyarrow: the ``store`` extra), and a store command run without them says in one line
how to install them.

Each command runs in a fresh interpreter whose import system refuses duckdb and pyarrow and records every
attempt, so a new import anywhere on these commands' paths (even one whose failure is caught) fails here.

Then the same as a user gets it: the wheel built from this checkout in a fresh virtualenv without the store
extra, where every ``--help`` of the command tree works, a store command names the extra to install, and the
documentation site builds with the ``docs`` extra alone.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
from pathlib import Path

import pytest

from promptops.cli import COMMANDS
from tests.helpers import REPO_ROOT

BLOCKED = ("duckdb", "pyarrow")
RUNNER = """
import importlib.abc, json, sys
attempts = []
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {blocked!r}:
            attempts.append(name)
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Refuse())
from promptops.cli import run
code = run(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {blocked!r})
print(json.dumps({{"code": code, "attempts": attempts, "loaded": loaded}}), file=sys.stderr)
"""


def _run(root: Path, *args: str) -> tuple[int, list[str], str]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER.format(blocked=BLOCKED), *args],
        cwd=root,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    *messages, last = done.stderr.strip().split("\n")
    result = json.loads(last)
    return result["code"], result["attempts"] + result["loaded"], "\n".join(messages)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    for name in ("versions", "templates"):
        shutil.copytree(REPO_ROOT / name, tmp_path / name)
    shutil.copytree(REPO_ROOT / "rollout", tmp_path / "rollout")
    (tmp_path / "logs.jsonl").write_text("", encoding="utf-8")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    return tmp_path


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (("lint",), 0),
        (("lint", "--format", "json"), 0),
        (("render", "--contract", "review-result", "--changed-file", "a.py"), 0),
        (("compat", "matrix", "--contract", "review-result"), 0),
        (("compat", "diff", "versions/review-result/schemas/1.0.json", "versions/review-result/schemas/1.1.json"), 0),
        (("release", "verify"), 0),
        (("release", "list"), 0),
        (("release", "cut", "--contract", "review-result", "--dry-run"), 2),  # 1.1.1 is released already
        (("release", "check"), 0),
        (("validate", "--contract", "agent-output", "--changed-file", "a.py", "-"), 2),  # empty stdin: rejected
        (("init", "--dry-run"), 0),
        (("contract", "new", "mine", "--from", "agent-output", "--dry-run"), 0),
        ((), 0),  # the group alone shows its help, which lists every command
        (("--help",), 0),
        (("ingest", "--help"), 0),
        (("rates", "--help"), 0),
        (("export", "--help"), 0),
        (("report", "--help"), 0),
        (("rollout", "gate", "--help"), 0),
    ],
)
def test_checks_never_import_the_store(root: Path, args: tuple[str, ...], code: int) -> None:
    got, imported, messages = _run(root, *args)
    assert got == code, messages
    assert imported == [], f"promptops {' '.join(args)} imported {imported}"


PLAN = "rollout/review-result/review-1.1.yaml"
# Every command that reads or writes the diagnostics store.
STORE_COMMANDS = [
    ("ingest", "logs.jsonl"),
    ("rates", "--contract", "review-result"),
    ("export", "exported"),
    ("report", "--contract", "review-result", "--out", "reports"),
    ("rollout", "gate", PLAN),
    ("rollout", "status", PLAN),
    ("rollout", "promote", PLAN),
    ("demo",),
]


def _store_hint() -> str:
    """The one line a store command prints without the store extra: it names this project's distribution."""
    name = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    return f"promptops: error: this command needs the diagnostics store (duckdb): pip install '{name}[store]'"


@pytest.mark.parametrize("args", STORE_COMMANDS[:2])
def test_store_commands_say_how_to_install_the_store(root: Path, args: tuple[str, ...]) -> None:
    got, _, messages = _run(root, *args)
    assert got == 3
    assert messages == _store_hint()


# The installed wheel, without the store extra ---------------------------------------------------------------

# Run by the virtualenv's Python: every command and group of the tree with --help and -h, and each group alone
# (which shows its help too), in this one process; a command that cannot even be loaded is reported as such.
HELP_TREE = """
import contextlib, importlib.util, io, json
import click
from promptops.cli import cli, run
results = []
def call(args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = run(args)
    results.append({"args": args, "code": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
def walk(command, path):
    for flag in ("--help", "-h"):
        call([*path, flag])
    if isinstance(command, click.Group):
        call(path)
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            try:
                sub = command.get_command(ctx, name)
            except ImportError as problem:
                results.append({"args": [*path, name], "code": None, "stdout": "", "stderr": repr(problem)})
                continue
            walk(sub, [*path, name])
walk(cli, [])
store = [name for name in ("duckdb", "pyarrow") if importlib.util.find_spec(name) is not None]
print(json.dumps({"store_modules": store, "results": results}))
"""


def _clean_env() -> dict[str, str]:
    """The environment without anything that would put this checkout (or another virtualenv) on the path."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}


def _check(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(args, cwd=cwd, env=_clean_env(), capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{' '.join(args)} -> {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A copy of this working tree (tracked and untracked files, minus ignored ones) and the wheel built from it
    (an in-tree build would leave build/ and *.egg-info in the checkout)."""
    base = tmp_path_factory.mktemp("lean-wheel")
    checkout = base / "checkout"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    for name in filter(None, listed.split("\0")):
        if (REPO_ROOT / name).is_file():
            (checkout / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO_ROOT / name, checkout / name)
    _check([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(base / "dist"), str(checkout)], base)
    (wheel,) = (base / "dist").glob("*.whl")
    return checkout, wheel


def _install(target: Path, requirement: str) -> Path:
    venv.create(target, with_pip=True)
    _check([str(target / "bin" / "python"), "-m", "pip", "install", "-q", requirement], target)
    return target / "bin"


@pytest.fixture(scope="module")
def base_install(built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin directory of a fresh virtualenv holding the wheel's base install."""
    return _install(tmp_path_factory.mktemp("lean-base") / "venv", str(built[1]))


@pytest.mark.slow  # a wheel and a base venv
def test_every_help_of_the_base_install_exits_0(base_install: Path, tmp_path: Path) -> None:
    done = _check([str(base_install / "python"), "-c", HELP_TREE], tmp_path)
    tree = json.loads(done.stdout)
    assert tree["store_modules"] == []  # the base install brings neither duckdb nor pyarrow
    results = tree["results"]
    bad = [r for r in results if r["code"] != 0 or not r["stdout"].startswith("Usage: promptops") or r["stderr"]]
    assert bad == [], "\n".join(f"promptops {' '.join(r['args'])} -> {r['code']}: {r['stderr'][:300]}" for r in bad)
    walked = {tuple(r["args"][:-1]) for r in results if r["args"][-1:] == ["--help"]}
    assert {(name,) for name in COMMANDS} <= walked and {("rollout", "gate"), ("release", "cut")} <= walked


@pytest.mark.slow  # a wheel and a base venv
@pytest.mark.parametrize("args", [(), ("--help",), ("-h",)], ids=["alone", "--help", "-h"])
def test_the_command_alone_shows_its_help(base_install: Path, tmp_path: Path, args: tuple[str, ...]) -> None:
    done = _check([str(base_install / "promptops"), *args], tmp_path)
    assert done.stdout.startswith("Usage: promptops [OPTIONS] COMMAND [ARGS]...") and done.stderr == ""


@pytest.mark.slow  # a wheel and a base venv
def test_the_version_is_the_distributions(base_install: Path, tmp_path: Path) -> None:
    version = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["version"]
    done = _check([str(base_install / "promptops"), "--version"], tmp_path)
    assert done.stdout == f"promptops, version {version}\n"


@pytest.mark.slow  # a wheel and a base venv
@pytest.mark.parametrize("args", STORE_COMMANDS, ids=" ".join)
def test_a_store_command_of_the_base_install_names_the_extra(
    base_install: Path, root: Path, args: tuple[str, ...]
) -> None:
    (root / ".promptops").mkdir()
    (root / ".promptops" / "diagnostics.duckdb").write_bytes(b"")  # a store is there: what is missing is DuckDB
    command = [str(base_install / "promptops"), *args]
    done = subprocess.run(command, cwd=root, env=_clean_env(), capture_output=True, text=True, check=False)
    assert (done.returncode, done.stderr) == (3, _store_hint() + "\n"), done.stdout


@pytest.mark.slow  # a docs-only venv and a site build
def test_the_docs_build_with_the_docs_extra_alone(
    built: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    checkout, wheel = built
    bin_dir = _install(tmp_path_factory.mktemp("lean-docs") / "venv", f"{wheel}[docs]")
    probe = "import importlib.util as u; print(u.find_spec('duckdb'), u.find_spec('pyarrow'))"
    assert _check([str(bin_dir / "python"), "-c", probe], checkout).stdout == "None None\n"
    site = tmp_path_factory.mktemp("lean-site")
    _check([str(bin_dir / "mkdocs"), "build", "--strict", "--quiet", "--site-dir", str(site)], checkout)
    assert "promptops rollout gate" in (site / "cli" / "index.html").read_text(encoding="utf-8")
