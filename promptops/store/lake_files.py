"""Which Parquet files of a lake are live: the commit protocol every reader and writer of a lake follows.

A lake (``promptops ingest --engine spark``) is hive-partitioned Parquet, as ``promptops export`` writes, plus
two directories of commit markers. Files are written in place, never renamed (a rename is a copy and a delete
on object storage), and are live only once a marker names them:

- ``seg-<sha>_0.parquet``: the output of one input segment, live when ``_segments/<sha>.json`` exists;
- ``cmp-<id>_<n>.parquet``: a compaction's output, live when ``_compactions/<id>.json`` exists; that marker
  also names the files it replaces, which are dead from then on even while they are still on disk;
- any other name (``promptops export`` files): live as written.

One marker write commits each change, so a reader sees a segment or a compaction wholly or not at all, and a
crash at any point leaves a lake that reads as before. ``_layout.json`` records the column layout the lake's
files were written with; readers skip per-file schema reconciliation while it matches theirs.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyarrow.fs as pafs

from promptops.store.ddl import TABLE_COLUMNS

SEGMENTS_DIR = "_segments"
COMPACTIONS_DIR = "_compactions"
LAYOUT_FILE = "_layout.json"
SEGMENT_PREFIX = "seg-"
COMPACTED_PREFIX = "cmp-"
PARTITIONS: dict[str, tuple[str, ...]] = {
    "responses": ("contract", "day"),
    "diagnostics": ("contract", "day"),
    "slices": ("contract",),
    "traces": ("contract", "day"),
}
# The column layout this release writes: a lake whose _layout.json says otherwise was written (partly) by
# another release, and readers then reconcile each file's schema by name.
LAYOUT = hashlib.sha256(json.dumps(TABLE_COLUMNS, sort_keys=True).encode()).hexdigest()[:16]
MIXED = "mixed"


def filesystem(lake: str) -> tuple[pafs.FileSystem, str]:
    """The file system and base path of a lake URI (a local path, file://, s3://, gs://, hdfs://...)."""
    if "://" not in lake:
        return pafs.LocalFileSystem(), lake.rstrip("/")
    scheme, rest = lake.split("://", 1)
    if scheme in ("s3a", "s3n"):  # Hadoop's names for S3; Arrow knows it as s3
        scheme = "s3"
    fs, path = pafs.FileSystem.from_uri(f"{scheme}://{rest}")
    return fs, path.rstrip("/")


@dataclass
class LakeState:
    """The markers of a lake: committed segments and compactions, and the files compactions replaced."""

    segments: set[str] = field(default_factory=set)
    compactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    replaced: set[str] = field(default_factory=set)
    layout: str | None = None

    def live(self, relative: str) -> bool:
        """Whether the file at ``relative`` (``<table>/<partition>/<name>``) is part of the lake's content."""
        if relative in self.replaced:
            return False
        name = relative.rsplit("/", 1)[-1]
        if name.startswith(SEGMENT_PREFIX):
            return name[len(SEGMENT_PREFIX) :].rsplit("_", 1)[0] in self.segments
        if name.startswith(COMPACTED_PREFIX):
            return name[len(COMPACTED_PREFIX) :].rsplit("_", 1)[0] in self.compactions
        return True

    @property
    def uniform(self) -> bool:
        """Every file has this release's columns, so readers need not reconcile schemas file by file."""
        return self.layout == LAYOUT


def read_state(fs: pafs.FileSystem, base: str) -> LakeState:
    """The lake's markers: one listing of ``_segments/`` (names only) and the compaction markers' contents."""
    state = LakeState()
    for info in _listing(fs, f"{base}/{SEGMENTS_DIR}", recursive=False):
        if info.base_name.endswith(".json"):
            state.segments.add(info.base_name[: -len(".json")])
    for info in _listing(fs, f"{base}/{COMPACTIONS_DIR}", recursive=False):
        if info.base_name.endswith(".json"):
            marker = read_json(fs, info.path)
            state.compactions[info.base_name[: -len(".json")]] = marker
            state.replaced.update(marker.get("replaces", []))
    layout = f"{base}/{LAYOUT_FILE}"
    if fs.get_file_info(layout).type == pafs.FileType.File:
        state.layout = str(read_json(fs, layout).get("layout"))
    return state


def table_files(
    fs: pafs.FileSystem, base: str, table: str, partitions: Iterable[str] | None = None
) -> list[pafs.FileInfo]:
    """Every Parquet file of ``table`` (of the given partition paths only, e.g. ``contract=x/day=2026-11-02``),
    live or not, in path order."""
    roots = [f"{base}/{table}"] if partitions is None else [f"{base}/{table}/{p}" for p in sorted(set(partitions))]
    found = [info for root in roots for info in _listing(fs, root, recursive=True) if info.path.endswith(".parquet")]
    return sorted(found, key=lambda info: info.path)


def live_files(
    fs: pafs.FileSystem, base: str, table: str, state: LakeState, partitions: Iterable[str] | None = None
) -> list[str]:
    """The live files of ``table`` as paths relative to the lake."""
    prefix = len(base) + 1
    relative = (info.path[prefix:] for info in table_files(fs, base, table, partitions))
    return [path for path in relative if state.live(path)]


def is_lake(fs: pafs.FileSystem, base: str) -> bool:
    """Whether ``base`` holds commit markers (a lake), rather than a plain ``promptops export``."""
    return any(
        fs.get_file_info(f"{base}/{directory}").type == pafs.FileType.Directory
        for directory in (SEGMENTS_DIR, COMPACTIONS_DIR)
    )


def note_layout(fs: pafs.FileSystem, base: str, state: LakeState) -> None:
    """Before writing data files: record this release's layout, or ``mixed`` when the lake already holds files
    written by another release (or by one that kept no record)."""
    if state.layout == LAYOUT or state.layout == MIXED:
        return
    empty = state.layout is None and not state.segments and not state.compactions
    value = LAYOUT if empty else MIXED
    put_json(fs, base, LAYOUT_FILE, {"layout": value})
    state.layout = value


def read_json(fs: pafs.FileSystem, path: str) -> dict[str, Any]:
    with fs.open_input_stream(path) as stream:
        value = json.loads(stream.read().decode())
    return value if isinstance(value, dict) else {}


def put_json(fs: pafs.FileSystem, base: str, relative: str, value: dict[str, Any]) -> None:
    """Write a marker whole. Object stores publish an object only when its upload completes; a local or HDFS
    file system gets a temporary file renamed into place (a rename there is atomic and copies nothing)."""
    data = json.dumps(value, sort_keys=True).encode()
    target = f"{base}/{relative}"
    fs.create_dir(target.rsplit("/", 1)[0], recursive=True)
    if fs.type_name in ("s3", "gcs"):
        with fs.open_output_stream(target) as stream:
            stream.write(data)
        return
    temporary = f"{target}.{uuid.uuid4().hex}.tmp"
    with fs.open_output_stream(temporary) as stream:
        stream.write(data)
    fs.move(temporary, target)


def _listing(fs: pafs.FileSystem, path: str, *, recursive: bool) -> list[pafs.FileInfo]:
    selector = pafs.FileSelector(path, recursive=recursive, allow_not_found=True)
    return [info for info in fs.get_file_info(selector) if info.type == pafs.FileType.File]
