"""Generated bad inputs through the real CLI: response log lines (plain and gzip) for ingest, records for
validate --batch, changed-files lists and diffs. Each run ends in a documented exit code; every error is one
line naming the file (and line), never an internal error or a traceback; and each bad line is accounted for
exactly once (reported, or stored when the mutation happened to leave a valid record), every good one stored.

The in-CI slice makes 4,000 inputs (a fixed seed, well under a minute); PROMPTOPS_FUZZ_SCALE=N makes N times
as many, and PROMPTOPS_FUZZ_SEED picks other ones.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from tests.conftest import Cli
from tests.helpers import CHANGED, log_record, response, text

SCALE = int(os.environ.get("PROMPTOPS_FUZZ_SCALE", "1"))
SEED = int(os.environ.get("PROMPTOPS_FUZZ_SEED", "19"))
LOG_FILES, LINES_PER_FILE = 20 * SCALE, 100  # 2,000 log lines: ingest reports the first 100 bad ones per run
BATCH_FILES, RECORDS_PER_BATCH = 3 * SCALE, 500  # 1,500 batch records
CHANGED_LISTS = 300 * SCALE
DIFFS = 200 * SCALE

_JSON_VALUES: list[Any] = [None, True, 0, -1, 10**30, -(10**30), 1.5, 1e308, "", "x", [], {}, ["a", 1], {"a": None}]
_RAW_BYTES = [b"\xe9", b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00", b"\xef\xbb\xbf", b"\r"]
_TEXT_PATCHES = [
    ('"ts": "2026-01-01T00:00:00Z"', '"ts": "0001-01-01T00:00:00+23:59"'),
    ('"ts": "2026-01-01T00:00:00Z"', '"ts": "9999-12-31T23:59:59-23:59"'),
    ('"ts": "2026-01-01T00:00:00Z"', '"ts": "2026-02-30T25:61:61Z"'),
    ('"ts": "2026-01-01T00:00:00Z"', '"ts": 1e400'),
    ('"contract": "review-result"', '"contract": "../review-result"'),
    ('"contract": "review-result"', '"contract": "\\ud800"'),
    ('"unit": null', '"unit": "\\udfff"'),
    ('"unit": null', '"unit": "' + "[" * 3000 + '"'),
    ('"unit": null', '"unit": ' + "[" * 3000 + "]" * 3000),
    ('"unit": null', '"unit": NaN'),
    ('"unit": null', '"unit": Infinity'),
    ('"unit": null', '"latency_ms": 1e400'),
    ('"unit": null', '"latency_ms": -0.5'),
    ('"unit": null', '"tokens": 1.0'),
    ('"unit": null', '"tokens": 99999999999999999999999999999999999999'),
    ('"unit": null', '"tokens": -9223372036854775809'),
    ('"rollout_id": null', '"rollout_id": "sec-typo", "arm": "canddate"'),
]
_LOG_FIELDS = ["response_id", "ts", "contract", "rollout_id", "arm", "unit", "changed_files", "raw", "model"]


def _mutate(rng: random.Random, line: bytes, fields: list[str]) -> bytes:
    """One bad variant of ``line`` (a JSON object): bytes, structure, types, values or ranges gone wrong."""
    kind = rng.randrange(7)
    if kind == 0:  # an undecodable or odd byte sequence somewhere
        at = rng.randrange(len(line) + 1)
        return line[:at] + rng.choice(_RAW_BYTES) + line[at:]
    if kind == 1:  # cut short
        return line[: rng.randrange(len(line))]
    if kind == 2:  # noise
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))).replace(b"\n", b" ")
    if kind == 3:  # a field with a value of the wrong type or range
        data = json.loads(line)
        data[rng.choice(fields)] = rng.choice(_JSON_VALUES)
        return json.dumps(data).encode()
    if kind == 4:  # a field missing
        data = json.loads(line)
        data.pop(rng.choice(fields), None)
        return json.dumps(data).encode()
    if kind == 5:  # a patch of the text: out-of-range times and numbers, escapes, nesting, NaN
        old, new = rng.choice(_TEXT_PATCHES)
        return line.replace(old.encode(), new.encode(), 1)
    return rng.choice([b"[]", b"null", b"42", b'"x"', b"{}", b"{" * 5000, b"\xef\xbb\xbf" + line])


def _id_of(line: bytes) -> str | None:
    """The response id a mutated line still names (stored, or a duplicate of one stored), if any."""
    try:
        data = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return data.get("response_id") if isinstance(data, dict) and isinstance(data.get("response_id"), str) else None


def _stored_ids(store: Path) -> set[str]:
    with duckdb.connect(str(store), read_only=True) as con:
        return {row[0] for row in con.execute("SELECT response_id FROM responses").fetchall()}


def _clean(err: str) -> list[str]:
    lines = err.splitlines()
    assert "internal error" not in err and "Traceback" not in err, err
    return [x for x in lines if not x.startswith("promptops: warning: ")]


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_generated_bad_log_lines(project: Path, cli: Cli, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    logs = project / "logs"
    logs.mkdir()
    store = project / "fuzz.duckdb"
    reported_pattern = re.compile(r"^promptops: (logs/f\d+\.jsonl(?:\.gz)?):(\d+): \S")
    bad_inputs = 0
    for number in range(LOG_FILES):
        name = f"f{number}.jsonl" + (".gz" if number % 4 == 3 else "")
        lines: list[bytes] = []
        good: set[str] = set()
        bad_ids: dict[int, str | None] = {}
        for index in range(LINES_PER_FILE + 10):
            rid = f"{name}-{index}"
            line = json.dumps(log_record(rid)).encode()
            if index % 11 == 5:  # a good record between the bad ones
                good.add(rid)
            else:
                line = _mutate(rng, line, _LOG_FIELDS).replace(b"\n", b" ")
                bad_ids[index + 1] = _id_of(line)
                bad_inputs += 1
            lines.append(line)
        data = b"\n".join(lines) + b"\n"
        (logs / name).write_bytes(gzip.compress(data) if name.endswith(".gz") else data)
        code, out, err = cli(project, "ingest", str(logs / name), "--store", str(store), "--workers", "0")
        errors = _clean(err)
        assert code in (0, 2), (name, code, errors)
        reported = set()
        for error in errors:
            if error.startswith("promptops: ... and "):
                continue
            match = reported_pattern.match(error)
            assert match is not None and match.group(1) == f"logs/{name}", error
            reported.add(int(match.group(2)))
        stored = _stored_ids(store)
        assert good <= stored, good - stored
        blank = {i + 1 for i, line in enumerate(lines) if not line.strip()}
        for line_number, named in bad_ids.items():
            fates = [line_number in reported, named in stored, line_number in blank]
            # more than 100 bad lines: the rest are counted, not printed
            assert sum(fates) <= 1 and (any(fates) or len(reported) == 100), (name, line_number, lines[line_number - 1])
        summary = out.strip().split("; ")[0]
        assert summary.endswith(("bad records", "bad record")), out
    assert bad_inputs >= 2000 * SCALE


def test_generated_bad_batch_records(project: Path, cli: Cli, tmp_path: Path) -> None:
    rng = random.Random(SEED + 1)
    fields = ["response_id", "raw", "changed_files", "schema_version", "prompt_version"]
    total = 0
    for number in range(BATCH_FILES):
        path = tmp_path / f"batch{number}.jsonl"
        lines = []
        for index in range(RECORDS_PER_BATCH):
            record = {"response_id": f"b{index}", "raw": text(response()), "changed_files": list(CHANGED)}
            lines.append(_mutate(rng, json.dumps(record).encode(), fields).replace(b"\n", b" "))
            total += 1
        path.write_bytes(b"\n".join(lines) + b"\n")
        code, out, err = cli(
            project, "validate", "--contract", "review-result", "--batch", str(path), "--format", "json"
        )
        assert code in (0, 1, 2, 3)
        for error in _clean(err):
            assert re.match(rf"^promptops: {re.escape(str(path))}:\d+: \S", error), error
        printed = len([json.loads(x) for x in out.splitlines()])  # one JSON outcome per readable record
        unreadable = len(_clean(err))
        blank = sum(1 for line in lines if not line.strip())
        assert printed + unreadable + blank == len(lines), (printed, unreadable, blank)
    assert total >= 1500 * SCALE


def _one_line_or_ok(code: int, err: str, allowed: tuple[int, ...]) -> None:
    errors = _clean(err)
    assert code in allowed, (code, errors)
    if code == 3:
        assert len(errors) == 1 and errors[0].startswith("promptops: error: "), errors


def _random_text_bytes(rng: random.Random) -> bytes:
    parts = []
    for _ in range(rng.randrange(1, 12)):
        choice = rng.randrange(4)
        if choice == 0:
            parts.append(rng.choice(_RAW_BYTES))
        elif choice == 1:
            parts.append(rng.choice(CHANGED).encode())
        elif choice == 2:
            parts.append(b"\n" * rng.randrange(1, 3))
        else:
            parts.append(bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 30))))
    return b"".join(parts)


@pytest.mark.parametrize("reader", ["changed-files", "diff"])
def test_generated_bad_text_files(project: Path, cli: Cli, tmp_path: Path, reader: str) -> None:
    rng = random.Random(SEED + (2 if reader == "diff" else 3))
    answer = tmp_path / "response.json"
    answer.write_text(text(response()))
    runs = CHANGED_LISTS if reader == "changed-files" else DIFFS
    run: Callable[[Path], tuple[int, str, str]]
    if reader == "changed-files":

        def run(path: Path) -> tuple[int, str, str]:
            return cli(
                project, "validate", "--contract", "review-result", "--changed-files-from", str(path), str(answer)
            )

        allowed: tuple[int, ...] = (0, 2, 3)
    else:

        def run(path: Path) -> tuple[int, str, str]:
            args = ("render", "--contract", "review-result", "--changed-file", CHANGED[0], "--diff", str(path))
            return cli(project, *args)

        allowed = (0, 3)
    refused = 0
    for number in range(runs):
        path = tmp_path / f"{reader}-{number}.txt"
        path.write_bytes(_random_text_bytes(rng))
        code, _, err = run(path)
        _one_line_or_ok(code, err, allowed)
        if code == 3:
            refused += 1
            assert f"{path}:" in err and "not valid UTF-8 text" in err, err
    assert refused > runs // 4  # most inputs hold an undecodable byte
