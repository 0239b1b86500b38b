"""Compaction: a lake's closed partitions rewritten into a few files of a target size, sorted by rollout and time.

Each input segment leaves one small file per table and partition, so a lake fed all day holds thousands of them
and every query pays for opening each. Compaction rewrites a partition's live files (``promptops.store.
lake_files``) into about ``ceil(bytes / target)`` files, sorted by rollout and time: one Spark job per table, a
range partitioning by partition and sort key, each task writing its files in place. One marker per table,
``_compactions/<id>.json``, commits them: it names the new files and the files they replace. Readers follow the
markers, so they see the old files or the new, never both and never neither; a crash before the marker leaves
unreferenced new files, one after it dead old ones, and the next run removes either. The id is a hash of the
replaced files, so a re-run after a crash writes the same names.

One compactor runs at a time: on a local lake an exclusive lock on the lake directory guarantees it; on object
storage the job that runs it (a daily schedule) must.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, nullcontext
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from promptops.core.files import directory_lock
from promptops.store import lake_files

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_TARGET = 512 * 1024 * 1024
# The order rows take in each table's compacted files: rollout and time first, then a key for determinism.
SORT_KEYS: dict[str, tuple[str, ...]] = {
    "responses": ("rollout_id", "ts", "response_id"),
    "diagnostics": ("ts", "response_id", "seq"),
    "slices": ("slice_key",),
    "traces": ("started_at", "run_id", "attempt"),
}
_WRITTEN_DDL = "file string, rows long"
_PARTITION = "_partition"


@dataclass(frozen=True)
class Compacted:
    table: str
    partition: str
    replaced: int
    files: int
    rows: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CompactReport:
    compacted: list[Compacted] = field(default_factory=list)
    removed: int = 0  # files a committed or abandoned compaction left behind, deleted by this run

    def to_dict(self) -> dict[str, Any]:
        return {"compacted": [item.to_dict() for item in self.compacted], "removed": self.removed}


def compact(
    spark: SparkSession,
    lake_uri: str,
    *,
    before: date,
    target_bytes: int = DEFAULT_TARGET,
    step: Callable[[str], None] | None = None,
) -> CompactReport:
    """Compact every partition of the lake whose day is before ``before`` (the closed ones; partitions without
    a day always qualify) and that holds more live files than its size needs: one Spark job and one marker per
    table. ``step`` (tests only) is called with the name of each step once it is done; crash tests stop there."""
    fs, base = lake_files.filesystem(lake_uri)
    with _lock(lake_uri):
        report = CompactReport(removed=_recover(fs, base, step))
        state = lake_files.read_state(fs, base)
        for table in SORT_KEYS:
            candidates = dict(_candidates(fs, base, table, state, before, target_bytes))
            if candidates:
                report.compacted.extend(_rewrite(spark, lake_uri, fs, base, table, candidates, target_bytes, step))
                replaced = [name for files in candidates.values() for name, _ in files]
                report.removed += _remove(fs, base, replaced, step)
    return report


def _lock(lake_uri: str) -> AbstractContextManager[None]:
    if "://" in lake_uri and not lake_uri.startswith("file://"):
        return nullcontext()
    directory = Path(lake_uri.removeprefix("file://"))
    return directory_lock(directory, directory.as_posix(), wait=False)


def _recover(fs: pafs.FileSystem, base: str, step: Callable[[str], None] | None) -> int:
    """Delete what earlier runs left: files replaced by a committed compaction, and the output of one that died
    before its marker."""
    state = lake_files.read_state(fs, base)
    leftovers: list[str] = []
    for table in SORT_KEYS:
        for info in lake_files.table_files(fs, base, table):
            relative = info.path[len(base) + 1 :]
            name = info.base_name
            abandoned = name.startswith(lake_files.COMPACTED_PREFIX) and not state.live(relative)
            if relative in state.replaced or abandoned:
                leftovers.append(relative)
    return _remove(fs, base, leftovers, step)


def _candidates(
    fs: pafs.FileSystem, base: str, table: str, state: lake_files.LakeState, before: date, target: int
) -> Iterator[tuple[str, list[tuple[str, int]]]]:
    """(partition, [(live file, size)]) of each closed partition with more files than its size needs."""
    prefix = len(base) + 1
    by_partition: dict[str, list[tuple[str, int]]] = {}
    for info in lake_files.table_files(fs, base, table):
        relative = info.path[prefix:]
        if state.live(relative):
            partition = relative[len(table) + 1 :].rsplit("/", 1)[0]
            by_partition.setdefault(partition, []).append((relative, int(info.size or 0)))
    for partition, files in sorted(by_partition.items()):
        day = _day(partition)
        if day is not None and day >= before:
            continue
        if len(files) > _file_count(sum(size for _, size in files), target) and not _compacted(files):
            yield partition, files


def _rewrite(
    spark: SparkSession,
    lake_uri: str,
    fs: pafs.FileSystem,
    base: str,
    table: str,
    candidates: dict[str, list[tuple[str, int]]],
    target: int,
    step: Callable[[str], None] | None,
) -> list[Compacted]:
    """Rewrite the candidate partitions of ``table``: those that fit one file in one job (hashed by partition,
    so each lands whole in one task), each larger one in a job of its own (a range partitioning by its sort
    key into as many tasks as it needs files). Then one marker commits every new file of the table."""
    names = sorted(name for files in candidates.values() for name, _ in files)
    identity = hashlib.sha256("\n".join(names).encode()).hexdigest()[:24]
    with fs.open_input_file(f"{base}/{names[0]}") as handle:
        schema = pq.read_schema(handle)
    keys = [key for key in SORT_KEYS[table] if key in schema.names]
    needed = {partition: _file_count(sum(size for _, size in files), target) for partition, files in candidates.items()}
    # One job for the partitions that fit one file, then one per larger partition.
    jobs = [(sorted(p for p, n in needed.items() if n == 1), 0)]
    jobs += [([p], n) for p, n in sorted(needed.items()) if n > 1]
    written = []
    for index, (partitions, count) in enumerate(jobs):
        if not partitions:
            continue
        frame = _frame(spark, lake_uri, base, table, [name for p in partitions for name, _ in candidates[p]], schema)
        spread = frame.repartitionByRange(count, *keys) if count else frame.repartition(len(partitions), _PARTITION)
        ordered = spread.sortWithinPartitions(_PARTITION, *keys)
        stem = f"{lake_files.COMPACTED_PREFIX}{identity}_{index}-"
        writer = _writer(lake_uri, f"{base}/{table}", stem, schema.serialize().to_pybytes())
        written.extend(ordered.mapInArrow(writer, _WRITTEN_DDL).collect())
    new = sorted(f"{table}/{row.file}" for row in written)
    _notify(step, f"written {table}")
    marker = {"table": table, "files": new, "replaces": names, "rows": sum(int(row.rows) for row in written)}
    lake_files.put_json(fs, base, f"{lake_files.COMPACTIONS_DIR}/{identity}.json", marker)
    _notify(step, f"committed {table}")
    rows: dict[str, int] = {}
    files: dict[str, int] = {}
    for row in written:
        partition = str(row.file).rsplit("/", 1)[0]
        rows[partition] = rows.get(partition, 0) + int(row.rows)
        files[partition] = files.get(partition, 0) + 1
    return [
        Compacted(table, partition, len(candidates[partition]), files.get(partition, 0), rows.get(partition, 0))
        for partition in sorted(candidates)
    ]


def _frame(spark: SparkSession, lake_uri: str, base: str, table: str, names: list[str], schema: pa.Schema) -> Any:
    """The rows of ``names`` with the partition each came from, spelled as its directory (the path keeps the
    writer's escaping), and the files' columns."""
    from pyspark.sql import functions as F

    root = lake_uri.rstrip("/") if "://" in lake_uri else "file://" + Path(base).resolve().as_posix()
    frame = spark.read.option("basePath", f"{root}/{table}").parquet(*(f"{root}/{name}" for name in names))
    directory = F.regexp_extract(F.input_file_name(), f"/{table}/(.*)/[^/]*$", 1).alias(_PARTITION)
    return frame.select(directory, *schema.names)


def _writer(
    lake_uri: str, table_dir: str, stem: str, schema_bytes: bytes
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
        fs, _ = lake_files.filesystem(lake_uri)
        context = TaskContext.get()
        name = f"{stem}{context.partitionId() if context else 0}.parquet"
        open_: dict[str, Any] = {}  # partition -> (stream, writer): the rows come sorted by partition
        rows: dict[str, int] = {}
        try:
            for batch in batches:
                table = pa.Table.from_batches([batch])
                partitions = table[_PARTITION].to_pylist()
                start = 0
                while start < len(partitions):
                    partition = partitions[start]
                    end = start
                    while end < len(partitions) and partitions[end] == partition:
                        end += 1
                    if partition not in open_:  # written in place: the compaction's marker commits it
                        stream = fs.open_output_stream(f"{table_dir}/{partition}/{name}")
                        open_[partition] = (stream, pq.ParquetWriter(stream, schema))
                    # Spark hands back its own types (a decimal for UINT64, a zoned timestamp): keep the files'.
                    part = table.slice(start, end - start).select(schema.names).cast(schema)
                    open_[partition][1].write_table(part)
                    rows[partition] = rows.get(partition, 0) + (end - start)
                    start = end
        finally:
            for stream, writer in open_.values():
                writer.close()
                stream.close()
        if rows:
            files = [f"{partition}/{name}" for partition in rows]
            yield pa.RecordBatch.from_pydict({"file": files, "rows": list(rows.values())})

    return write


def _remove(fs: pafs.FileSystem, base: str, names: list[str], step: Callable[[str], None] | None) -> int:
    removed = 0
    for name in names:
        try:
            fs.delete_file(f"{base}/{name}")
        except FileNotFoundError:
            continue
        removed += 1
        _notify(step, f"removed {name}")
    return removed


def _compacted(files: list[tuple[str, int]]) -> bool:
    """Whether the files are all one compaction's output: that partition is done until new files arrive (its
    files may count one more than its size asks where a range boundary fell)."""
    ids = {name.rsplit("/", 1)[-1].split("_", 1)[0] for name, _ in files}
    return len(ids) == 1 and next(iter(ids)).startswith(lake_files.COMPACTED_PREFIX)


def _file_count(size: int, target: int) -> int:
    return max(1, math.ceil(size / max(target, 1)))


def _day(partition: str) -> date | None:
    for part in partition.split("/"):
        if part.startswith("day="):
            return date.fromisoformat(part[len("day=") :])
    return None


def _notify(step: Callable[[str], None] | None, name: str) -> None:
    if step is not None:
        step(name)
