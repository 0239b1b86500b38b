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


def test_a_segment_is_read_ahead_on_a_thread_a_few_blocks_at_most(tmp_path: Path) -> None:
    import threading
    import time

    path = tmp_path / "big.jsonl"
    line = b'{"response_id": "x"}'.ljust(999) + b"\n"
    path.write_bytes(line * 20_000)  # 20 MB: many blocks
    reader = SegmentReader(Segment(path, path.stat().st_size), "big.jsonl")
    lines = reader.lines()
    assert next(lines) == (1, line[:-1])
    ahead = logs.READ_AHEAD * (1 << 20)
    deadline = time.monotonic() + 30
    while reader.position < ahead and time.monotonic() < deadline:  # the reader thread fills its queue
        time.sleep(0.01)
    assert ahead <= reader.position <= ahead + 2 * (1 << 20), "read ahead of the consumer, but only a few blocks"
    lines.close()  # a consumer that stops early stops the reader thread
    assert not [t for t in threading.enumerate() if t.name == "promptops-log-reader"]
    assert reader.position < path.stat().st_size
