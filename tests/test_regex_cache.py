"""Lint's and the renderer's module-level patterns compile on first use (promptops.render.regexes): importing
their modules compiles none, and a pattern compiled on use is ``re.compile``'s, built once a process."""

from __future__ import annotations

import copy
import importlib
import random
import re
import subprocess
import sys

from promptops.render import reading, regexes
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


def test_contains_token_finds_what_its_pattern_finds() -> None:
    # str methods in place of a pattern per token: the same answer on texts full of near misses
    alphabet = ["1", "0", ".", "1.0", "_", "a", "v", " ", "\u0661", "\u00b2", "-", "e+"]
    rng = random.Random(7)
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12))) for _ in range(3000)]
    for token in ("1", "0", "1.0", "1.0.0", "10", "-1", "1e+20"):
        number = re.compile(rf"(?<![\d.]){re.escape(token)}(?![\d]|\.\d)")
        word = re.compile(rf"(?<![\w.]){re.escape(token)}(?!\.?\d)(?!\w)")
        for text in texts:
            assert reading.contains_token(text, token, words=False) == (number.search(text) is not None), (token, text)
            assert reading.contains_token(text, token, words=True) == (word.search(text) is not None), (token, text)


def test_the_patterns_kept_are_bounded() -> None:
    # Patterns made from contracts' values go through ``compile``: a process reading many contracts keeps at
    # most the limit, not one pattern per contract it ever read.
    for n in range(regexes._LIMIT + 10):
        regexes.compile(rf"items{n}\.(\w+)")
    assert 0 < len(regexes._built) <= regexes._LIMIT
