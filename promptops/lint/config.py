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

from promptops.errors import PromptopsError
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


_FORMAT = "1"  # of the cached table
_KEYS = {"select", "ignore", "per-file-ignores", "render-context"}


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
    table = _lint_table(text, source, cache_dir)
    if table is None:
        return LintConfig()
    where = f"{source}: [tool.promptops.lint]"
    if not isinstance(table, Mapping):
        raise LintConfigError(f"{where} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise LintConfigError(f"{where}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})")
    known = sorted(known_codes)
    pinned = set(never_off)

    def codes(value: Any, key: str) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise LintConfigError(f"{where}: {key} must be a list of rule codes")
        for code in value:
            if not any(k.startswith(code) for k in known) or not code.startswith("PO"):
                raise LintConfigError(f"{where}: {key}: unknown rule code or prefix {code!r}")
        return tuple(value)

    def not_pinned(value: tuple[str, ...], key: str) -> tuple[str, ...]:
        for code in value:
            if code in pinned:
                raise LintConfigError(f"{where}: {key}: {code} cannot be turned off")
        return value

    select = codes(table.get("select", ["PO"]), "select")
    ignore = not_pinned(codes(table.get("ignore", []), "ignore"), "ignore")
    per_file: dict[str, tuple[str, ...]] = {}
    raw_per_file = table.get("per-file-ignores", {})
    if not isinstance(raw_per_file, Mapping):
        raise LintConfigError(f"{where}: per-file-ignores must be a table of pattern = [codes]")
    for pattern, value in raw_per_file.items():
        key = f"per-file-ignores {pattern!r}"
        per_file[pattern] = not_pinned(codes(value, key), key)
    context = table.get("render-context", {})
    if not isinstance(context, Mapping):
        raise LintConfigError(f"{where}: render-context must be a table of variable = sample value")
    return LintConfig(select, ignore, per_file, dict(context), frozenset(pinned))


def _lint_table(text: str, source: str, cache_dir: str | None) -> Any:
    """The ``[tool.promptops.lint]`` value of the TOML ``text`` (None when absent), cached by ``text``."""
    entry = cache.entry(cache_dir, "config", _FORMAT, text)
    cached = cache.load(entry)
    if isinstance(cached, tuple) and len(cached) == 1:  # (table,): the table may be None
        return cached[0]
    import tomllib  # only when the text is new: most runs read an unchanged pyproject.toml

    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LintConfigError(f"{source}: invalid TOML: {exc}") from None
    table = document.get("tool", {}).get("promptops", {}).get("lint")
    cache.store(entry, (table,))
    return table
