"""Ingest on Spark: response log segments -> the promptops parser on the executors -> the Parquet lake.

Stages (one Spark job each, plus a small listing):

1. identify: the segments' sha256 (local files hashed on the driver as they stream by, object-storage ones by
   Spark's ``sha2`` over ``binaryFile``); segments with a commit marker in the lake are skipped, and a segment
   whose bytes repeat an earlier one's is the same segment;
2. split (``mapInArrow``): the pending segments' lines as log records ``(segment, seg_order, source, line,
   value)``; a damaged gzip stream keeps the lines before the damage and fails its segment;
3. parse (``parse_records``, ``mapInArrow``): the promptops parser, rebuilt on each Python worker from the
   parser setup sent as JSON (``setup``), turns records into response rows (diagnostics nested), bad-record
   rows (file and line) and per-chunk counts;
4. keep the first row of each response id in the run's order (segment path order, then line), less the ids
   already committed in the partitions it writes; write each segment's output set and marker (``lake``, via
   ``applyInArrow``, one segment per call).

``ingest_to_lake`` returns the embedded ingest's report type, so the CLI prints and maps exit codes alike.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from promptops.spark import lake
from promptops.spark.setup import ParserSetup
from promptops.store import lake_files
from promptops.store.batch import RESPONSE_SCHEMA
from promptops.store.ingest import BadRecord, IngestReport, SegmentReport
from promptops.store.logs import SEGMENT_SUFFIXES, file_digest, find_segments

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Records per parse call on an executor (as the embedded ingest's chunks) and bad records listed per segment.
CHUNK_LINES = 5_000
MAX_LISTED = 100

_SPARK_TYPES = {
    pa.string(): "string",
    pa.timestamp("us"): "timestamp_ntz",
    pa.float64(): "double",
    pa.int64(): "bigint",
    pa.int32(): "int",
    pa.bool_(): "boolean",
}
RECORDS_DDL = "segment string, seg_order int, source string, line int, value binary, error string"
_DIAGNOSTICS_DDL = "array<struct<" + ", ".join(f"{n}: {_SPARK_TYPES[t]}" for n, t in lake.DIAGNOSTIC_FIELDS) + ">>"
PARSED_DDL = ", ".join(
    [
        "kind string",  # response | bad | count | slot | failed
        "segment string",
        "seg_order int",
        "records int",  # on "count" rows: the non-blank lines of a chunk; on "slot" rows: its records
        "problem string",  # on "bad" and "failed" rows
        *(f"{field.name} {_SPARK_TYPES[field.type]}" for field in RESPONSE_SCHEMA),
        f"diagnostics {_DIAGNOSTICS_DDL}",
    ]
)
_WRITTEN_DDL = (
    "segment string, records long, inserted long, bad_records long, diagnostics long, error string, "
    "bad array<struct<line: int, problem: string>>, "
    "slots array<struct<contract: string, rollout_id: string, arm: string, records: long>>"
)
_DIAGNOSTIC_TYPE = pa.list_(pa.struct([pa.field(n, t) for n, t in lake.DIAGNOSTIC_FIELDS]))
_PARSED_SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("segment", pa.string()),
        ("seg_order", pa.int32()),
        ("records", pa.int32()),
        ("problem", pa.string()),
        *RESPONSE_SCHEMA,
        ("diagnostics", _DIAGNOSTIC_TYPE),
    ]
)


@dataclass(frozen=True)
class Input:
    uri: str  # what Spark reads (file:///..., s3a://...)
    display: str  # how reports and the responses' source column name it (repo-relative for local files)


def find_inputs(paths: list[str], relative: Callable[[Path], str], spark: SparkSession) -> list[Input]:
    """The segments under ``paths`` in the embedded ingest's order: local paths by its rules (``find_segments``),
    URLs (s3a://, gs://, hdfs://...) by Spark's listing."""
    found: list[Input] = []
    for path in paths:
        if "://" in path and not path.startswith("file://"):
            listing = (
                spark.read.format("binaryFile")
                .option("recursiveFileLookup", "true")
                .load(path)
                .select("path")
                .collect()
            )
            names = sorted(row.path for row in listing if row.path.endswith(SEGMENT_SUFFIXES))
            found.extend(Input(name, name) for name in names)
            continue
        local = Path(path.removeprefix("file://"))
        found.extend(Input("file://" + s.path.resolve().as_posix(), relative(s.path)) for s in find_segments([local]))
    return found


def identify(spark: SparkSession, inputs: list[Input]) -> dict[str, str]:
    """uri -> sha256 of the segment's bytes: local files hashed here as they stream by (no Spark job, no
    segment held in memory), object-storage ones by the executors (Spark's sha2 over binaryFile)."""
    found: dict[str, str] = {}
    remote = []
    for item in inputs:
        if item.uri.startswith("file://"):
            found[item.uri] = file_digest(Path(item.uri.removeprefix("file://")))
        else:
            remote.append(item)
    if remote:
        from pyspark.sql import functions as F

        rows = (
            spark.read.format("binaryFile")
            .load([i.uri for i in remote])
            .select("path", F.sha2("content", 256).alias("sha"))
            .collect()
        )
        hashed = {_norm(row.path): str(row.sha) for row in rows}
        found.update({i.uri: hashed[_norm(i.uri)] for i in remote})
    return found


def records_frame(spark: SparkSession, pending: list[tuple[Input, str, int]]) -> DataFrame:
    """The log records of the pending segments ((input, sha, order) each), one row per line."""
    by_path = {_norm(i.uri): (sha, order, i.display) for i, sha, order in pending}
    files = spark.read.format("binaryFile").load([i.uri for i, _, _ in pending]).select("path", "content")
    return files.mapInArrow(_splitter(by_path), RECORDS_DDL)


def _splitter(
    by_path: dict[str, tuple[str, int, str]],
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def split(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path, content in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(), strict=True):
                sha, order, display = by_path[_norm(path)]
                yield from _segment_lines(sha, order, display, path.endswith(".gz"), content)

    return split


def _segment_lines(sha: str, order: int, display: str, compressed: bool, content: bytes) -> Iterator[pa.RecordBatch]:
    error: str | None = None
    if compressed:
        data, error = _gunzip(content, display)
    else:
        data = content
    lines = data.split(b"\n")
    if lines and not lines[-1]:
        lines.pop()  # the newline ending the last line
    for start in range(0, len(lines), CHUNK_LINES):
        part = lines[start : start + CHUNK_LINES]
        size = len(part)
        yield pa.record_batch(
            [
                pa.array([sha] * size, pa.string()),
                pa.array([order] * size, pa.int32()),
                pa.array([display] * size, pa.string()),
                pa.array(range(start + 1, start + size + 1), pa.int32()),
                pa.array(part, pa.binary()),
                pa.nulls(size, pa.string()),
            ],
            names=["segment", "seg_order", "source", "line", "value", "error"],
        )
    if error is not None:
        yield pa.record_batch(
            [
                pa.array([sha]),
                pa.array([order], pa.int32()),
                pa.array([display]),
                pa.array([0], pa.int32()),
                pa.nulls(1, pa.binary()),
                pa.array([error]),
            ],
            names=["segment", "seg_order", "source", "line", "value", "error"],
        )


def _gunzip(content: bytes, display: str) -> tuple[bytes, str | None]:
    """The decompressed bytes read before any damage, and the damage (the embedded ingest's message)."""
    stream = zlib.decompressobj(wbits=31)
    out: list[bytes] = []
    data = content
    try:
        while data:
            out.append(stream.decompress(data))
            data = stream.unused_data
            if data:
                stream = zlib.decompressobj(wbits=31)  # a multi-member gzip file
        if not stream.eof:
            raise EOFError("Compressed file ended before the end-of-stream marker was reached")
    except (zlib.error, EOFError) as problem:
        text = b"".join(out)
        cut = text.rfind(b"\n") + 1  # only whole lines count as read
        return text[:cut], f"{display}: cannot read: {problem}"
    return b"".join(out), None


def parse_records(records: DataFrame, setup: ParserSetup) -> DataFrame:
    """Parse a DataFrame of log records with the promptops parser on the executors.

    ``records`` has ``source`` (how the log is named), ``line`` (int) and ``value`` (the JSON line, binary or
    string); ``segment``/``seg_order``/``error`` are optional. The result has PARSED_DDL's columns: one
    ``response`` row per stored response (its diagnostics nested), one ``bad`` row per bad record (source,
    source_line, problem), and ``count`` rows carrying how many non-blank records each chunk held.
    """
    from pyspark.sql import functions as F

    columns = set(records.columns)
    frame = records
    if "segment" not in columns:
        frame = frame.withColumn("segment", F.col("source"))
    if "seg_order" not in columns:
        frame = frame.withColumn("seg_order", F.lit(0))
    if "error" not in columns:
        frame = frame.withColumn("error", F.lit(None).cast("string"))
    frame = frame.select(
        "segment",
        F.col("seg_order").cast("int"),
        F.col("source").cast("string"),
        F.col("line").cast("int"),
        F.col("value").cast("binary"),
        "error",
    )
    return frame.mapInArrow(_parser(setup.dumps()), PARSED_DDL)


def _parser(setup_json: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    def parse(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from promptops.spark.setup import parser_cache
        from promptops.store.chunks import parse_chunk

        parsers = parser_cache(setup_json)
        for batch in batches:
            data = batch.to_pydict()
            rows = len(data["segment"])
            start = 0
            while start < rows:  # runs of one segment and source
                end = start
                key = (data["segment"][start], data["source"][start])
                while end < rows and (data["segment"][end], data["source"][end]) == key:
                    end += 1
                segment, source = key
                order = data["seg_order"][start]
                lines = [(data["line"][i], data["value"][i]) for i in range(start, end) if data["value"][i] is not None]
                failures = [data["error"][i] for i in range(start, end) if data["error"][i] is not None]
                result = parse_chunk(lines, source, parsers)
                yield _parsed(segment, order, source, result, failures)
                start = end

    return parse


def _parsed(segment: str, order: int, source: str, result: Any, failures: list[str]) -> pa.RecordBatch:
    responses: pa.Table = result.responses
    n = responses.num_rows
    flat = result.diagnostics
    counts = responses["n_diagnostics"].to_pylist()
    offsets = [0]
    for count in counts:
        offsets.append(offsets[-1] + count)
    struct = pa.StructArray.from_arrays(
        [flat[name].combine_chunks() if flat.num_rows else pa.array([], t) for name, t in lake.DIAGNOSTIC_FIELDS],
        names=[name for name, _ in lake.DIAGNOSTIC_FIELDS],
    )
    diagnostics = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), struct)
    bad = [(line, problem) for line, problem in result.bad]
    # Records read per (contract, rollout_id, arm), for the ingest's warnings about unknown names.
    slots = sorted(result.slots.items(), key=lambda item: tuple("" if v is None else v for v in item[0]))
    extra = len(bad) + 1 + len(slots) + len(failures)  # bad rows, one count row, slot rows, failure rows
    kinds = ["response"] * n + ["bad"] * len(bad) + ["count"] + ["slot"] * len(slots) + ["failed"] * len(failures)
    problems = [None] * n + [p for _, p in bad] + [None] * (1 + len(slots)) + failures
    records = [None] * (n + len(bad)) + [result.records] + [count for _, count in slots] + [None] * len(failures)
    columns: dict[str, pa.Array] = {
        "kind": pa.array(kinds, pa.string()),
        "segment": pa.array([segment] * (n + extra), pa.string()),
        "seg_order": pa.array([order] * (n + extra), pa.int32()),
        "records": pa.array(records, pa.int32()),
        "problem": pa.array(problems, pa.string()),
    }
    slot_names = {"contract": 0, "rollout_id": 1, "arm": 2}
    for field in RESPONSE_SCHEMA:
        column = responses[field.name].combine_chunks() if n else pa.array([], field.type)
        if field.name == "source":
            tail = pa.array([source] * extra, field.type)
        elif field.name == "source_line":
            tail = pa.array([line for line, _ in bad] + [None] * (1 + len(slots) + len(failures)), field.type)
        elif field.name in slot_names:
            at = slot_names[field.name]
            values = [key[at] for key, _ in slots]
            tail = pa.array([None] * (len(bad) + 1) + values + [None] * len(failures), field.type)
        else:
            tail = pa.nulls(extra, field.type)
        columns[field.name] = pa.concat_arrays([column, tail])
    columns["diagnostics"] = pa.concat_arrays([diagnostics, pa.nulls(extra, _DIAGNOSTIC_TYPE)])
    return pa.RecordBatch.from_pydict(columns, schema=_PARSED_SCHEMA)


def keep_first(parsed: DataFrame, existing: DataFrame | None) -> DataFrame:
    """Each response id's first row in the run's order (segment order, then line), less ids in ``existing``;
    the other rows (bad records, counts, failures) as they are."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    key = F.coalesce(
        F.col("response_id"), F.concat_ws(":", F.col("kind"), F.col("segment"), F.monotonically_increasing_id())
    )
    order = Window.partitionBy(key).orderBy("seg_order", "source_line")
    kept = parsed.withColumn("_rank", F.row_number().over(order)).filter("_rank = 1").drop("_rank")
    if existing is not None:
        kept = kept.join(existing, on="response_id", how="left_anti")
    return kept


def _writer(
    lake_uri: str, sources: dict[str, tuple[str, int]], after_file: Callable[[str], None] | None
) -> Callable[[pa.Table], pa.Table]:
    def write(table: pa.Table) -> pa.Table:
        kinds = table["kind"].to_pylist()
        segment = table["segment"][0].as_py()
        responses = table.filter(pa.array([k == "response" for k in kinds]))
        bad_rows = table.filter(pa.array([k == "bad" for k in kinds])).sort_by("source_line")
        failures = [p for k, p in zip(kinds, table["problem"].to_pylist(), strict=True) if k == "failed"]
        records = sum(r or 0 for k, r in zip(kinds, table["records"].to_pylist(), strict=True) if k == "count")
        slot_rows = table.filter(pa.array([k == "slot" for k in kinds]))
        slots = [
            {"contract": c, "rollout_id": r, "arm": a, "records": n}
            for c, r, a, n in zip(
                *(slot_rows[name].to_pylist() for name in ("contract", "rollout_id", "arm", "records")), strict=True
            )
        ]
        columns = [field.name for field in RESPONSE_SCHEMA] + ["diagnostics"]
        inserted, diagnostics, files = lake.write_segment(lake_uri, segment, responses.select(columns), after_file)
        bad = list(zip(bad_rows["source_line"].to_pylist(), bad_rows["problem"].to_pylist(), strict=True))
        source, size = sources[segment]
        if not failures:  # a damaged segment keeps what was read but is not remembered, as in the embedded store
            lake.write_marker(lake_uri, segment, _marker(source, size, records, inserted, len(bad), diagnostics, files))
        return pa.table(
            {
                "segment": [segment],
                "records": pa.array([records], pa.int64()),
                "inserted": pa.array([inserted], pa.int64()),
                "bad_records": pa.array([len(bad)], pa.int64()),
                "diagnostics": pa.array([diagnostics], pa.int64()),
                "error": pa.array([failures[0] if failures else None], pa.string()),
                "bad": pa.array(
                    [[{"line": line, "problem": problem} for line, problem in bad[:MAX_LISTED]]],
                    pa.list_(pa.struct([("line", pa.int32()), ("problem", pa.string())])),
                ),
                "slots": pa.array(
                    [slots],
                    pa.list_(
                        pa.struct(
                            [
                                ("contract", pa.string()),
                                ("rollout_id", pa.string()),
                                ("arm", pa.string()),
                                ("records", pa.int64()),
                            ]
                        )
                    ),
                ),
            }
        )

    return write


def ingest_to_lake(
    spark: SparkSession,
    paths: list[str],
    lake_uri: str,
    setup: ParserSetup,
    *,
    relative: Callable[[Path], str],
    on_bad: Callable[[BadRecord], None] | None = None,
    after_file: Callable[[str], None] | None = None,
) -> IngestReport:
    """Parse the logs at ``paths`` on Spark into the lake at ``lake_uri``; the embedded ingest's report.

    Segments already committed to the lake are skipped; the rest are parsed, and each is written as one
    output set with its marker (``promptops.spark.lake``). Bad records go to ``on_bad`` (at most
    MAX_LISTED per segment; all are counted). ``after_file`` is a test hook sent to the writers (crash tests
    kill a writer there).
    """
    inputs = find_inputs(paths, relative, spark)
    shas = identify(spark, inputs)
    fs, base = lake_files.filesystem(lake_uri)
    state = lake_files.read_state(fs, base)
    done = state.segments
    report = IngestReport()
    pending: list[tuple[Input, str, int]] = []
    claimed: set[str] = set()
    sizes = _sizes(spark, inputs)
    for order, item in enumerate(inputs):
        sha = shas[item.uri]
        if sha in done or sha in claimed:
            report.segments.append(SegmentReport(item.display, skipped=True))
            continue
        claimed.add(sha)
        pending.append((item, sha, order))
    if not pending:
        return report
    lake_files.note_layout(fs, base, state)
    from pyspark import StorageLevel

    # Kept for two passes (the partitions it writes, then the write), so the logs are parsed once.
    parsed = parse_records(records_frame(spark, pending), setup).persist(StorageLevel.MEMORY_AND_DISK)
    try:
        existing = _existing_ids(spark, lake_uri, state, _partitions(parsed))
        kept = keep_first(parsed, existing)
        sources = {sha: (item.display, sizes.get(item.uri, 0)) for item, sha, _ in pending}
        writer = _writer(lake_uri, sources, after_file)
        written = {row.segment: row for row in kept.groupBy("segment").applyInArrow(writer, _WRITTEN_DDL).collect()}
    finally:
        parsed.unpersist()
    for item, sha, _ in pending:
        row = written.get(sha)
        segment = SegmentReport(item.display)
        if row is None:  # no records at all: nothing to write, remembered all the same
            lake.write_marker(lake_uri, sha, _marker(item.display, sizes.get(item.uri, 0)))
        else:
            segment.records = int(row.records)
            segment.inserted = int(row.inserted)
            segment.bad_records = int(row.bad_records)
            segment.duplicates = segment.records - segment.bad_records - segment.inserted
            segment.diagnostics = int(row.diagnostics)
            segment.error = row.error
            for bad in row.bad:
                record = BadRecord(item.display, int(bad.line), str(bad.problem))
                report.add_bad(record)
                if on_bad is not None:
                    on_bad(record)
            slots: dict[tuple[str, str | None, str | None], int] = {}
            for slot in row.slots:
                key = (str(slot.contract), slot.rollout_id, slot.arm)
                slots[key] = slots.get(key, 0) + int(slot.records)
            report.add_slots(slots)
        report.segments.append(segment)
    return report


def _marker(
    source: str,
    size: int,
    records: int = 0,
    inserted: int = 0,
    bad_records: int = 0,
    diagnostics: int = 0,
    files: list[str] | None = None,
) -> dict[str, Any]:
    """A segment's marker in the lake: what it held and what was written of it (zeros: it held no records)."""
    return {
        "source": source,
        "size": size,
        "records": records,
        "inserted": inserted,
        "bad_records": bad_records,
        "diagnostics": diagnostics,
        "files": files or [],
    }


def _partitions(parsed: DataFrame) -> list[str]:
    """The responses partitions (``contract=<name>/day=<date>``) the parsed rows fall in."""
    from pyspark.sql import functions as F

    rows = parsed.filter("kind = 'response'").select("contract", F.to_date("ts").alias("day")).distinct().collect()
    return [f"contract={row.contract}/day={row.day.isoformat()}" for row in rows if row.day is not None]


def _existing_ids(
    spark: SparkSession, lake_uri: str, state: lake_files.LakeState, partitions: list[str]
) -> DataFrame | None:
    """The response ids committed in the partitions this run writes: a duplicate of a response carries its
    time, so it falls in the same partition, and the check never reads the rest of the lake's history."""
    from pyspark.sql import functions as F

    fs, base = lake_files.filesystem(lake_uri)
    keep = lake_files.live_files(fs, base, "responses", state, partitions)
    if not keep:
        return None
    root = lake_uri.rstrip("/") if "://" in lake_uri else "file://" + Path(base).resolve().as_posix()
    return spark.read.parquet(*(f"{root}/{name}" for name in keep)).select(F.col("response_id")).distinct()


def _sizes(spark: SparkSession, inputs: list[Input]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for item in inputs:
        if item.uri.startswith("file://"):
            try:
                sizes[item.uri] = Path(item.uri.removeprefix("file://")).stat().st_size
            except OSError:
                continue
    return sizes


def _norm(uri: str) -> str:
    """Spark names a local file file:/a/b; Path.as_uri() says file:///a/b."""
    return uri.replace("file:///", "file:/", 1) if uri.startswith("file:///") else uri
