"""Lint's and the renderer's patterns compile on first use, from code kept in lint's cache (promptops.render.regexes):
a pattern built from kept code equals ``re.compile``'s, a damaged entry is compiled afresh, a warm run compiles none."""

from __future__ import annotations

import importlib
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.fixture
def empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regexes, "_table", {})
    monkeypatch.setattr(regexes, "_learned", [False])
    monkeypatch.setattr(regexes, "_built", {})
    monkeypatch.setattr(regexes, "_keeping", [False])


def _sources() -> set[tuple[str, int]]:
    found = set()
    for name in MODULES:
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, regexes._Lazy):
                found.add(value._source)
    return found


@pytest.mark.usefixtures("empty")
def test_every_pattern_built_from_its_learned_code_equals_re_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    sources = _sources()
    assert len(sources) >= 35
    assert regexes.compile(r"kept by nobody \d") is not None and regexes.learned() is None  # not learned
    regexes.install(None)  # no table yet: learn
    for pattern, flags in sources:
        assert regexes.compile(pattern, flags) == re.compile(pattern, flags)
    table = regexes.learned()
    assert table is not None and set(table) == sources  # every one learned: its rebuilt code was equal
    assert regexes.learned() is None  # nothing new since
    monkeypatch.setattr(regexes, "_table", {})
    monkeypatch.setattr(regexes, "_built", {})  # a new process
    regexes.install(pickle.loads(pickle.dumps(table)))  # as the next run reads it
    for pattern, flags in sources:
        built = regexes.compile(pattern, flags)
        assert built == re.compile(pattern, flags)  # same text, flags and code
        assert built is not re.compile(pattern, flags)  # built from the table, not taken from re's cache
    assert regexes.learned() is None


@pytest.mark.usefixtures("empty")
def test_a_damaged_entry_or_table_is_compiled_afresh() -> None:
    damaged: regexes.Entry = (0, [1, 2, 3], 0, {}, ())
    regexes.install({("a+b", 0): damaged, ("c(d)", 0): "not an entry"})
    regexes.install("not a table")
    assert regexes.compile("a+b") == re.compile("a+b")
    assert regexes.compile("c(d)").match("cd")[1] == "d"  # type: ignore[index]
    table = regexes.learned()
    assert table is not None and table[("a+b", 0)] != damaged and isinstance(table[("c(d)", 0)], tuple)


def test_lint_keeps_the_patterns_in_its_cache_and_a_warm_run_compiles_none(project: Path, tmp_path: Path) -> None:
    contract = project / "versions/review-result/contract.yaml"
    contract.write_text(contract.read_text().replace('prompt_version: "1.0.0"', 'prompt_version: "1.0.1"'))
    probe = (
        "import re, sys; from pathlib import Path; from jinja2 import FileSystemBytecodeCache; "
        "from promptops.lint import lint; from promptops.render import regexes; compiled = []; "
        "original = re._compiler.compile; "
        "re._compiler.compile = lambda p, flags=0: compiled.append(p) or original(p, flags); "
        "report = lint(Path(sys.argv[1]), [], bytecode_cache=FileSystemBytecodeCache(sys.argv[2])); "
        "lazy = {v._source[0] for m in list(sys.modules.values()) for v in vars(m).values() "
        "if isinstance(v, regexes._Lazy)}; "
        "print([f'{f.code} {f.file}:{f.span.line}' for f in report.findings], sum(p in lazy for p in compiled))"
    )

    def run() -> tuple[str, int]:
        command = [sys.executable, "-c", probe, str(project), str(tmp_path)]
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=True)
        findings, count = done.stdout.strip().rsplit(" ", 1)
        return findings, int(count)

    cold, compiled = run()
    assert "PO001" in cold and compiled > 20  # the rules' patterns, compiled and learned
    assert len([p for p in tmp_path.iterdir() if p.name.startswith("promptops-regex-")]) == 1
    assert run() == (cold, 0)  # the same findings; every pattern built from its kept code


@pytest.mark.usefixtures("empty")
def test_patterns_are_kept_per_process_and_learned_up_to_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(regexes, "_LIMIT", 2)
    regexes.install({})
    first = regexes.compile(r"x\d+y")
    assert regexes.compile(r"x\d+y") is first  # built once a process, as re's own cache does
    for literal in ("1.0", "1.1", "2.0"):  # patterns made from a contract's values
        assert regexes.compile(rf"(?<![\w.]){re.escape(literal)}(?!\w)").search(f"v{literal}") is None
    table = regexes.learned()
    assert table is not None and len(table) == 2
