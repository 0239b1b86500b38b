"""A rejected response keeps the versions it declared: in the outcome, in the store (real DuckDB, through the
real ``promptops ingest``) and in ``promptops rates`` grouped by version."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from promptops.cli import run
from tests.helpers import CHANGED, REPO_ROOT, response


def _record(index: int, body: object) -> dict[str, object]:
    return {
        "response_id": f"resp-{index}",
        "ts": f"2026-11-25T0{index}:00:00+00:00",
        "contract": "review-result",
        "rollout_id": None,
        "arm": None,
        "unit": "acme/service#1",
        "changed_files": CHANGED,
        "raw": body if isinstance(body, str) else json.dumps(body),
        "model": "model-a",
        "latency_ms": 900.0,
        "tokens": 1000,
    }


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    records = [
        _record(1, response()),
        _record(2, response(prompt_version="2.0.0")),  # incompatible prompt
        _record(3, response(schema_version="2.0")),  # incompatible schema
        _record(4, response(prompt_version="2.0.0", findings="many")),  # findings not an array: rejected later
        _record(5, "not json at all"),
    ]
    (logs / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return tmp_path


def test_rejected_responses_are_stored_and_counted_with_their_declared_versions(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["--root", str(project), "ingest", str(project / "logs")]) == 0, capsys.readouterr()
    capsys.readouterr()
    with duckdb.connect(str(project / ".promptops" / "diagnostics.duckdb"), read_only=True) as db:
        rows = db.execute(
            "SELECT response_id, accepted, reason, schema_version, prompt_version FROM responses ORDER BY response_id"
        ).fetchall()
    assert rows == [
        ("resp-1", True, None, "1.0", "1.0.0"),
        ("resp-2", False, "incompatible_version", "1.0", "2.0.0"),
        ("resp-3", False, "incompatible_version", "2.0", "1.0.0"),
        ("resp-4", False, "incompatible_version", "1.0", "2.0.0"),
        ("resp-5", False, "invalid_json", None, None),
    ]
    by_version = ["rates", "--contract", "review-result", "--by", "prompt_version", "--format", "json"]
    assert run(["--root", str(project), *by_version]) == 0
    groups = {g["key"]["prompt_version"]: g["per_response"] for g in json.loads(capsys.readouterr().out)["groups"]}
    assert groups["2.0.0"]["incompatible_version"] == {"count": 2, "total": 2, "rate": 1.0}
    assert groups["1.0.0"]["incompatible_version"]["count"] == 1
