"""The C check of plain findings (``_plain.c``) against its reference, ``Findings._finding`` (and the C
duplicate-id test, ``_ids.c``, against ``_ids_repeat``).

Whenever the C check answers (anything but None, "not handled"), its answer must be the reference's exactly:
the same Problem (rank, code, path, message), or the same kept finding in the same member order with the same
Coercions. The parser-level twins tests compare whole outcomes; these compare single findings, including
values the corpus never holds.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from promptops import ChangedFiles, Contract, Parser, SchemaVersion
from promptops.parsing import plaincheck
from promptops.parsing.fields import Coercion, Problem
from promptops.parsing.findings import Findings, _ids_repeat
from tests.helpers import CHANGED, finding
from tests.parsing.test_properties import FIELDS, ODD_VALUES, findings, json_values

pytestmark = pytest.mark.skipif(
    plaincheck.native_check is None or plaincheck.native_repeats is None, reason="the C helpers are not built"
)
SETTINGS = settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CHANGED_VARIANTS = st.sampled_from(
    [CHANGED, [*CHANGED, "src\\auth\\login.py"], ["./src/api/users.py", "src/auth/login.py"], []]
)
MORE_VALUES = st.sampled_from(
    [
        "\u00a0High\u2003",
        " critical",
        "low\n",
        "\t",
        "+5",
        "-0",
        "007",
        "5.00",
        "5.",
        "5.0x",
        " 12 ",
        "12.5",
        "x" * 41,
        " " + "y" * 45 + " ",
        "caf\u00e9 \u00e9",
        "\U0001f600",
        "CWE-89",
        "CWE-0",
        "src\\api\\users.py ",
        "a\\b\\c.py",
        2.0,
        1e300,
        -(10**30),
        10**30,
    ]
)
VALUES = ODD_VALUES | MORE_VALUES | json_values


@st.composite
def odd_findings(draw: st.DrawFn) -> Any:
    item = draw(findings())
    if type(item) is not dict:
        return item
    for _ in range(draw(st.integers(0, 3))):
        field = draw(st.sampled_from([*FIELDS, "cwe", "odd key", 'q"uote']))
        item[field] = draw(VALUES)
    if draw(st.booleans()):
        keys = list(item)
        item = {k: item[k] for k in draw(st.permutations(keys))}
    return item


_CHECKS: dict[int, Findings] = {}


def _checks(contract: Contract) -> Findings:
    checks = _CHECKS.get(id(contract))
    if checks is None:
        checks = _CHECKS[id(contract)] = Parser(contract)._validator._findings
    return checks


def _compare(checks: Findings, item: Any, version: SchemaVersion, changed: list[str]) -> bool:
    """True when the C check answered (and agreed)."""
    shape = checks._contract.shape(version)
    spec = checks.compiled(shape).plain
    assert spec is not None and plaincheck.native_check is not None
    files = ChangedFiles(changed)
    base = "findings[3]"
    native = plaincheck.native_check(copy.deepcopy(item), spec, base, files)
    if native is None:
        return False
    applied: list[Coercion] = []
    reference = checks._finding(copy.deepcopy(item), base, shape, False, files, applied, [])
    if isinstance(reference, Problem):
        assert isinstance(native, Problem) and tuple(native) == tuple(reference), (item, native, reference)
    else:
        assert type(native) is tuple, (item, native, reference)
        kept, native_applied = native
        assert kept == reference and list(kept) == list(reference), item
        assert native_applied == applied and all(type(c) is Coercion for c in native_applied), item
    return True


@SETTINGS
@given(odd_findings(), CHANGED_VARIANTS, st.sampled_from([SchemaVersion(1, 0), SchemaVersion(1, 1)]))
def test_native_check_matches_finding(contract: Contract, item: Any, changed: list[str], version: Any) -> None:
    if type(item) is not dict:
        return
    _compare(_checks(contract), item, version, changed)


def test_native_check_handles_the_usual_defects(contract: Contract) -> None:
    """Guard against the C check silently declining (the property test would then pass vacuously)."""
    checks = _checks(contract)
    defects: list[dict[str, Any]] = [
        finding(severity="High"),
        finding(category="bug"),
        finding(line="12"),
        finding(line=" 12.00 "),
        finding(title="  padded "),
        finding(file="src\\api\\users.py"),
        finding(file="docs/unrelated.md"),
        finding(line=50, end_line=10),
        finding(line=0),
        finding(suggestion=None),
        finding(message=""),
        finding(id=7),
        finding(fix_hint="x"),
        finding(title="t" * 60),
    ]
    missing = finding()
    del missing["message"]
    defects.append(missing)
    for item in defects:
        assert _compare(checks, item, SchemaVersion(1, 0), CHANGED), item
    assert not _compare(checks, finding(line=12.0), SchemaVersion(1, 0), CHANGED)  # floats: left to Python


def test_no_spec_without_speedups(contract: Contract) -> None:
    checks = Parser(contract, speedups=False)._validator._findings
    assert checks._plain_check is None


ID_VALUES = st.sampled_from(["F1", "F2", "f1", "F1 ", "", "\u00e9", "\U0001f600", None])


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 90), ID_VALUES), max_size=80))
def test_native_repeats_matches_ids_repeat(kept_ids: list[tuple[int, str | None]]) -> None:
    assert plaincheck.native_repeats is not None
    assert plaincheck.native_repeats(kept_ids) is _ids_repeat(kept_ids), kept_ids


@pytest.mark.parametrize(
    "member",
    [
        '"title": "  padded ", "title": "again"',  # a repeat in a finding that fails the scan anyway
        '"title": "  a:b ", "title": "c"',
        '"title": " \\u003a ", "rule_id": "R1"',  # an escaped colon: the duplicate search decides
        '"title": " x ", "rule_id": "R1"',
        '"title": " x ", "cwe": "CWE-89"',
    ],
)
def test_findings_that_fail_the_scan_agree_on_repeats(contract: Contract, member: str) -> None:
    """The itemwise reader's colon test stands in for the duplicate search: all paths must agree."""
    from tests.parsing.invariants import _summary

    good = '{"id": "F1", "severity": "low", "category": "test", "file": "src/api/users.py", "line": 3, '
    bad = good.replace("F1", "F2") + '"message": "m", ' + member + "}"
    raw = (
        '{"schema_version": "1.0", "prompt_version": "1.0.0", "findings": ['
        + good
        + '"title": "t", "message": "m"}, '
        + bad
        + "]}"
    )
    changed = ChangedFiles(CHANGED)
    parsers = Parser(contract), Parser(contract, speedups=False), Parser(contract, fast_path=False)
    summaries = [_summary(parser.parse(raw.encode(), changed)) for parser in parsers]
    assert summaries[0] == summaries[2] and summaries[1] == summaries[2], summaries


MARKS = st.lists(st.sampled_from(["F1", "F2", None, "UNSET"]), max_size=30)


@SETTINGS
@given(MARKS, st.integers(0, 31))
def test_native_keep_marked_matches_keep_marked(names: list[str | None], start: int) -> None:
    from msgspec import UNSET

    from promptops.parsing.findings import _keep_marked

    marks: list[Any] = [UNSET if name == "UNSET" else name for name in names]
    items = [object() for _ in marks]
    start = min(start, len(items))
    native = plaincheck.native_keep_marked
    assert native is not None
    prefix = [object()]
    got: tuple[list[Any], list[Any]] = (list(prefix), [(-1, "x")])
    want: tuple[list[Any], list[Any]] = (list(prefix), [(-1, "x")])
    got_index = native(items, marks, UNSET, *got, start)
    want_index = _keep_marked(items, marks, UNSET, *want, start)
    assert got_index == want_index and got == want, (marks, start)


def test_native_keep_marked_refuses_bad_arguments() -> None:
    native = plaincheck.native_keep_marked
    assert native is not None
    with pytest.raises(ValueError, match="one mark per item"):
        native([1, 2], ["a"], None, [], [], 0)
    with pytest.raises(ValueError, match="start within"):
        native([1], ["a"], None, [], [], 2)
    with pytest.raises(TypeError, match="keep_marked"):
        native((1,), ("a",), None, [], [], 0)
