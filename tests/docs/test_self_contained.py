"""Nothing a user sees refers to documents they do not have: the package, the templates, the docs, the README,
every command's help and a rendered dashboard name what a specification defines by what it is, never by the
team's internal file names or numbering. Also: every command answers --help."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from promptops.cli import cli
from tests.conftest import Cli
from tests.helpers import REPO_ROOT

# What a user cannot follow: the internal specs' numbering, the design notes' file, paths outside the repository.
FORBIDDEN = re.compile(r"(?i:seed 00)|DESIGN\.md|\.\./shared")
TREES = ("promptops", "docs", "templates", "scripts", ".ci")
FILES = ("README.md", "CHANGELOG.md", "action.yml", "mkdocs.yml")
BINARY_SUFFIXES = {".so", ".pyc", ".png", ".duckdb", ".parquet", ".gz"}


def _text_files() -> Iterator[Path]:
    for tree in TREES:
        for path in sorted((REPO_ROOT / tree).rglob("*")):
            if path.is_file() and path.suffix not in BINARY_SUFFIXES and "__pycache__" not in path.parts:
                yield path
    for name in FILES:
        yield REPO_ROOT / name


def _offences(text: str, where: str) -> list[str]:
    found = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in FORBIDDEN.finditer(line):
            found.append(f"{where}:{number}: {match.group(0)!r} in {line.strip()[:120]!r}")
    return found


def _commands(group: click.Group, ctx: click.Context, path: tuple[str, ...]) -> Iterator[tuple[str, ...]]:
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None, f"{' '.join((*path, name))} is listed but cannot be loaded"
        yield (*path, name)
        if isinstance(command, click.Group):
            yield from _commands(command, click.Context(command, parent=ctx, info_name=name), (*path, name))


def all_commands() -> list[tuple[str, ...]]:
    return [(), *_commands(cli, click.Context(cli, info_name="promptops"), ())]


@pytest.mark.parametrize("command", all_commands(), ids=lambda c: " ".join(c) or "promptops")
def test_every_command_answers_help(command: tuple[str, ...]) -> None:
    result = CliRunner().invoke(cli, [*command, "--help"], prog_name="promptops")
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Usage: {' '.join(('promptops', *command))} ")
    assert not _offences(result.output, f"promptops {' '.join(command)} --help")


def test_the_tree_refers_to_nothing_outside_it() -> None:
    offences = []
    for path in _text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # a binary file: nothing a user reads
        offences += _offences(text, path.relative_to(REPO_ROOT).as_posix())
    assert not offences, f"{len(offences)} references to documents outside the repository:\n" + "\n".join(offences)


@pytest.mark.slow  # the demo and its dashboard
def test_a_rendered_dashboard_refers_to_nothing_outside_it(cli: Cli, full_project: Path, tmp_path: Path) -> None:
    """The demo's dashboard (gates judged on simulated traffic, releases, the compatibility matrix), its JSON
    summary and the narrative printed on the way."""
    shutil.copytree(REPO_ROOT / "rollout", full_project / "rollout")
    workspace = tmp_path / "ws"
    code, out, err = cli(full_project, "demo", "--workspace", str(workspace))
    assert code == 0, err
    offences = _offences(out + err, "promptops demo output")
    reports = sorted((workspace / "reports").iterdir())
    assert any(p.suffix == ".html" for p in reports)
    for path in reports:
        offences += _offences(path.read_text(encoding="utf-8"), f"reports/{path.name}")
    assert not offences, "\n".join(offences)
