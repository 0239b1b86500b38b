"""Real Spark (local[2], one session for the whole test run) over a project whose logs hold two contracts,
a rollout's simulated traffic, bad records, rejects, truncated responses and repeated response ids.

The logs are ingested once by the embedded store and once by the Spark engine (session fixtures); tests that
change a lake work on a copy. Without Java or pyspark the Spark tests skip, except under CI=true, where they
fail: CI must have installed both (.ci/run).
"""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import promptops.cli
from tests.helpers import REPO_ROOT, empty_store

PLAN = "rollout/review-result/review-1.1.yaml"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=31)
TRAFFIC = 3000
OTHER = "code-review-findings"


def run(root: Path, *args: str) -> None:
    code = promptops.cli.run(["--root", str(root), *args])
    assert code in (0, 2), f"promptops {' '.join(args)} exited {code}"


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The one SparkSession of the test run (local[2], few shuffle partitions: the data is small)."""
    try:
        from promptops.spark.session import spark_session

        session = spark_session("local[2]", app_name="promptops-tests", config={"spark.sql.shuffle.partitions": "4"})
    except Exception as problem:  # no pyspark, no Java: a skip locally, a failure in CI
        if os.environ.get("CI") == "true":
            pytest.fail(f"Spark cannot start under CI=true: {problem}")
        pytest.skip(f"Spark cannot start here: {problem}")
    yield session
    session.stop()


def _other_contract(record: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A record of the second contract built from a review-result one: kept, dropped or rejected findings."""
    try:
        findings = json.loads(record["raw"]).get("findings", [])
    except (ValueError, AttributeError):
        findings = []
    converted = [
        {
            "title": str(f.get("title", "t"))[:100],
            "severity": rng.choice(["P0", "P1", "P2", "P3", "P9"]),
            "file": f.get("file", "src/a.py"),
            "line": f.get("line", 1),
            "why_it_matters": "it breaks",
            "autofix_class": rng.choice(["manual", "advisory", "nope"]),
            "owner": "review-fixer",
            "requires_verification": False,
            "confidence": rng.choice([0, 25, 50, 75, 100, 0.75]),
            "evidence": ["x"],
            "pre_existing": False,
        }
        for f in findings
        if isinstance(f, dict)
    ]
    raw = json.dumps({"reviewer": "security", "findings": converted, "residual_risks": [], "testing_gaps": []})
    if rng.random() < 0.1:
        raw = raw[: len(raw) // 2]  # truncated output
    return {
        **record,
        "response_id": "other-" + record["response_id"],
        "contract": OTHER,
        "rollout_id": None,
        "arm": None,
        "raw": raw,
    }


def _write_logs(root: Path) -> None:
    """Split the simulated traffic into segments (one gzip, one in a subdirectory), add the second contract,
    bad records and repeated ids."""
    logs = root / "logs"
    lines = (root / "traffic.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    rng = random.Random(5)
    third = len(records) // 3
    parts = [records[:third], records[third : 2 * third], records[2 * third :]]
    others = [_other_contract(r, rng) for r in records[: TRAFFIC // 3]]
    bad = [
        "this is not json",
        json.dumps({"response_id": 7, "ts": "2026-11-02T10:00:00Z"}),
        json.dumps({**records[0], "response_id": "unknown-1", "contract": "no-such-contract"}),
        json.dumps({**records[1], "response_id": "missing-ts", "ts": None}),
    ]

    def dump(items: list[dict[str, Any]]) -> str:
        return "".join(json.dumps(item) + "\n" for item in items)

    (logs / "a").mkdir(parents=True)
    (logs / "a" / "part-0.jsonl").write_text(dump(parts[0][:500]) + bad[0] + "\n\n" + dump(parts[0][500:]))
    with gzip.open(logs / "a" / "part-1.jsonl.gz", "wt", encoding="utf-8") as handle:
        handle.write(dump(parts[1]) + bad[1] + "\n")
    (logs / "b").mkdir()
    # Repeats: the first 40 responses again (same ids, already stored by part-0), and ids repeated inside.
    (logs / "b" / "part-2.jsonl").write_text(dump(parts[2]) + dump(records[:40]) + bad[2] + "\n" + bad[3] + "\n")
    (logs / "b" / "other.jsonl").write_text(dump(others) + dump(others[:10]))


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project with the rollout promoted to its canary and the logs, not yet ingested anywhere."""
    root = tmp_path_factory.mktemp("spark") / "project"
    for name in ("versions", "templates", "rollout"):
        shutil.copytree(REPO_ROOT / name, root / name)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROMPTOPS_NO_TEMPLATE_CACHE", "1")
        store = empty_store(root / "parser-stage.duckdb")  # the parser stage reads a store: nothing rejected yet
        run(root, "rollout", "promote", str(root / PLAN), "--by", "tester", "--now", T0.isoformat(), "--store", store)
        run(
            root, "rollout", "simulate", str(root / PLAN), "--responses", str(TRAFFIC), "--start", T0.isoformat(),
            "--hours", "30", "--seed", "1", "--out", str(root / "traffic.jsonl"),
        )  # fmt: skip
    _write_logs(root)
    return root


@pytest.fixture(scope="session")
def embedded(built: Path) -> Path:
    """The logs ingested by the embedded DuckDB store (store.duckdb in the project)."""
    run(built, "ingest", str(built / "logs"), "--store", str(built / "store.duckdb"), "--workers", "0")
    return built / "store.duckdb"


@pytest.fixture(scope="session")
def lake(built: Path, spark: Any) -> Path:
    """The logs ingested by the Spark engine (the lake directory in the project)."""
    run(built, "ingest", str(built / "logs"), "--engine", "spark", "--store", str(built / "lake"))
    return built / "lake"


def lake_content(directory: Path) -> dict[str, Any]:
    """Every file of a lake but the scratch space, Parquet files as their rows: two lakes compare equal when
    they hold the same files with the same rows."""
    import pyarrow.parquet as pq

    found: dict[str, Any] = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if not path.is_file() or relative.startswith("_tmp/"):
            continue
        if path.suffix == ".parquet":
            found[relative] = sorted(
                json.dumps(row, sort_keys=True, default=str) for row in pq.read_table(path).to_pylist()
            )
        else:
            found[relative] = json.loads(path.read_text(encoding="utf-8"))
    return found
