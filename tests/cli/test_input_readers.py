"""The readers of a user's files outside the store: validate (a response, a batch), --changed-files-from,
render --diff and merge's reviewer outputs. Undecodable bytes and endless or special files end in one line
naming the file (and line), exit 3, never an internal error; a batch goes on past a bad record."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Cli
from tests.helpers import CHANGED, response, text


def _record(rid: str, **overrides: object) -> bytes:
    return json.dumps({"response_id": rid, "raw": text(response()), "changed_files": CHANGED, **overrides}).encode()


def test_validate_batch_goes_on_past_invalid_utf8_and_names_the_line(project: Path, cli: Cli, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    bad = _record("bad").replace(b'"raw": "', b'"raw": "\xe9', 1)
    batch.write_bytes(_record("one") + b"\n" + bad + b"\n" + _record("two") + b"\n")
    code, out, err = cli(project, "validate", "--contract", "review-result", "--batch", str(batch))
    assert code == 3
    assert err == f"promptops: {batch}:2: not valid UTF-8 (byte 32 of the line)\n"
    assert [x.split(":")[0] for x in out.splitlines()[:2]] == ["one", "two"]
    assert "2 responses: 2 accepted, 0 rejected, 1 unreadable record" in out


def test_validate_batch_refuses_a_mistyped_version_as_a_bad_record(project: Path, cli: Cli, tmp_path: Path) -> None:
    batch = tmp_path / "batch.jsonl"
    batch.write_bytes(_record("one", schema_version=5) + b"\n" + _record("two") + b"\n")
    code, out, err = cli(project, "validate", "--contract", "review-result", "--batch", str(batch))
    assert code == 3 and err == f"promptops: {batch}:1: field 'schema_version': expected str | null, got int\n"
    assert out.startswith("two: accepted")


@pytest.mark.parametrize("option", ["validate", "render"])
def test_changed_files_from_with_invalid_utf8_names_file_line_and_column(
    project: Path, cli: Cli, tmp_path: Path, option: str
) -> None:
    listing = tmp_path / "changed.txt"
    listing.write_bytes(b"src/a.py\nsrc/\xe9b.py\n")
    response_file = tmp_path / "r.json"
    response_file.write_text(text(response()))
    args = ["--contract", "review-result", "--changed-files-from", str(listing)]
    code, out, err = cli(project, option, *args, *([str(response_file)] if option == "validate" else []))
    assert (code, out) == (3, "")
    assert err == (f"promptops: error: Invalid value for '--changed-files-from': {listing}:2:5: not valid UTF-8 text\n")


def test_render_diff_with_invalid_utf8_names_the_file(project: Path, cli: Cli, tmp_path: Path) -> None:
    diff = tmp_path / "change.diff"
    diff.write_bytes(b"--- a/x\n+++ b/x\n+caf\xe9\n")
    code, out, err = cli(project, "render", "--contract", "review-result", "--changed-file", "x", "--diff", str(diff))
    assert (code, out) == (3, "")
    assert err == f"promptops: error: Invalid value for '--diff': {diff}:3:5: not valid UTF-8 text\n"


@pytest.mark.parametrize(
    "args",
    [
        ("validate", "--contract", "review-result", "--changed-file", "x", "/dev/zero"),
        ("validate", "--contract", "review-result", "--changed-file", "x", "--batch", "/dev/zero"),
        ("validate", "--contract", "review-result", "--changed-files-from", "/dev/zero", "r.json"),
        ("render", "--contract", "review-result", "--changed-file", "x", "--diff", "/dev/zero"),
        ("merge", "--changed-file", "x", "review-result=/dev/zero"),
    ],
)
def test_devices_are_refused_without_reading(project: Path, cli: Cli, args: tuple[str, ...]) -> None:
    code, out, err = cli(project, *args)
    assert (code, out) == (3, "")
    assert err.count("\n") == 1 and "/dev/zero: not a regular file (a device)" in err, err


def test_a_fifo_with_no_writer_reads_as_empty_instead_of_hanging(project: Path, cli: Cli, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    code, _, err = cli(project, "render", "--contract", "review-result", "--changed-file", "x", "--diff", str(fifo))
    assert code == 0, err


def test_an_input_over_the_limit_is_refused(project: Path, cli: Cli, tmp_path: Path) -> None:
    from promptops.core.files import MAX_INPUT_BYTES

    big = tmp_path / "big.diff"
    with big.open("wb") as handle:
        handle.truncate(MAX_INPUT_BYTES + 1)  # sparse: no disk space used
    code, _, err = cli(project, "render", "--contract", "review-result", "--changed-file", "x", "--diff", str(big))
    assert code == 3
    assert err == f"promptops: error: Invalid value for '--diff': {big}: larger than the 64 MiB an input may hold\n"
