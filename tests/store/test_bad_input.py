"""Bad bytes, out-of-range values, damaged stores and typos: each ends in a documented exit code with one line,
and every good record around a bad one is stored. Real log files, a real DuckDB store, the real CLI."""

from __future__ import annotations

import gzip
import json
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pytest
import response_logs  # benchmarks/, on the path through tests/store/conftest.py

from promptops.cli import run
from promptops.parsing import ChangedFiles, Parser
from promptops.store import Recorder, Store
from tests.helpers import CHANGED, REPO_ROOT, log_record, response, text

STORE = ".promptops/diagnostics.duckdb"


def _cli(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> tuple[int, str, str]:
    code = run(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def line(rid: str, **overrides: Any) -> bytes:
    return json.dumps(log_record(rid, **overrides)).encode()


def _stored(project: Path) -> list[str]:
    with duckdb.connect(str(project / STORE), read_only=True) as con:
        return sorted(row[0] for row in con.execute("SELECT response_id FROM responses").fetchall())


def test_invalid_utf8_in_one_record_stores_the_others_and_names_the_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = line("bad").replace(b'"raw": "', b'"raw": "\xe9', 1)
    (project / "logs" / "a.jsonl").write_bytes(line("one") + b"\n" + bad + b"\n" + line("two") + b"\n")
    code, out, err = _cli(capsys, project, "ingest", str(project / "logs"))
    assert code == 2
    assert err.startswith("promptops: logs/a.jsonl:2: not valid UTF-8 (byte ") and err.count("\n") == 1
    assert "internal error" not in err
    assert _stored(project) == ["one", "two"]
    assert "2 responses stored" in out and "1 bad record;" in out and "from 1 segment" in out


def test_tokens_out_of_range_is_a_bad_record_and_a_rerun_goes_on(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = project / "logs" / "a.jsonl"
    log.write_bytes(
        line("huge", tokens=10**30) + b"\n" + line("negative", tokens=-1) + b"\n" + line("fine", tokens=5) + b"\n"
    )
    code, _, err = _cli(capsys, project, "ingest", str(log))
    assert code == 2
    assert err.splitlines() == [
        "promptops: logs/a.jsonl:1: field 'tokens': expected int <= 9223372036854775807",
        "promptops: logs/a.jsonl:2: field 'tokens': expected int >= 0",
    ]
    assert _stored(project) == ["fine"]
    with log.open("ab") as handle:
        handle.write(line("later") + b"\n")
    code, _, err = _cli(capsys, project, "ingest", str(log))  # the grown segment is read again, past line 1
    assert code == 2 and "internal error" not in err
    assert _stored(project) == ["fine", "later"]


def test_a_time_out_of_range_in_utc_is_a_bad_record(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = project / "logs" / "a.jsonl"
    log.write_bytes(line("early", ts="0001-01-01T00:00:00+10:00") + b"\n" + line("ok") + b"\n")
    code, _, err = _cli(capsys, project, "ingest", str(log))
    assert (
        code == 2 and err == "promptops: logs/a.jsonl:1: field 'ts': 0001-01-01T00:00:00+10:00 is out of range in UTC\n"
    )
    assert _stored(project) == ["ok"]


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_a_line_too_long_is_a_bad_record(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from promptops.store.logs import MAX_LINE

    for name in ("a.jsonl", "b.jsonl.gz"):
        data = line(f"{name}-1") + b"\n" + b"x" * (MAX_LINE + 10) + b"\n" + line(f"{name}-2") + b"\n"
        path = project / "logs" / name
        if name.endswith(".gz"):
            path.write_bytes(gzip.compress(data, compresslevel=1))
        else:
            path.write_bytes(data)
    for workers in ("0", "2"):
        code, _, err = _cli(capsys, project, "ingest", str(project / "logs"), "--workers", workers, "--rescan")
        assert code == 2
        assert sorted(err.splitlines()) == [
            "promptops: logs/a.jsonl:2: line longer than 32 MiB",
            "promptops: logs/b.jsonl.gz:2: line longer than 32 MiB",
        ]
    assert _stored(project) == ["a.jsonl-1", "a.jsonl-2", "b.jsonl.gz-1", "b.jsonl.gz-2"]


_MEASURED = """
import resource, sys
from promptops.cli import run
code = run(sys.argv[1:])
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
sys.exit(code)
"""


def _peak_rss_mib(project: Path, *args: str) -> tuple[int, float]:
    """The real CLI in a fresh process: its exit code and its peak resident memory in MiB."""
    completed = subprocess.run(
        [sys.executable, "-c", _MEASURED, "--root", str(project), *args], capture_output=True, text=True, check=False
    )
    assert "internal error" not in completed.stderr
    return completed.returncode, int(completed.stdout.splitlines()[-1]) / 1024


@pytest.mark.slow  # millions of lines
def test_ingest_memory_stays_flat_whatever_the_bad_or_blank_lines(project: Path) -> None:
    # Against a baseline measured here (one good record): the old code held every chunk's bad records and
    # empty tables until a batch filled, +130 MB for 600 k bad lines and for a 20 KB gzip of newlines.
    logs = project / "logs"
    (logs / "one.jsonl").write_bytes(line("one") + b"\n")
    (logs / "bad.jsonl").write_bytes(b"x\n" * 600_000 + line("good") + b"\n")
    (logs / "blank.jsonl.gz").write_bytes(gzip.compress(b"\n" * 20_000_000 + line("last") + b"\n", compresslevel=9))
    assert (logs / "blank.jsonl.gz").stat().st_size < 100_000
    code, baseline = _peak_rss_mib(
        project, "ingest", str(logs / "one.jsonl"), "--workers", "0", "--store", str(project / "a.duckdb")
    )
    assert code == 0
    code, bad = _peak_rss_mib(
        project, "ingest", str(logs / "bad.jsonl"), "--workers", "0", "--store", str(project / "b.duckdb")
    )
    assert code == 2 and bad - baseline < 50, (baseline, bad)
    code, blank = _peak_rss_mib(
        project, "ingest", str(logs / "blank.jsonl.gz"), "--workers", "0", "--store", str(project / "c.duckdb")
    )
    assert code == 0 and blank - baseline < 50, (baseline, blank)


def test_the_bad_record_sample_is_bounded(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "logs" / "a.jsonl").write_bytes(b"junk\n" * 500)
    code, out, _ = _cli(capsys, project, "ingest", str(project / "logs"), "--format", "json")
    summary = json.loads(out)
    assert code == 2 and summary["bad_records"] == 500
    assert len(summary["bad_records_sample"]) == summary["bad_records_sample_limit"] == 100
    assert summary["bad_records_sample"][0] == {
        "source": "logs/a.jsonl",
        "line": 1,
        "problem": summary["bad_records_sample"][0]["problem"],
    }


def test_unknown_rollout_ids_and_arms_are_warned_about_with_counts(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plans = project / "rollout" / "review-result"
    plans.mkdir(parents=True)
    (plans / "review-1.1.yaml").symlink_to(Path(__file__).parents[2] / "rollout" / "review-result" / "review-1.1.yaml")
    lines = [
        line("a", rollout_id="sec-typo", arm="candidate"),
        line("b", rollout_id="sec-typo", arm="baseline"),
        line("c", rollout_id="review-1.1", arm="canddate"),
        line("d", rollout_id="review-1.1", arm="candidate"),
        line("e", contract="review-reslt"),
        line("f", contract="review-reslt"),
    ]
    (project / "logs" / "a.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    code, out, err = _cli(capsys, project, "ingest", str(project / "logs"), "--format", "json")
    assert code == 2
    assert err.splitlines() == [
        "promptops: logs/a.jsonl:5: unknown contract 'review-reslt' (no versions/review-reslt/)",
        "promptops: logs/a.jsonl:6: unknown contract 'review-reslt' (no versions/review-reslt/)",
        "promptops: warning: 2 records name contract 'review-reslt', which has no versions/review-reslt/: not "
        "stored (bad records)",
        "promptops: warning: 2 records of contract review-result name rollout 'sec-typo', which has no plan "
        "(rollout/review-result/sec-typo.yaml): read under the contract's default policy",
        "promptops: warning: 1 record of rollout 'review-1.1' (review-result) name arm 'canddate', not baseline "
        "or candidate: read under the contract's default policy",
    ]
    assert len(json.loads(out)["warnings"]) == 3


def test_rates_refuses_an_unknown_contract_or_rollout(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "logs" / "a.jsonl").write_bytes(line("a", rollout_id="logged-only", arm="baseline") + b"\n")
    assert _cli(capsys, project, "ingest", str(project / "logs"))[0] == 0
    code, out, err = _cli(capsys, project, "rates", "--contract", "typo")
    assert (code, out) == (3, "")
    assert err == (
        "promptops: error: unknown contract 'typo': no versions/typo/ and no responses of it in "
        ".promptops/diagnostics.duckdb\n"
    )
    code, _, err = _cli(capsys, project, "rates", "--contract", "review-result", "--rollout", "sec-typo")
    assert code == 3 and err.startswith("promptops: error: unknown rollout 'sec-typo': ") and err.count("\n") == 1
    # a rollout id the store holds is known even without a plan
    assert _cli(capsys, project, "rates", "--contract", "review-result", "--rollout", "logged-only")[0] == 0


def test_an_sqlite_file_as_store_is_refused_by_every_command(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = project / "other.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE t (x)")
    (project / "logs" / "a.jsonl").write_bytes(line("a") + b"\n")
    before = path.read_bytes()
    for args in (
        ("ingest", str(project / "logs")),
        ("rates", "--contract", "review-result"),
        ("export", str(project / "out")),
    ):
        code, out, err = _cli(capsys, project, *args, "--store", str(path))
        assert (code, out) == (3, ""), args
        assert err == "promptops: error: other.db: not a diagnostics store (an SQLite database)\n", args
    assert path.read_bytes() == before


def _store_with_data(project: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A store of 20,000 responses of the repository's rollout review-1.1 (whose plan the project holds)."""
    plans = project / "rollout" / "review-result"
    plans.mkdir(parents=True)
    shutil.copy(REPO_ROOT / "rollout" / "review-result" / "review-1.1.yaml", plans)
    with (project / "logs" / "a.jsonl").open("w") as handle:
        for logged in response_logs.records(20_000, pool=400):
            handle.write(json.dumps({**logged, "rollout_id": "review-1.1", "arm": logged["arm"] or "baseline"}) + "\n")
    assert _cli(capsys, project, "ingest", str(project / "logs"), "--workers", "0")[0] == 0
    return project / STORE


@pytest.mark.slow  # every command on a damaged store
def test_a_damaged_block_is_reported_as_such_by_every_command(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = _store_with_data(project, capsys)
    pristine = store.read_bytes()
    block, header = 256 * 1024, 3 * 4096
    (project / "logs" / "b.jsonl").write_bytes(line("new") + b"\n")
    found: dict[str, int] = {}
    for number in range((len(pristine) - header) // block):
        for args in (
            ("rates", "--contract", "review-result", "--by", "rollout,arm,model"),
            ("ingest", str(project / "logs" / "b.jsonl")),
            ("export", str(project / f"out-{number}")),
            ("rollout", "gate", str(project / "rollout" / "review-result" / "review-1.1.yaml")),
        ):
            start = header + number * block
            store.write_bytes(pristine[:start] + bytes(block) + pristine[start + block :])
            Path(f"{store}.wal").unlink(missing_ok=True)
            code, _, err = _cli(capsys, project, *args)
            assert "internal error" not in err and "Traceback" not in err, (number, args, err)
            if code == 3:
                assert err.count("\n") == 1, err
                assert "the store file is damaged (a damaged block at byte " in err, err
                found[args[0]] = found.get(args[0], 0) + 1
    # Each command meets a damaged block it reads (blocks a command does not read are not checked).
    assert set(found) == {"rates", "ingest", "export", "rollout"}, found


def _limited(size: int) -> Callable[[], None]:
    def limit() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


@pytest.mark.slow  # over 1.5 s: kept out of the fast loop (under 3 minutes)
def test_a_full_disk_is_reported_as_such(project: Path, write_log: Callable[..., Path]) -> None:
    write_log(project / "logs" / "a.jsonl", 20_000)
    completed = subprocess.run(
        [sys.executable, "-m", "promptops", "--root", str(project), "ingest", str(project / "logs")],
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=_limited(1 << 20),  # the file size limit is set in the child
    )
    errors = [x for x in completed.stderr.splitlines() if "warning" not in x]
    assert completed.returncode == 3
    assert errors == [
        "promptops: error: .promptops/diagnostics.duckdb: write failed: no space left on the device holding the "
        "store (or a file size limit was reached)"
    ]


def test_the_recorder_refuses_a_value_it_cannot_store_at_record_time(tmp_path: Path, parser: Parser) -> None:
    outcome = parser.parse(text(response()), ChangedFiles(CHANGED))
    now = datetime(2026, 1, 1, tzinfo=UTC)
    base: dict[str, Any] = {"ts": now, "contract": "review-result", "policy": parser.policy}
    with Store.open(tmp_path / "s.duckdb") as store:
        recorder = Recorder(store, batch_size=1000)
        recorder.record(outcome, response_id="kept", **base)
        for overrides, message in (
            (
                {"response_id": "t", "tokens": 10**30},
                "field 'tokens': int 1000000000000000000000000000000 is outside 0..9223372036854775807",
            ),
            ({"response_id": "t", "tokens": -1}, "field 'tokens': int -1 is outside 0..9223372036854775807"),
            ({"response_id": "l", "latency_ms": float("nan")}, "field 'latency_ms': nan is not a finite number >= 0"),
            ({"response_id": "\ud800"}, "field 'response_id': not valid Unicode (a lone surrogate at character 1)"),
            (
                {"response_id": "m", "model": "a\udfffb"},
                "field 'model': not valid Unicode (a lone surrogate at character 2)",
            ),
            ({"response_id": ""}, "field 'response_id': expected a non-empty string, got str ''"),
        ):
            with pytest.raises(ValueError, match=r"^field ") as raised:
                recorder.record(outcome, **{**base, **overrides})
            assert str(raised.value) == message
        recorder.record(outcome, response_id="also kept", **base)
        recorder.flush()
        assert sorted(r[0] for r in store.connection.execute("SELECT response_id FROM responses").fetchall()) == [
            "also kept",
            "kept",
        ]
