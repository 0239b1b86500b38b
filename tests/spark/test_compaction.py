"""Compaction rewrites a lake's closed partitions into a few sorted files that read exactly as before, commits
them with one marker, is idempotent, and leaves a lake that reads the same after a crash at any step."""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from promptops.core.errors import PromptopsError
from promptops.spark.compact import compact
from promptops.spark.session import job_errors
from promptops.store import lake_files
from tests.conftest import Cli
from tests.helpers import REPO_ROOT
from tests.spark.conftest import lake_content

pytestmark = pytest.mark.slow  # real Spark on a JVM

TODAY = date(2026, 11, 27)  # every partition of the test lake (2026-11-02/03) is closed
SMALL = 70_000  # bytes: a review-result responses partition (3 files, ~96 kB) becomes 2 files


GROUPINGS = ("arm", "day", "prompt_version")


def _reads(cli: Cli, root: Path, lake: Path, groupings: tuple[str, ...] = GROUPINGS) -> list[Any]:
    """What users read from the lake: rates by arm, day and prompt version (DuckDB reads it)."""
    found = []
    for by in groupings:
        code, out, err = cli(root, "rates", "--contract", "review-result", "--by", by, "--store", str(lake),
                             "--format", "json")  # fmt: skip
        assert code == 0, err
        found.append({key: value for key, value in json.loads(out).items() if key != "store"})
    return found


def _content(lake: Path) -> dict[str, Any]:
    """The lake's files by name, with each partition's rows together: a range partitioning samples its
    boundaries, so two runs may split a partition's sorted rows between its files differently."""
    found = lake_content(lake)
    rows: dict[str, list[str]] = {}
    for name in [name for name in found if name.endswith(".parquet")]:
        rows.setdefault(name.rsplit("/", 1)[0], []).extend(found.pop(name))
        if not name.rsplit("/", 1)[-1].startswith("cmp-"):  # which task wrote a compacted file may vary
            found[name] = "parquet"
    for name, marker in found.items():
        if name.startswith("_compactions/"):
            found[name] = {**marker, "files": len(marker["files"])}
    found.update({partition: sorted(values) for partition, values in rows.items()})
    return found


def _live(lake: Path, table: str) -> list[str]:
    fs, base = lake_files.filesystem(lake.as_posix())
    return lake_files.live_files(fs, base, table, lake_files.read_state(fs, base))


@pytest.fixture
def copy(lake: Path, tmp_path: Path) -> Path:
    target = tmp_path / "lake"
    shutil.copytree(lake, target)
    return target


def test_compaction_reads_the_same_sorted_in_fewer_files(cli: Cli, built: Path, copy: Path, spark: Any) -> None:
    before = _reads(cli, built, copy)
    files_before = _live(copy, "responses")
    report = compact(spark, copy.as_posix(), before=TODAY, target_bytes=SMALL)
    assert report.compacted, "nothing was compacted"
    files_after = _live(copy, "responses")
    assert len(files_after) < len(files_before)
    compacted = [name for name in files_after if name.rsplit("/", 1)[-1].startswith("cmp-")]
    assert {name.rsplit("/", 1)[0] for name in compacted} == {
        f"responses/contract=review-result/day={day}" for day in ("2026-11-02", "2026-11-03")
    }
    assert len(compacted) == 4  # two files a day, as the target size asks
    assert _reads(cli, built, copy) == before
    assert _reads_on_spark(cli, built, copy) == _reads_on_spark(cli, built, built / "lake")
    # Each responses file is sorted by rollout and time, and the files of a partition cover disjoint ranges.
    for partition in {name.rsplit("/", 1)[0] for name in compacted}:
        ranges = []
        for name in sorted(n for n in compacted if n.startswith(partition + "/")):
            rows = pq.read_table(copy / name, columns=["rollout_id", "ts"]).to_pylist()
            keys = [(row["rollout_id"] or "", row["ts"]) for row in rows]
            assert keys == sorted(keys)
            ranges.append((keys[0], keys[-1]))
        ranges.sort()
        assert all(left[1] <= right[0] for left, right in itertools.pairwise(ranges))
    # No dead file stays on disk.
    on_disk = sorted(p.relative_to(copy).as_posix() for p in (copy / "responses").rglob("*.parquet"))
    assert on_disk == sorted(files_after)


def _reads_on_spark(cli: Cli, root: Path, lake: Path) -> Any:
    code, out, err = cli(root, "rates", "--contract", "review-result", "--by", "arm", "--store", str(lake),
                         "--engine", "spark", "--format", "json")  # fmt: skip
    assert code == 0, err
    return {key: value for key, value in json.loads(out).items() if key != "store"}


def test_compaction_twice_changes_nothing_the_second_time(copy: Path, spark: Any) -> None:
    compact(spark, copy.as_posix(), before=TODAY, target_bytes=SMALL)
    once = lake_content(copy)
    again = compact(spark, copy.as_posix(), before=TODAY, target_bytes=SMALL)
    assert again.compacted == [] and again.removed == 0
    assert lake_content(copy) == once


def test_open_partitions_are_left_alone(copy: Path, spark: Any) -> None:
    report = compact(spark, copy.as_posix(), before=date(2026, 11, 3), target_bytes=SMALL)
    days = {item.partition.rsplit("day=", 1)[-1] for item in report.compacted if "day=" in item.partition}
    assert days == {"2026-11-02"}


def _steps(copy: Path, spark: Any, tmp_path: Path) -> list[str]:
    """The steps of a compaction of this lake, in order (recorded on a scratch copy)."""
    scratch = tmp_path / "scratch"
    shutil.copytree(copy, scratch)
    seen: list[str] = []
    compact(spark, scratch.as_posix(), before=TODAY, target_bytes=SMALL, step=seen.append)
    return seen


KILLER = Path(__file__).with_name("compact_and_die.py")


def _killed_at(lake: Path, name: str, log: Path) -> int:
    """Compact ``lake`` in a process of its own (its own Spark session) that SIGKILLs itself right after step
    ``name``; its exit code. Its JVM exits when the killed driver's pipe closes; the process group is killed
    too, so that nothing of it outlives the step even if it does not."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    with log.open("wb") as output:
        process = subprocess.Popen(
            [sys.executable, str(KILLER), str(lake), TODAY.isoformat(), str(SMALL), name],
            stdin=subprocess.DEVNULL, stdout=output, stderr=output, env=env, start_new_session=True,
        )  # fmt: skip
        code = process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    return code


def test_a_sigkill_at_any_step_reads_as_before_and_a_rerun_finishes(
    cli: Cli, built: Path, copy: Path, spark: Any, tmp_path: Path
) -> None:
    """For each step of a compaction, a compactor process killed by SIGKILL right after it leaves a lake that
    reads as before, and a re-run (in another session, as the next day's job would) finishes it."""
    before = _reads(cli, built, copy)
    clean = tmp_path / "clean"
    shutil.copytree(copy, clean)
    compact(spark, clean.as_posix(), before=TODAY, target_bytes=SMALL)
    expected = _content(clean)
    steps = _steps(copy, spark, tmp_path)
    assert len(steps) > 10 and any(s.startswith("removed") for s in steps)
    assert len(set(steps)) == len(steps), "a step name repeats: a kill there would not stop at one point"
    for index, name in enumerate(steps):
        crashed = tmp_path / f"crash-{index}"
        shutil.copytree(copy, crashed)
        log = tmp_path / f"crash-{index}.log"
        code = _killed_at(crashed, name, log)
        assert code == -signal.SIGKILL, f"at {name!r}: exit {code}, not SIGKILL\n{log.read_text(errors='replace')}"
        assert _reads(cli, built, crashed, ("day",)) == before[1:2], f"after a SIGKILL at {name!r}"
        compact(spark, crashed.as_posix(), before=TODAY, target_bytes=SMALL)
        assert _content(crashed) == expected, f"a re-run after a SIGKILL at {name!r}"
        shutil.rmtree(crashed)


def test_an_executor_killed_during_the_rewrite_leaves_the_lake_as_it_was(
    cli: Cli, built: Path, copy: Path, spark: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    before = _reads(cli, built, copy)
    before_files = lake_content(copy)
    from promptops.spark import compact as module

    original = module._writer

    def dying_writer(*args: Any) -> Any:
        write = original(*args)

        def kill(batches: Any) -> Any:  # the executor's Python worker dies after writing its file
            import os
            import signal

            yield from write(batches)
            os.kill(os.getpid(), signal.SIGKILL)

        return kill

    with monkeypatch.context() as patch:
        patch.setattr(module, "_writer", dying_writer)
        with pytest.raises(PromptopsError, match="compacting failed on Spark"), job_errors("compacting"):
            compact(spark, copy.as_posix(), before=TODAY, target_bytes=SMALL)
    assert _reads(cli, built, copy) == before
    leftovers = set(lake_content(copy)) - set(before_files)
    assert all(name.rsplit("/", 1)[-1].startswith("cmp-") for name in leftovers)
    report = compact(spark, copy.as_posix(), before=TODAY, target_bytes=SMALL)
    assert report.compacted and _reads(cli, built, copy) == before


def test_the_command_compacts_and_reports(cli: Cli, built: Path, copy: Path) -> None:
    before = _reads(cli, built, copy, ("arm",))
    args = ("lake", "compact", "--store", str(copy), "--before", "2026-11-27", "--target-size", "1MB")
    code, out, err = cli(built, *args, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    compacted = {(item["table"], item["partition"]): item for item in report["compacted"]}
    assert compacted[("responses", "contract=review-result/day=2026-11-02")]["files"] == 1
    assert compacted[("responses", "contract=review-result/day=2026-11-02")]["replaced"] == 3
    assert _reads(cli, built, copy, ("arm",)) == before
    code, out, err = cli(built, *args)
    assert (code, out.strip().rsplit(": ", 1)[-1]) == (0, "nothing to compact; 0 leftover files removed")


def test_the_command_refuses_what_is_not_a_lake(cli: Cli, built: Path, tmp_path: Path) -> None:
    code, _, err = cli(built, "lake", "compact", "--store", str(tmp_path))
    assert code == 3 and err.count("\n") == 1 and "not a promptops lake" in err
    code, _, err = cli(built, "lake", "compact", "--store", str(tmp_path), "--target-size", "10KB")
    assert code == 3 and "expected a size from 1MB to 4GiB" in err
