"""The Spark ingest is idempotent and crash-safe: a writer killed in the middle of a segment leaves a lake that
a re-run completes into exactly the clean run's lake; a second run adds nothing; a segment that grew adds only
its new records; no response id is ever stored twice."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest

from promptops.core.errors import PromptopsError
from promptops.spark.ingest import ingest_to_lake
from promptops.spark.session import job_errors
from promptops.spark.setup import ParserSetup
from tests.conftest import Cli
from tests.spark.conftest import lake_content

pytestmark = pytest.mark.slow  # real Spark on a JVM


def _relative(root: Path) -> Callable[[Path], str]:
    return lambda path: path.resolve().relative_to(root.resolve()).as_posix()


def _ids(lake: Path) -> tuple[int, int]:
    rows = (
        duckdb.connect()
        .execute(
            "SELECT count(*), count(DISTINCT response_id) "
            f"FROM read_parquet('{lake.as_posix()}/responses/*/*/*.parquet')"
        )
        .fetchone()
    )
    assert rows is not None
    return int(rows[0]), int(rows[1])


def test_a_writer_killed_mid_segment_and_a_rerun_give_the_clean_lake(
    built: Path, lake: Path, spark: Any, tmp_path: Path
) -> None:
    def kill_after_two_files() -> Callable[[str], None]:
        written: list[str] = []

        def hook(relative: str) -> None:  # runs in the executor's Python worker, which it kills outright
            import os
            import signal

            written.append(relative)
            if len(written) == 2:
                os.kill(os.getpid(), signal.SIGKILL)

        return hook

    target = tmp_path / "lake"
    setup = ParserSetup.from_project(built)
    logs = [str(built / "logs")]
    with pytest.raises(PromptopsError, match="ingest failed on Spark"), job_errors("ingest"):
        ingest_to_lake(spark, logs, str(target), setup, relative=_relative(built), after_file=kill_after_two_files())
    clean = lake_content(lake)
    partial = lake_content(target)
    assert any(name.endswith(".parquet") for name in partial), "the killed run wrote nothing: no crash mid-write"
    markers = [name for name in partial if name.startswith("_segments/")]
    assert len(markers) < len([name for name in clean if name.startswith("_segments/")])

    report = ingest_to_lake(spark, logs, str(target), setup, relative=_relative(built))
    assert report.inserted > 0
    assert lake_content(target) == clean
    assert _ids(target)[0] == _ids(target)[1]


def test_a_second_run_adds_nothing(cli: Cli, built: Path, lake: Path, tmp_path: Path) -> None:
    copy = tmp_path / "lake"
    shutil.copytree(lake, copy)
    before = lake_content(copy)
    code, out, _ = cli(built, "ingest", str(built / "logs"), "--engine", "spark", "--store", str(copy), "--format",
                       "json")  # fmt: skip
    report = json.loads(out)
    assert code == 0
    assert (report["inserted"], report["segments_skipped"], report["segments"]) == (0, 4, 4)
    assert lake_content(copy) == before
    total, distinct = _ids(copy)
    assert total == distinct > 3000


def test_a_segment_that_grew_adds_only_its_new_records(cli: Cli, built: Path, lake: Path, tmp_path: Path) -> None:
    root = tmp_path / "project"
    shutil.copytree(built / "versions", root / "versions")
    shutil.copytree(built / "rollout", root / "rollout")
    shutil.copytree(built / "logs", root / "logs")
    copy = root / "lake"
    shutil.copytree(lake, copy)
    total_before, _ = _ids(copy)
    grown = root / "logs" / "b" / "other.jsonl"
    first = json.loads(grown.read_text(encoding="utf-8").splitlines()[0])
    extra = [{**first, "response_id": f"grown-{i}"} for i in range(5)]
    with grown.open("a", encoding="utf-8") as handle:
        handle.write("".join(json.dumps(record) + "\n" for record in extra))
    code, out, err = cli(root, "ingest", str(root / "logs"), "--engine", "spark", "--store", str(copy), "--format",
                         "json")  # fmt: skip
    assert code == 0, err
    report = json.loads(out)
    assert (report["inserted"], report["segments_skipped"]) == (5, 3)
    assert report["duplicates"] == report["records"] - 5
    total, distinct = _ids(copy)
    assert total == distinct == total_before + 5
