"""Reading segments: the line ranges workers read themselves hold exactly the lines the ingest process reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptops.store import logs
from promptops.store.logs import LineRange, LogError, Segment, SegmentReader, read_range


@pytest.mark.parametrize("tail", [b"\n", b"", b"\n\n"])
@pytest.mark.parametrize("per_range", [1, 2, 3, 7, 1000])
def test_line_ranges_hold_the_lines_and_numbers_that_lines_yields(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tail: bytes, per_range: int
) -> None:
    monkeypatch.setattr(logs, "_CHUNK", 16)  # lines and ranges cross many blocks
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"\n".join([b"first", b"", b"x" * 40, b"  ", b"{}", b"last"]) + tail)
    segment = Segment(path, path.stat().st_size)
    plain = SegmentReader(segment, "a.jsonl")
    expected = list(plain.lines())
    ranged = SegmentReader(segment, "a.jsonl")
    parts = list(ranged.line_ranges(per_range))
    got = [
        (number, bytes(line))
        for part in parts
        for number, line in enumerate(read_range(path, "a.jsonl", part), part.first_line)
    ]
    assert got == expected
    assert all(len(read_range(path, "a.jsonl", part)) == per_range for part in parts[:-1])
    assert (ranged.size, ranged.sha256) == (plain.size, plain.sha256) == (segment.size, logs.file_digest(path))


def test_a_range_the_file_no_longer_holds_is_a_log_error(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"one\ntwo\n")
    with pytest.raises(LogError, match=r"a\.jsonl: cannot read: the file shrank"):
        read_range(path, "a.jsonl", LineRange(4, 10, 2))
    with pytest.raises(LogError, match=r"b\.jsonl: cannot read: "):
        read_range(tmp_path / "b.jsonl", "b.jsonl", LineRange(0, 4, 1))
