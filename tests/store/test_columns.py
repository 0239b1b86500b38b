"""The C column builder (store/_columns.c) against its reference, python_diagnostics_table: equal tables, or
the same failure, for any Diagnostic list; anything unusual is declined and the reference decides."""

from __future__ import annotations

import sys
import tracemalloc
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from promptops import Code, ParserPolicy, PromptVersion, SchemaVersion
from promptops.parsing import Diagnostic, ParseOutcome
from promptops.store import Recorder, Store, batch
from promptops.store.batch import RESPONSE_SCHEMA, native_diagnostics_table, python_diagnostics_table

pytestmark = pytest.mark.skipif(batch.native_columns is None, reason="the C column builder is not built")

I32_MIN, I32_MAX = -(2**31), 2**31 - 1
START = datetime(2025, 5, 1)


def responses(count: int) -> pa.Table:
    ids = pa.array([f"r{i}" for i in range(count)], type=pa.string())
    stamps = pa.array([START + timedelta(seconds=i) for i in range(count)], type=RESPONSE_SCHEMA.field("ts").type)
    return pa.Table.from_arrays([ids, stamps], names=["response_id", "ts"])


def outcome(build: Callable[[], pa.Table]) -> tuple[str, Any]:
    try:
        return "table", build()
    except Exception as error:  # the reference's failure, whichever it is, must be the native path's too
        return "error", type(error)


def same(
    diagnostics: list[Any],
    rows: list[Any] | None = None,
    seqs: list[Any] | None = None,
    slices: list[Any] | None = None,
    *,
    handled: bool | None = None,
) -> pa.Table | None:
    """diagnostics_table (native first) and the reference agree; ``handled``: whether C must take the batch."""
    count = len(diagnostics)
    rows = list(range(count)) if rows is None else rows
    seqs = [0] * count if seqs is None else seqs
    slices = [i % 3 for i in range(count)] if slices is None else slices
    table = responses(max(count, 1))
    if handled is not None:
        assert (native_diagnostics_table(diagnostics, rows, seqs, slices, table) is not None) is handled
    got = outcome(lambda: batch.diagnostics_table(diagnostics, rows, seqs, slices, table))
    expected = outcome(lambda: python_diagnostics_table(diagnostics, rows, seqs, slices, table))
    if expected[0] == "error":
        assert got == expected
        return None
    assert got[0] == "table", got
    assert got[1].schema.equals(expected[1].schema, check_metadata=True)
    assert got[1].equals(expected[1]), (got[1].to_pylist(), expected[1].to_pylist())
    assert got[1].to_pylist() == expected[1].to_pylist()
    got[1].validate(full=True)  # offsets, bitmaps and UTF-8 as Arrow requires
    return got[1]


def diagnostics_lists(texts: st.SearchStrategy[str]) -> st.SearchStrategy[list[Diagnostic]]:
    maybe_texts = st.none() | texts
    return st.lists(
        st.builds(
            Diagnostic,
            code=st.sampled_from(Code),
            level=st.sampled_from(["error", "warning", "info"]) | texts,
            path=maybe_texts,
            message=texts,
            finding_index=st.none() | st.integers(I32_MIN, I32_MAX) | st.sampled_from([I32_MIN, I32_MAX, 0, -1]),
            finding_id=maybe_texts,
        ),
        max_size=40,
    )


# ASCII, the rest of the BMP and astral characters; no lone surrogates (they have no UTF-8 form)
encodable = st.text(max_size=12) | st.text(st.characters(min_codepoint=0x80, exclude_categories=["Cs"]), max_size=6)


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
@settings(max_examples=300, deadline=None)
@given(diagnostics_lists(encodable), st.data())
def test_native_table_equals_the_reference(diagnostics: list[Diagnostic], data: st.DataObject) -> None:
    count = len(diagnostics)
    ints = st.lists(st.integers(I32_MIN, I32_MAX), min_size=count, max_size=count)
    rows = data.draw(st.lists(st.integers(0, max(count - 1, 0)), min_size=count, max_size=count))
    same(diagnostics, rows, data.draw(ints), data.draw(ints), handled=True)


@settings(max_examples=150, deadline=None)
@given(diagnostics_lists(st.text(st.characters(min_codepoint=0xD000, max_codepoint=0xE000), max_size=4)))
def test_lone_surrogates_anywhere_give_the_references_outcome(diagnostics: list[Diagnostic]) -> None:
    same(diagnostics)


def test_every_code_nulls_everywhere_and_late_first_nulls() -> None:
    diagnostics = [Diagnostic(code, "warning", f"findings[{i}]", "é 𝄞 ok", i, f"id{i}") for i, code in enumerate(Code)]
    # The validity bitmaps start at a column's first null: before, at and after a byte boundary, and at the end.
    for at in (0, 7, 8, 9, 17, len(diagnostics) - 1):
        mixed = [*diagnostics]
        mixed[at] = Diagnostic(Code.TRUNCATED, "info", None, "", None, None)
        table = same(mixed, handled=True)
        assert table is not None and table.column("path").null_count == 1
    everything_null = [Diagnostic(Code.TOO_DEEP, "error", None, "", None, None)] * 20
    table = same(everything_null, handled=True)
    assert table is not None and table.column("finding_index").null_count == 20


def test_empty_list() -> None:
    table = same([], handled=True)
    assert table is not None and table.num_rows == 0


@pytest.mark.parametrize("index", [I32_MAX + 1, I32_MIN - 1, 2**63, -(2**64), 2**100, True, 1.5, "3"])
def test_finding_index_out_of_int32_or_not_an_int_is_declined(index: Any) -> None:
    same(
        [
            Diagnostic(Code.INVALID_LINE, "warning", "p", "m", 1),
            Diagnostic(Code.INVALID_LINE, "warning", "p", "m", index),
        ],
        handled=False,
    )


@pytest.mark.parametrize("column", ["rows", "seqs", "slices"])
@pytest.mark.parametrize("value", [I32_MAX + 1, I32_MIN - 1, 2**70, None, False, 2.0])
def test_odd_row_numbers_are_declined(column: str, value: Any) -> None:
    diagnostics = [Diagnostic(Code.TRUNCATED, "info", None, "m")] * 3
    ints: dict[str, list[Any]] = {"rows": [0, 1, 2], "seqs": [0, 1, 2], "slices": [0, 0, 1]}
    ints[column][1] = value
    same(diagnostics, ints["rows"], ints["seqs"], ints["slices"], handled=False)


def test_row_out_of_the_responses_fails_alike() -> None:
    diagnostics = [Diagnostic(Code.TRUNCATED, "info", None, "m")] * 2
    assert same(diagnostics, rows=[0, 5]) is None  # both raise, the same exception type


@pytest.mark.parametrize("field", ["code", "level", "path", "message", "finding_id"])
@pytest.mark.parametrize("text", ["\ud800", "ok \udfff", "\udc80abc"])
def test_lone_surrogates_are_declined(field: str, text: str) -> None:
    odd = Diagnostic(Code.TRUNCATED, "info", "p", "m", 2, "id")
    setattr(odd, field, text)
    same([Diagnostic(Code.TRUNCATED, "info", None, "ok")] * 9 + [odd], handled=False)


class Text(str):
    __slots__ = ()


@pytest.mark.parametrize("field", ["code", "level", "path", "message", "finding_id"])
@pytest.mark.parametrize("value", [Text("sub"), b"bytes", 3, 2.5, ["m"], Code.TOO_DEEP])
def test_values_other_than_str_code_and_none(field: str, value: Any) -> None:
    odd = Diagnostic(Code.TRUNCATED, "info", "p", "m", 2, "id")
    setattr(odd, field, value)
    same([Diagnostic(Code.TRUNCATED, "info", None, "ok"), odd], handled=value is Code.TOO_DEEP)


class Noted(Diagnostic):
    __slots__ = ()


def test_foreign_objects_are_declined() -> None:
    plain = Diagnostic(Code.TRUNCATED, "info", None, "ok", 1, "a")
    fields = {"code": Code.TOO_DEEP, "level": "error", "path": None, "message": "m", "finding_index": 2}
    lookalike = SimpleNamespace(**fields, finding_id="b")
    subclass = Noted(Code.TOO_DEEP, "error", None, "m", 2, "b")
    for foreign in (lookalike, subclass):
        same([plain, foreign, plain], handled=False)
    same([plain, "not a diagnostic"], handled=False)
    same([plain, Diagnostic.__new__(Diagnostic)], handled=False)  # unset slots: AttributeError from both
    same((plain,), handled=False)  # type: ignore[arg-type]


def test_no_references_or_memory_kept() -> None:
    message, path = "a message of its own " + str(object()), "findings[0].path" + str(object())
    good = [Diagnostic(Code.INVALID_FIELD, "warning", path, message, 0, None) for _ in range(50)]
    declined = [*good, Diagnostic(Code.INVALID_FIELD, "warning", path, message, 2**40, None)]
    args = ([0] * 50, list(range(50)), [0] * 50)
    before = sys.getrefcount(message), sys.getrefcount(path), sys.getrefcount(good[0])
    table = responses(1)
    for diagnostics in (good, declined, good * 2):
        zeros = [0] * len(diagnostics)
        native_diagnostics_table(diagnostics, zeros, zeros, zeros, table)
    del diagnostics
    assert (sys.getrefcount(message), sys.getrefcount(path), sys.getrefcount(good[0])) == before
    tracemalloc.start()
    try:
        for _ in range(3):
            native_diagnostics_table(declined, [0] * 51, [0] * 51, [0] * 51, table)
        start = tracemalloc.get_traced_memory()[0]
        for _ in range(300):
            native_diagnostics_table(declined, [0] * 51, [0] * 51, [0] * 51, table)
            native_diagnostics_table(good, *args, table)
        assert tracemalloc.get_traced_memory()[0] - start < 50_000
    finally:
        tracemalloc.stop()


def test_round_trip_through_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Recorded through the store into DuckDB files, with and without the extension: the same rows."""
    diagnostics = [
        Diagnostic(
            code,
            ("error", "warning", "info")[i % 3],
            None if i % 4 else f"findings[{i}]",
            f"é{i} 𝄞",
            i % 5 or None,
            None if i % 2 else f"id-{i}",
        )
        for i, code in enumerate([*Code, *Code])
    ]
    policy = ParserPolicy(SchemaVersion(1, 0), PromptVersion(1, 0, 0))
    stored = []
    for name, native in (("native", batch.native_columns), ("python", None)):
        monkeypatch.setattr(batch, "native_columns", native)
        with Store.open(tmp_path / f"{name}.duckdb") as store:
            with Recorder(store, batch_size=7) as recorder:
                for i in range(0, len(diagnostics), 3):
                    parsed = ParseOutcome(
                        accepted=i % 2 == 0,
                        reason=None if i % 2 == 0 else Code.INVALID_JSON,
                        diagnostics=diagnostics[i : i + 3],
                    )
                    recorder.record(
                        parsed,
                        response_id=f"r{i}",
                        ts=START.replace(tzinfo=UTC),
                        contract="review-result",
                        policy=policy,
                        arm="candidate",
                    )
            stored.append(
                store.connection.execute(
                    "SELECT * EXCLUDE (batch_id) FROM diagnostics ORDER BY response_id, seq"
                ).fetchall()
            )
    assert stored[0] == stored[1] and len(stored[0]) == len(diagnostics)
