"""The ingest, rates and export commands: output shapes, repo-relative paths, exit codes, one-line errors."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from promptops.cli import run
from promptops.store import Store
from tests.helpers import REPO_ROOT
from tests.store.messages import errors_only


def _cli(capsys: pytest.CaptureFixture[str], project: Path, *args: str) -> tuple[int, str, str]:
    code = run(["--root", str(project), *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_ingest_exit_codes_and_summary(
    project: Path, write_log: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(project / "logs" / "a.jsonl", 120)
    logs = str(project / "logs")
    code, out, err = _cli(capsys, project, "ingest", logs, "--format", "json")
    assert (code, errors_only(err)) == (0, "")  # no progress bar when stderr is not a terminal
    summary = json.loads(out)
    assert summary == {
        "store": ".promptops/diagnostics.duckdb",
        "segments": 1,
        "segments_skipped": 0,
        "segments_failed": [],
        "records": 120,
        "inserted": 120,
        "duplicates": 0,
        "bad_records": 0,
        "diagnostics": summary["diagnostics"],
        "bad_records_sample": [],
        "bad_records_sample_limit": 100,
        "warnings": summary["warnings"],
        "exit_code": 0,
    }
    assert [w.split(" name rollout ")[1][:12] for w in summary["warnings"]] == ["'review-v7',", "'review-v8',"]
    (project / "logs" / "b.jsonl").write_text('{"response_id": "x"}\n')
    code, out, err = _cli(capsys, project, "ingest", logs)
    assert code == 2
    assert err == "promptops: logs/b.jsonl:1: missing required field 'ts'\n"
    assert out.startswith(".promptops/diagnostics.duckdb: 0 responses stored")
    assert "1 bad record;" in out and "1 already ingested" in out


def test_ingest_reports_at_most_a_hundred_bad_lines(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "logs" / "junk.jsonl").write_text("junk\n" * 150)
    code, _, err = _cli(capsys, project, "ingest", str(project / "logs"))
    lines = err.splitlines()
    assert code == 2 and len(lines) == 101
    assert lines[0].startswith("promptops: logs/junk.jsonl:1: not valid JSON")
    assert lines[-1] == "promptops: ... and 50 more bad records (the first 100 are shown)"


def test_ingest_with_a_broken_contract_or_unreadable_log_exits_3(
    project: Path, write_log: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _cli(capsys, project, "ingest", str(project / "missing.jsonl"))
    assert code == 3 and out == "" and err.count("\n") == 1 and "missing.jsonl" in err
    write_log(project / "logs" / "a.jsonl", 10)
    (project / "logs" / "b.jsonl.gz").write_bytes(b"\x1f\x8b not really gzip")
    code, out, err = _cli(capsys, project, "ingest", str(project / "logs"))
    assert code == 3
    err = errors_only(err)
    assert err.startswith("promptops: error: logs/b.jsonl.gz: cannot read: ") and err.count("\n") == 1
    assert "10 responses stored" in out


def test_rates_text_and_json(project: Path, write_log: Callable[..., Path], capsys: pytest.CaptureFixture[str]) -> None:
    write_log(project / "logs" / "a.jsonl", 300, days=2)
    assert _cli(capsys, project, "ingest", str(project / "logs"))[0] == 0
    code, out, err = _cli(
        capsys,
        project,
        "rates",
        "--contract",
        "review-result",
        "--by",
        "arm,day",
        "--rollout",
        "review-v7",
        "--since",
        "2025-05-01T00:00:00+02:00",
        "--format",
        "json",
    )
    assert (code, errors_only(err)) == (0, "")
    report = json.loads(out)
    assert report["store"] == ".promptops/diagnostics.duckdb" and report["since"] == "2025-04-30T22:00:00"
    assert [g["key"] for g in report["groups"]] == [
        {"arm": arm, "day": day} for arm in ("baseline", "candidate") for day in ("2025-05-01", "2025-05-02")
    ]
    first = report["groups"][0]
    assert set(first["per_response"]) == {
        "any_drop",
        "any_coercion",
        "incompatible_version",
        "rejected",
        "all_findings_dropped",
        "extracted",
        "truncated",
    }
    assert all(set(r) == {"count", "total", "rate"} for r in first["per_response"].values())
    code, out, _ = _cli(capsys, project, "rates", "--contract", "review-result")
    assert code == 0 and out.startswith(".promptops/diagnostics.duckdb: contract review-result\n")
    assert "all responses: 300 responses" in out and "any drop" in out and " / 300" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--by", "week"), "cannot group by 'week'"),
        (("--since", "last tuesday"), "'last tuesday' is not an ISO 8601 date or time"),
        (("--store", "nowhere.duckdb"), "nowhere.duckdb: no diagnostics store here (check the path)"),
    ],
)
def test_rates_failures_are_one_line_and_exit_3(
    project: Path, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], message: str
) -> None:
    code, out, err = _cli(capsys, project, "rates", "--contract", "review-result", *args)
    assert code == 3 and out == "" and err.count("\n") == 1 and message in err


def test_export_then_rates_over_the_directory(
    project: Path, write_log: Callable[..., Path], capsys: pytest.CaptureFixture[str]
) -> None:
    write_log(project / "logs" / "a.jsonl", 200, days=3)
    assert _cli(capsys, project, "ingest", str(project / "logs"))[0] == 0
    code, out, err = _cli(
        capsys, project, "export", "--format", "parquet", str(project / "lake"), "--report-format", "json"
    )
    assert (code, errors_only(err)) == (0, "")
    exported = json.loads(out)
    assert exported["directory"] == "lake" and exported["responses"] == 200 and exported["files"] >= 3
    with Store.open(project / ".promptops" / "diagnostics.duckdb", read_only=True) as store:
        assert (exported["diagnostics"], exported["slices"]) == (store.count("diagnostics"), store.count("slices"))
    assert exported["slices"] >= 1
    days = sorted(p.name for p in (project / "lake" / "responses" / "contract=review-result").iterdir())
    assert days == ["day=2025-05-01", "day=2025-05-02", "day=2025-05-03"]
    by = ("--contract", "review-result", "--by", "prompt_version,day", "--format", "json")
    from_store = json.loads(_cli(capsys, project, "rates", *by)[1])
    from_lake = json.loads(_cli(capsys, project, "rates", *by, "--store", str(project / "lake"))[1])
    assert from_lake.pop("store") == "lake" and from_store.pop("store") == ".promptops/diagnostics.duckdb"
    assert from_lake == from_store


BROKEN_CONTRACTS = [  # a parser setting; the merge section (the finding ids read it)
    ("max_depth", "max_deep", "line 33: key 'limits.max_deep': unknown key (check the spelling)"),
    ("default: 0.6 ", "default: 6 ", "line 54: key 'merge.confidence.default': must be a number from 0 to 1"),
]


@pytest.mark.parametrize("workers", ["0", "2"])
@pytest.mark.parametrize(("old", "new", "problem"), BROKEN_CONTRACTS, ids=["limits", "merge"])
def test_a_broken_contract_stops_the_ingest_with_its_one_line_error(
    tmp_path: Path,
    write_log: Callable[..., Path],
    capsys: pytest.CaptureFixture[str],
    workers: str,
    old: str,
    new: str,
    problem: str,
) -> None:
    shutil.copytree(REPO_ROOT / "versions", tmp_path / "versions")
    broken = tmp_path / "versions" / "other"
    shutil.copytree(tmp_path / "versions" / "review-result", broken)
    config = broken / "contract.yaml"
    assert old in config.read_text()
    config.write_text(config.read_text().replace("contract: review-result", "contract: other").replace(old, new))
    log = write_log(tmp_path / "logs" / "a.jsonl", 20)
    with log.open("a") as handle:
        handle.write(log.read_text().splitlines()[0].replace('"review-result"', '"other"') + "\n")
    code, out, err = _cli(capsys, tmp_path, "ingest", str(tmp_path / "logs"), "--workers", workers)
    assert (code, out) == (3, "")
    assert err == f"promptops: error: versions/other/contract.yaml: {problem}\n"
