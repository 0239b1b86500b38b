"""Lint configuration: ``[tool.promptops.lint]`` in the project's pyproject.toml.

::

    [tool.promptops.lint]
    select = ["PO"]                    # codes or prefixes to run (default: every rule)
    ignore = ["PO006"]                 # codes or prefixes to skip
    per-file-ignores = { "templates/legacy-*.j2" = ["PO004"] }   # repo-relative fnmatch patterns
    render-context = { pr_title = "Fix cache race" }              # extra variables and sample values

One file, no implicit cascade: the CLI reads the pyproject.toml at the project root (or ``--config``).
Patterns are matched against repo-relative paths with ``fnmatch`` (``*`` also crosses ``/``). PO000 always
runs and can be neither ignored nor suppressed: a template that cannot be read is never a pass.

The parsed table is cached by the exact text of the file (``promptops.lint.cache``): a pre-commit run with an
unchanged pyproject.toml never imports ``tomllib``, a noticeable part of a short run.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple

from promptops.core import settings, specs
from promptops.core.errors import PromptopsError
from promptops.lint import cache


class LintConfigError(PromptopsError):
    """The lint configuration is malformed; names the file and key."""


class LintConfig(NamedTuple):
    select: tuple[str, ...] = ("PO",)
    ignore: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, tuple[str, ...]] = MappingProxyType({})
    render_context: Mapping[str, Any] = MappingProxyType({})
    always_on: frozenset[str] = frozenset({"PO000"})

    def enabled(self, code: str, path: str) -> bool:
        """Whether rule ``code`` runs on the repo-relative ``path``."""
        if code in self.always_on:
            return True
        if not any(code.startswith(s) for s in self.select):
            return False
        if any(code.startswith(i) for i in self.ignore):
            return False
        return not any(
            fnmatch.fnmatchcase(path, pattern) and any(code.startswith(c) for c in codes)
            for pattern, codes in self.per_file_ignores.items()
        )


_FORMAT = "2"  # of the cached table: all of [tool.promptops]
_LINT = (*settings.TABLE, "lint")


def parse_config(
    text: str,
    source: str,
    known_codes: Iterable[str],
    never_off: Iterable[str] = (),
    *,
    cache_dir: str | None = None,
) -> LintConfig:
    """Read ``[tool.promptops.lint]`` from pyproject.toml text; a missing table means the defaults.

    ``cache_dir``: where the parsed table may be kept across runs (see ``promptops.lint.cache``).
    """
    try:
        found, document = settings.from_table(_table(text, source, cache_dir), text, source)
        if found.lint is None:
            return LintConfig()
        return _checked(found.lint, document, sorted(known_codes), frozenset(never_off))
    except specs.SpecError as problem:
        raise LintConfigError(str(problem)) from None


def _checked(
    table: settings.LintTable, document: specs.Document, known: list[str], pinned: frozenset[str]
) -> LintConfig:
    """The table's codes checked against the rules (the spec checked the types)."""

    def codes(values: list[str], *key: str, off: bool = False) -> tuple[str, ...]:
        for code in values:
            if not any(k.startswith(code) for k in known) or not code.startswith("PO"):
                raise document.fail((*_LINT, *key), f"unknown rule code or prefix {code!r}")
            if off and code in pinned:
                raise document.fail((*_LINT, *key), f"{code} cannot be turned off")
        return tuple(values)

    per_file = {
        pattern: codes(value, "per-file-ignores", pattern, off=True)
        for pattern, value in table.per_file_ignores.items()
    }
    return LintConfig(
        codes(table.select, "select"),
        codes(table.ignore, "ignore", off=True),
        per_file,
        dict(table.render_context),
        pinned,
    )


def _table(text: str, source: str, cache_dir: str | None) -> Any:
    """The ``[tool.promptops]`` value of the TOML ``text`` (None when absent), cached by ``text``."""
    entry = cache.entry(cache_dir, "config", _FORMAT, text)
    cached = cache.load(entry)
    if isinstance(cached, tuple) and len(cached) == 1:  # (table,): the table may be None
        return cached[0]
    tool = specs.parse_toml(text, source).data.get("tool")  # tomllib only when the text is new
    table = tool.get("promptops") if isinstance(tool, Mapping) else tool
    cache.store(entry, (table,))
    return table
