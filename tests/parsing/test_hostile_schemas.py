"""Schemas a user can write that once hung, crashed or split the parser's builds, through the real CLI
(``contract new``, ``validate``, ``ingest``), and the parser's linear work counted as its input doubles.

Commands that used to hang run in a subprocess with a hang guard (minutes, where they now take about a second);
the guard is not a timing assertion: on the old code these inputs ran for hours.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from promptops import Parser
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.parsing import generators
from tests.parsing.invariants import _summary

HANG_GUARD = 600  # seconds: a guard against hangs only (each command here finishes in seconds)
PURE = (
    "import sys; sys.modules['promptops.parsing._checks'] = None; import promptops.cli; sys.exit(promptops.cli.run())"
)
BUILDS = {"c": ["-m", "promptops"], "pure": ["-c", PURE]}


def _schema(finding_id: Any, **extra: Any) -> dict[str, Any]:
    item = {
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "file", "line", "message"],
        "properties": {
            "id": finding_id,
            "file": {"type": "string"},
            "line": {"type": "integer"},
            "message": {"type": "string"},
            **extra,
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["schema_version", "prompt_version", "findings"],
        "properties": {
            "schema_version": {"type": "string"},
            "prompt_version": {"type": "string"},
            "findings": {"type": "array", "items": item},
        },
    }


def _finding(**fields: Any) -> dict[str, Any]:
    return {"id": "F1", "file": "a.py", "line": 1, "message": "m", **fields}


def _run(
    root: Path, *args: str, build: str = "c", stdin: str | None = None, guard: float = HANG_GUARD
) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PROMPTOPS_NO_TEMPLATE_CACHE": "1"}
    done = subprocess.run(
        [sys.executable, *BUILDS[build], "--root", str(root), *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env,
        timeout=guard,
        check=False,
    )
    return done.returncode, done.stdout, done.stderr


def _project(tmp_path: Path, schema: Any, run: Callable[..., tuple[int, str, str]]) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
    assert run(root, "init")[0] == 0
    code, _, err = run(root, "contract", "new", "hostile", "--schema", str(root / "schema.json"))
    assert (code, err) == (0, "")
    return root


def _answer(*findings: dict[str, Any]) -> str:
    return json.dumps({"schema_version": "1.0", "prompt_version": "1.0.0", "findings": list(findings)})


def _validate(root: Path, answer: str, build: str = "c") -> tuple[int, str, str]:
    (root / "answer.json").write_text(answer, encoding="utf-8")
    return _run(
        root, "validate", "--contract", "hostile", "--changed-file", "a.py", str(root / "answer.json"), build=build
    )


def _ingest(root: Path, answer: str, build: str = "c") -> tuple[int, str, str]:
    record = {
        "response_id": "r1",
        "ts": "2026-01-01T00:00:00Z",
        "contract": "hostile",
        "rollout_id": None,
        "arm": None,
        "unit": None,
        "changed_files": ["a.py"],
        "raw": answer,
    }
    (root / f"log-{build}.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    store = str(root / f"store-{build}.duckdb")
    return _run(root, "ingest", "--store", store, str(root / f"log-{build}.jsonl"), build=build)


# ---- item 6: patterns that backtrack, patternProperties, uniqueItems ---------------------------------------------


def test_a_backtracking_pattern_answers_at_once(tmp_path: Path) -> None:
    root = _project(tmp_path, _schema({"type": "string", "pattern": "^(a+)+$"}), _run)
    answer = _answer(_finding(id="a" * 40 + "!"), _finding(id="aaa", line=2))
    code, out, err = _validate(root, answer)
    assert (code, err) == (0, "")
    assert "1 of 2 findings kept" in out
    assert "does not match the pattern '^(a+)+$'" in out
    code, out, err = _ingest(root, answer)
    assert (code, err) == (0, "")
    assert "1 response stored" in out


def test_a_backtracking_pattern_property_answers_at_once(tmp_path: Path) -> None:
    names = {"type": "object", "patternProperties": {"^(a+)+$": {"type": "integer"}}, "additionalProperties": False}
    root = _project(tmp_path, _schema({"type": "string"}, names=names), _run)
    answer = _answer(_finding(names={"a" * 40 + "!": 1}), _finding(id="F2", names={"aaa": 1}))
    code, out, err = _validate(root, answer)
    assert (code, err) == (0, "")
    assert "1 of 2 findings kept" in out
    assert "do not match any of the regexes" in out or "does not match any of the regexes" in out


def test_long_unique_items_arrays_answer_at_once(tmp_path: Path) -> None:
    tags = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}
    root = _project(tmp_path, _schema({"type": "string"}, tags=tags), _run)
    answer = _answer(_finding(tags=list(range(100_000))), _finding(id="F2", tags=[*range(100_000), 7]))
    code, out, err = _validate(root, answer)
    assert (code, err) == (0, "")
    assert "1 of 2 findings kept" in out
    assert "items are not unique" in out


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ("(?i)^f1$", "inline flags"),
        ("^(a)\\1$", "backreferences"),
        ("^(?=a)a$", "lookaround"),
        ("^(?<!b)a$", "lookaround"),
        ("^a*+$", "possessive"),
        ("^a\\Z", "not an ECMA-262 escape"),
    ],
)
def test_patterns_the_engine_cannot_guarantee_are_refused_at_contract_new(
    tmp_path: Path, cli: Cli, pattern: str, reason: str
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(_schema({"type": "string", "pattern": pattern})), encoding="utf-8")
    code, _, err = cli(root, "contract", "new", "hostile", "--schema", str(root / "schema.json"))
    assert code == 3
    assert err.count("\n") == 1
    assert "versions/hostile/schemas/1.0.json: properties/findings/items/properties/id/pattern:" in err
    assert reason in err
    assert not (root / "versions" / "hostile").exists()


def test_patterns_have_ecma_262_semantics(tmp_path: Path, cli: Cli) -> None:
    """\\d is ASCII: Arabic-Indic digits do not match it."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(_schema({"type": "string", "pattern": "^F\\d+$"})), "utf-8")
    assert cli(root, "contract", "new", "hostile", "--schema", str(root / "schema.json"))[0] == 0
    answer = _answer(_finding(id="F\u0661\u0662"), _finding(id="F\u0663", line=2), _finding(id="F12", line=3))
    (root / "answer.json").write_text(answer, encoding="utf-8")
    code, out, _ = cli(root, "validate", "--contract", "hostile", "--changed-file", "a.py", str(root / "answer.json"))
    assert code == 0
    assert "1 of 3 findings kept" in out


@pytest.mark.parametrize(
    ("source", "text", "matches"),
    [
        ("^\\d+$", "123", True),
        ("^\\d+$", "\u0661", False),
        ("^a$", "a\n", False),
        ("^.$", "\u2028", False),
        ("^.$", "\u0085", True),
        ("^\\s$", "\u00a0", True),
        ("^\\s$", "\ufeff", True),
        ("^\\s$", "\u0085", False),
        ("^\\w$", "é", False),
        ("^[]$", "", False),
        ("^[^]$", "\n", True),
        ("^\\u{1F600}$", "\U0001f600", True),
        ("^\\uD83D\\uDE00$", "\U0001f600", True),
        ("^[\\b]$", "\b", True),
        ("^[[:a]+$", "[:a", True),
        ("^a{2}$", "aa", True),
        ("^a{$", "a{", True),
        ("^(?<name>x)\\/$", "x/", True),
        ("^.$", "\ud800", True),  # a lone surrogate in the text is matched as U+FFFD
    ],
)
def test_translation_keeps_ecma_262_meaning(source: str, text: str, matches: bool) -> None:
    from promptops.core.patterns import compile_ecma

    assert compile_ecma(source).search(text) is matches


@pytest.mark.parametrize("source", ["(a)\\1", "(?=a)", "(?i)a", "a{2}+", "\\Z", "[\\S]", "a{1001}", "\\uD800"])
def test_untranslatable_patterns_raise(source: str) -> None:
    from promptops.core.patterns import PatternError, compile_ecma

    with pytest.raises(PatternError):
        compile_ecma(source)


# ---- item 8: bounds outside int64, huge lengths, huge enums, deep schemas ---------------------------------------

_BOUNDS = {
    "maximum 2**63": {"n": {"type": "integer", "maximum": 2**63}},
    "minimum -2**70": {"n": {"type": "integer", "minimum": -(2**70)}},
    "maximum 10**400": {"n": {"type": "number", "maximum": 10**400}},
    "maxLength 2**63": {"s": {"type": "string", "maxLength": 2**63}},
    "minLength 10**30": {"s": {"type": "string", "minLength": 10**30}},
    "maxItems 2**64": {"a": {"type": "array", "items": {"type": "integer"}, "maxItems": 2**64}},
}


@pytest.mark.slow  # a project and both builds per bound
@pytest.mark.parametrize("extra", list(_BOUNDS.values()), ids=list(_BOUNDS))
def test_bounds_outside_int64_are_judged_alike_by_both_builds(tmp_path: Path, extra: dict[str, Any]) -> None:
    root = _project(tmp_path, _schema({"type": "string"}, **extra), _run)
    answer = _answer(_finding(n=5, s="x", a=[1]), _finding(id="F2", n=2**64, s="y", a=[2]))
    outcomes = {build: (_validate(root, answer, build), _ingest(root, answer, build)) for build in BUILDS}
    assert str(outcomes["c"]).replace("store-c.", "store.") == str(outcomes["pure"]).replace("store-pure.", "store.")
    (validated, ingested) = outcomes["c"]
    assert validated[0] == 0 and validated[2] == ""
    assert ingested[0] == 0 and "1 response stored" in ingested[1]


@pytest.mark.slow  # a 120,000-value enum through the CLI
def test_a_huge_enum_makes_a_contract_at_once(tmp_path: Path) -> None:
    """120,000 values (the schema file stays under its 4 MiB limit): seconds now, minutes when it was quadratic,
    so this guard is tighter than the others."""
    codes = [f"C{i}" for i in range(120_000)]

    def run(root: Path, *args: str) -> tuple[int, str, str]:
        return _run(root, *args, guard=180)

    root = _project(tmp_path, _schema({"type": "string"}, code={"type": "string", "enum": codes}), run)
    code, out, err = _validate(root, _answer(_finding(code="C119999"), _finding(id="F2", code="C120000")))
    assert (code, err) == (0, "")
    assert "1 of 2 findings kept" in out


def _nested(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        schema = {"type": "array", "items": schema}
    return schema


def test_a_schema_nested_too_deep_is_one_line(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(_schema({"type": "string"}, deep=_nested(200))), "utf-8")
    code, _, err = cli(root, "contract", "new", "hostile", "--schema", str(root / "schema.json"))
    assert code == 3
    assert err.count("\n") == 1
    assert "versions/hostile/schemas/1.0.json: nested more than 64 levels deep at properties/findings" in err
    assert "internal error" not in err


def test_a_schema_within_the_depth_limit_works(tmp_path: Path, cli: Cli) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "schema.json").write_text(json.dumps(_schema({"type": "string"}, deep=_nested(25))), "utf-8")
    assert cli(root, "contract", "new", "hostile", "--schema", str(root / "schema.json"))[0] == 0
    value: Any = "x"
    for _ in range(25):
        value = [value]
    (root / "answer.json").write_text(_answer(_finding(deep=value)), encoding="utf-8")
    code, out, _ = cli(root, "validate", "--contract", "hostile", "--changed-file", "a.py", str(root / "answer.json"))
    assert code == 0
    assert "1 of 1 findings kept" in out


# ---- docs/parser.md: every step is linear in the input, counted (not timed) ----------------------------------


@contextmanager
def _counting() -> Iterator[list[int]]:
    """Counts the Python and C function calls made while the block runs: work, as the input grows."""
    calls = [0]

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event in ("call", "c_call"):
            calls[0] += 1

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def _work(parser: Parser, answer: str) -> int:
    warm = parser.parse(answer, generators.CHANGED)  # warm the caches (compiled validators, judged versions)
    assert warm.accepted and warm.findings_seen > 0, warm.reason  # read to the end, not refused at a limit
    with _counting() as calls:
        parser.parse(answer, generators.CHANGED)
    return calls[0]


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return {c.name: c for c in generators.hostile_contracts(tmp_path_factory.mktemp("hostile"))}


def _hostile_answer(size: int) -> str:
    finding = {
        "id": "F1",
        "severity": "low",
        "category": "style",
        "title": "t",
        "file": generators.CHANGED[0],
        "line": 1,
        "message": "m",
    }
    # numbers and brackets, few quotes: the answer stays under the parser's token limit as it grows
    findings = [
        {**finding, "id": f"F{i}", "set": [[j, [j]] for j in range(size)], "ints": [*range(size)]} for i in range(1, 4)
    ]
    findings += [{**finding, "id": f"G{i}", "ints": [1, 1.0]} for i in range(size // 10)]
    return json.dumps({"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings})


def _pattern_answer(size: int) -> str:
    finding = {
        "severity": "low",
        "category": "style",
        "title": "t",
        "file": generators.CHANGED[0],
        "line": 1,
        "message": "m",
        "tag": "a" * size + "!",
        "tags": ["a" * size, "a" * size + "b"],
        "digits": "1" * size,
    }
    findings = [{**finding, "id": f"F{i}"} for i in range(size // 40)]
    return json.dumps({"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings})


def _enum_answer(size: int) -> str:
    finding = json.loads(_pattern_answer(40))["findings"][0]
    for name in ("tag", "tags", "digits"):
        del finding[name]
    findings = [{**finding, "id": f"F{i}", "code": f"C{i * 7}" if i % 2 else f"X{i}"} for i in range(size // 10)]
    return json.dumps({"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings})


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast", "diagnostic"])
@pytest.mark.parametrize(
    ("contract", "answer"),
    [("hostile-unique", _hostile_answer), ("hostile-patterns", _pattern_answer), ("hostile-enum", _enum_answer)],
)
def test_parsing_work_grows_linearly(
    hostile: dict[str, Any], contract: str, answer: Callable[[int], str], fast_path: bool
) -> None:
    """Doubling the input at most doubles the calls made (plus a little): no step is quadratic."""
    parser = Parser(hostile[contract], fast_path=fast_path)
    small, large = _work(parser, answer(2000)), _work(parser, answer(4000))
    assert large <= 2.2 * small, (small, large)


# ---- the fuzz slice over hostile schemas: both paths, both builds ------------------------------------------------

_SLICE = 300  # inputs per hostile contract; benchmarks/fuzz_parse.py runs hundreds of thousands


def _summaries(contracts: list[Any], fast_path: bool, seed: str) -> list[str]:
    out = []
    for contract in contracts:
        parser = Parser(contract, fast_path=fast_path)
        for raw, changed, request in generators.inputs(random.Random(f"{seed}-{contract.name}"), contract, _SLICE):
            versions = {} if request is None else {"schema_version": request[0], "prompt_version": request[1]}
            out.append(_summary(parser.parse(raw, changed, **versions)))
    return out


def test_hostile_schemas_parse_alike_on_both_paths(hostile: dict[str, Any]) -> None:
    contracts = list(hostile.values())
    assert _summaries(contracts, True, "hostile") == _summaries(contracts, False, "hostile")


_PURE_SLICE = """
import json, sys
from pathlib import Path
sys.modules["promptops.parsing._checks"] = None  # as if it had not been built: the import fails
from promptops.parsing import native
from tests.parsing import generators
from tests.parsing.test_hostile_schemas import _summaries
assert native.checks is None
print(json.dumps(_summaries(generators.hostile_contracts(Path(sys.argv[1])), True, "pure")))
"""


@pytest.mark.slow  # a build without the C extension
def test_hostile_schemas_parse_alike_in_both_builds(tmp_path: Path, hostile: dict[str, Any]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PURE_SLICE, str(tmp_path)], cwd=REPO_ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout) == _summaries(list(hostile.values()), True, "pure")


def test_compiled_patterns_pickle(hostile: dict[str, Any]) -> None:
    """Contracts travel by pickle (lint's cache, ingest workers): their RE2 patterns are compiled again."""
    import pickle

    contract = hostile["hostile-patterns"]
    copied = pickle.loads(pickle.dumps(contract))
    rule = copied.shape(copied.default_policy.schema_floor).item.properties["tag"]
    assert rule == contract.shape(contract.default_policy.schema_floor).item.properties["tag"]
    assert rule.pattern is not None and rule.pattern.search("aaa") and not rule.pattern.search("a" * 40 + "!")


def test_pickled_pattern_matches_as_compiled_and_loads_re2_only_when_it_first_searches() -> None:
    import pickle
    import subprocess
    import sys

    from promptops.core.patterns import compile_ecma

    data = pickle.dumps(compile_ecma(r"^[a-z]+\.py$"))
    probe = (
        "import pickle, sys; pattern = pickle.loads(sys.stdin.buffer.read()); loaded = 're2' in sys.modules; "
        "print(loaded, pattern.search('ab.py'), pattern.search('ab.pyc'), pattern.search('\\ud800.py'), "
        "'re2' in sys.modules, pattern == pickle.loads(pickle.dumps(pattern)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], input=data, capture_output=True, check=True)
    assert done.stdout.decode().split() == ["False", "True", "False", "False", "True", "True"]
