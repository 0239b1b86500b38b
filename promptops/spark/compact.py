"""Compaction: a lake's closed partitions rewritten into a few files of a target size, sorted by rollout and time.

Each input segment leaves one small file per table and partition, so a lake fed all day holds thousands of them
and every query pays for opening each. Compaction rewrites a partition's live files (``promptops.store.
lake_files``) into ``ceil(bytes / target)`` files on Spark (a range partitioning by the sort key, each task
writing one file in place), then commits them with one marker, ``_compactions/<id>.json``, that names the
new files and the files they replace. Readers follow the markers, so they see the old files or the new, never
both and never neither; a crash before the marker leaves unreferenced new files, one after it leaves dead old
ones, and the next run removes either. The id is a hash of the replaced files, so a re-run after a crash
writes the same names.

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

from promptops.files import directory_lock
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
    a day always qualify) and that holds more live files than its size needs. ``step`` (tests only) is called
    with the name of each step once it is done; crash tests kill the process there."""
    fs, base = lake_files.filesystem(lake_uri)
    with _lock(lake_uri):
        report = CompactReport(removed=_recover(fs, base, step))
        state = lake_files.read_state(fs, base)
        for table in SORT_KEYS:
            for partition, files in _candidates(fs, base, table, state, before, target_bytes):
                report.compacted.append(_rewrite(spark, lake_uri, fs, base, table, partition, files, target_bytes, step))
                report.removed += _remove(fs, base, [name for name, _ in files], step)
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
        if len(files) > _file_count(sum(size for _, size in files), target):
            yield partition, files


def _rewrite(
    spark: SparkSession,
    lake_uri: str,
    fs: pafs.FileSystem,
    base: str,
    table: str,
    partition: str,
    files: list[tuple[str, int]],
    target: int,
    step: Callable[[str], None] | None,
) -> Compacted:
    names = [name for name, _ in files]
    identity = hashlib.sha256("\n".join(sorted(names)).encode()).hexdigest()[:24]
    with fs.open_input_file(f"{base}/{names[0]}") as handle:
        schema = pq.read_schema(handle)
    root = lake_uri.rstrip("/") if "://" in lake_uri else "file://" + Path(base).resolve().as_posix()
    frame = spark.read.option("basePath", f"{root}/{table}").parquet(*(f"{root}/{name}" for name in names))
    frame = frame.select(*schema.names)  # without the partition columns, which the path carries
    count = _file_count(sum(size for _, size in files), target)
    keys = [key for key in SORT_KEYS[table] if key in schema.names]
    ordered = (frame.repartitionByRange(count, *keys) if count > 1 else frame.coalesce(1)).sortWithinPartitions(*keys)
    directory = f"{base}/{table}/{partition}"
    writer = _writer(lake_uri, directory, f"{lake_files.COMPACTED_PREFIX}{identity}", schema.serialize().to_pybytes())
    written = ordered.mapInArrow(writer, _WRITTEN_DDL).collect()
    new = sorted(f"{table}/{partition}/{row.file}" for row in written)
    rows = sum(int(row.rows) for row in written)
    _notify(step, f"written {table}/{partition}")
    marker = {"table": table, "partition": partition, "files": new, "replaces": sorted(names), "rows": rows}
    lake_files.put_json(fs, base, f"{lake_files.COMPACTIONS_DIR}/{identity}.json", marker)
    _notify(step, f"committed {table}/{partition}")
    return Compacted(table, partition, len(names), len(new), rows)


def _writer(
    lake_uri: str, directory: str, stem: str, schema_bytes: bytes
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        schema = pa.ipc.read_schema(pa.py_buffer(schema_bytes))
        fs, _ = lake_files.filesystem(lake_uri)
        context = TaskContext.get()
        name = f"{stem}_{context.partitionId() if context else 0}.parquet"
        rows = 0
        stream: Any = None
        writer: pq.ParquetWriter | None = None
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if writer is None:  # written in place: the compaction's marker commits it
                    stream = fs.open_output_stream(f"{directory}/{name}")
                    writer = pq.ParquetWriter(stream, schema)
                # Spark hands back its own types (a decimal for UINT64, a zoned timestamp): the files keep theirs.
                writer.write_table(pa.Table.from_batches([batch]).select(schema.names).cast(schema))
                rows += batch.num_rows
        finally:
            if writer is not None:
                writer.close()
            if stream is not None:
                stream.close()
        if writer is not None:
            yield pa.RecordBatch.from_pydict({"file": [name], "rows": [rows]})

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
