"""Lint's and the renderer's module-level patterns compile on first use (promptops.render.regexes): importing
their modules compiles none, and a pattern compiled on use is ``re.compile``'s, built once a process."""

from __future__ import annotations

import copy
import importlib
import re
import subprocess
import sys

from promptops.render import regexes
from tests.conftest import REPO

MODULES = (
    "promptops.lint.suppressions",
    "promptops.lint.rules.fields",
    "promptops.lint.rules.instructions",
    "promptops.lint.rules.template",
    "promptops.render.filters",
    "promptops.render.reading",
    "promptops.render.text",
)


def _lazies() -> list[regexes._Lazy]:
    return [
        value
        for name in MODULES
        for value in vars(importlib.import_module(name)).values()
        if isinstance(value, regexes._Lazy)
    ]


def test_importing_lint_and_render_compiles_no_pattern() -> None:
    probe = (
        "import sys, importlib; from promptops.render import regexes; "
        "[importlib.import_module(m) for m in sys.argv[1:]]; import promptops.lint, promptops.cli.lint; "
        "print(len(regexes._built), sum(len(vars(v)) > 1 for m in list(sys.modules.values()) "
        "for v in vars(m).values() if isinstance(v, regexes._Lazy)))"
    )
    done = subprocess.run([sys.executable, "-c", probe, *MODULES], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["0", "0"]


def test_a_lazy_pattern_is_re_compiles_pattern_on_first_use() -> None:
    lazies = _lazies()
    assert len(lazies) >= 35
    for value in lazies:
        pattern, flags = value._source
        assert value.pattern == pattern and value.flags == re.compile(pattern, flags).flags
        assert regexes.compile(pattern, flags) == re.compile(pattern, flags)
        assert value.search == regexes.compile(pattern, flags).search  # the method kept on the instance
    assert copy.copy(lazies[0])._source == lazies[0]._source  # dunder probes are not the pattern's


def test_patterns_are_built_once_a_process() -> None:
    first = regexes.compile(r"x\d+y", re.IGNORECASE)
    assert regexes.compile(r"x\d+y", re.IGNORECASE) is first
    assert regexes.compile(r"x\d+y") is not first and regexes.compile(r"x\d+y").flags & re.IGNORECASE == 0
    assert first.search("aX12Yb") is not None
