"""The project a command works on: its root directory and repo-relative paths."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from promptops.core.contract import VERSIONS_DIR, Contract, load_contract
from promptops.core.escape import one_line
from promptops.core.schema_verdicts import SchemaVerdicts

if TYPE_CHECKING:
    from jinja2 import BytecodeCache

_F = TypeVar("_F", bound=Callable[..., Any])


def find_root(start: Path) -> Path:
    """The nearest directory at or above ``start`` with a versions/ directory, else ``start``."""
    start = start.resolve()
    for candidate in (start, *start.parents):
        if (candidate / VERSIONS_DIR).is_dir():
            return candidate
    return start


def echo_lines(*lines: str, err: bool = False) -> None:
    """Print each of ``lines`` as one line (``promptops.core.escape.one_line``): text output quotes names and values
    from files and records, and a newline or ``::`` in one must not start a line of its own in a CI log."""
    click.echo("\n".join(one_line(line) for line in lines), err=err)


class Project:
    """The project root and the contracts loaded so far (a plain class: a dataclass costs import time)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._contracts: dict[str, Contract] = {}

    def __repr__(self) -> str:
        return f"Project({self.root!r})"

    def contract(self, name: str, *, check_schemas: bool = True) -> Contract:
        if name not in self._contracts:
            verdicts = schema_verdicts() if check_schemas else None
            self._contracts[name] = load_contract(self.root, name, check_schemas=check_schemas, verdicts=verdicts)
        return self._contracts[name]

    def relative(self, path: Path | str) -> str:
        """``path`` relative to the project root when inside it (as every output shows paths)."""
        resolved = Path(path).resolve()
        try:
            return resolved.relative_to(self.root).as_posix()
        except ValueError:
            return Path(path).as_posix()


def format_option(*choices: str, help: str = "Output format.") -> Callable[[_F], _F]:
    """The ``--format`` option every result-printing command offers."""
    options = choices or ("text", "json")
    return click.option(
        "--format", "output_format", type=click.Choice(options), default=options[0], show_default=True, help=help
    )


pass_project = click.make_pass_decorator(Project)


def schema_verdicts() -> SchemaVerdicts | None:
    """Metaschema verdicts kept across runs (promptops.core.schema_verdicts) in ``$XDG_CACHE_HOME/promptops``
    (default ``~/.cache/promptops``, created owner-only); ``PROMPTOPS_NO_TEMPLATE_CACHE=1`` turns it off."""
    if os.environ.get("PROMPTOPS_NO_TEMPLATE_CACHE"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or ""
    if not os.path.isabs(base):  # the XDG rule: a relative value is ignored
        try:
            base = str(Path.home() / ".cache")
        except RuntimeError:  # no home directory: no cache
            return None
    return SchemaVerdicts(Path(base) / "promptops")


def jinja_bytecode_cache() -> BytecodeCache | None:
    """Compiled templates kept across runs in Jinja's per-user temporary cache directory.

    Entries are keyed by template name and the code that compiles it (BudgetedBytecodeCache), and checked
    against a checksum of its source, so an edited template is recompiled.
    ``PROMPTOPS_NO_TEMPLATE_CACHE=1`` turns the cache off; an unusable directory just means no cache.
    """
    if os.environ.get("PROMPTOPS_NO_TEMPLATE_CACHE"):
        return None
    from promptops.render.sandbox import BudgetedBytecodeCache  # only template commands pay for Jinja

    try:
        # Keyed by the compiling code too: code compiled without today's budget is never loaded.
        return BudgetedBytecodeCache(pattern="__promptops_budgeted_%s.cache")
    except (OSError, RuntimeError):
        return None
