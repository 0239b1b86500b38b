"""The store's views and rate queries on Spark SQL, generated from their one DuckDB definition.

``ddl.VIEWS`` and every query the rates, the gate and the report run are DuckDB SQL. Here sqlglot turns
each statement into Spark SQL at run time (QUALIFY becomes a filtered subquery, FILTER clauses, casts and
regular expressions get Spark's spelling); the ``$name`` parameters become typed literals first. No rate is
written twice: a change to a view or a query reaches both engines.

``open_lake`` gives a connection-like object (``execute(sql, params).fetchall()/fetchone()``), through
which ``promptops.store.source.SqlSource`` asks the store's questions (``promptops.spark.options.lake_source``).
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlglot
from sqlglot import exp

from promptops.core.errors import PromptopsError
from promptops.store import ddl

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

TABLES = ("responses", "diagnostics", "slices", "traces")
_SPARK_TYPES = {
    "VARCHAR": "STRING",
    "UBIGINT": "DECIMAL(20,0)",  # Spark has no unsigned type; Parquet UINT64 reads as this
    "TIMESTAMP": "TIMESTAMP_NTZ",
    "INTEGER": "INT",
    "BIGINT": "BIGINT",
    "DOUBLE": "DOUBLE",
    "BOOLEAN": "BOOLEAN",
}


def to_spark(sql: str, params: dict[str, Any] | None = None) -> str:
    """One DuckDB statement as Spark SQL, with ``$name`` parameters bound to literals."""
    tree = sqlglot.parse_one(sql, read="duckdb")
    if params:
        tree = tree.transform(lambda node: _bind(node, params))
    if isinstance(tree, exp.Create) and str(tree.args.get("kind", "")).upper() == "VIEW":
        tree.set("properties", exp.Properties(expressions=[exp.TemporaryProperty()]))
    return tree.sql(dialect="spark")


def _bind(node: exp.Expression, params: dict[str, Any]) -> exp.Expression:
    if isinstance(node, exp.Parameter | exp.Placeholder):
        name = node.name if isinstance(node, exp.Placeholder) else node.this.name
        if name not in params:
            raise PromptopsError(f"query parameter ${name} has no value")
        return _literal(params[name])
    return node


def _literal(value: Any) -> exp.Expression:
    if value is None:
        return exp.Null()
    if isinstance(value, bool):
        return exp.Boolean(this=value)
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    if isinstance(value, datetime):  # the store's times are naive UTC
        naive = value if value.tzinfo is None else value.astimezone(UTC).replace(tzinfo=None)
        return exp.cast(exp.Literal.string(naive.isoformat(sep=" ")), exp.DataType.build("TIMESTAMP_NTZ"))
    if isinstance(value, date):
        return exp.cast(exp.Literal.string(value.isoformat()), exp.DataType.build("DATE"))
    return exp.Literal.string(str(value))


class _Result:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self._rows = rows

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._rows

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows[0] if self._rows else None


class SparkLake:
    """The lake's tables and the rate views as Spark temporary views, queried with DuckDB SQL."""

    holds_feedback = False  # findings and feedback stay in the store: SqlSource.feedback refuses in one line

    def __init__(self, spark: SparkSession, views: dict[str, str]) -> None:
        self.spark = spark
        self._views = views  # temporary view name -> the name it was registered under

    def execute(self, sql: str, params: dict[str, Any] | None = None) -> _Result:
        frame = self.spark.sql(self._rename(to_spark(sql, params)))
        return _Result([tuple(_plain(value) for value in row) for row in _ntz(frame).collect()])

    def _rename(self, sql: str) -> str:
        tree = sqlglot.parse_one(sql, read="spark")
        for table in tree.find_all(exp.Table):
            if not table.db and table.name in self._views:
                table.set("this", exp.to_identifier(self._views[table.name]))
        return tree.sql(dialect="spark")

    def close(self) -> None:
        for name in self._views.values():
            self.spark.catalog.dropTempView(name)


def open_lake(spark: SparkSession, lake_uri: str, *, display: str) -> SparkLake:
    """Temporary views over the lake at ``lake_uri`` (tables with exactly the store's columns; a table without
    files reads as empty), and the rate views over them, under names unique to this connection."""
    import pyarrow.fs as pafs
    from pyspark.errors import AnalysisException

    from promptops.store import lake_files

    fs, base = lake_files.filesystem(lake_uri)
    state = lake_files.read_state(fs, base)

    if fs.get_file_info(f"{base}/responses").type != pafs.FileType.Directory:
        raise PromptopsError(f"{display}: not a promptops Parquet export (no responses/ directory)")
    suffix = f"_po{id(object()):x}"
    names = {name: f"{name}{suffix}" for name in (*TABLES, *_view_names())}
    try:
        for table in TABLES:
            frame = _table(spark, lake_uri, lake_files.live_files(fs, base, table, state), table, state.uniform)
            frame.createOrReplaceTempView(names[table])
        connection = SparkLake(spark, names)
        for statement in ddl.VIEWS:
            spark.sql(connection._rename(to_spark(statement)))
    except AnalysisException as problem:
        raise PromptopsError(f"{display}: cannot read the lake: {str(problem).splitlines()[0]}") from None
    return connection


def _view_names() -> list[str]:
    return [sqlglot.parse_one(statement, read="duckdb").this.name for statement in ddl.VIEWS]


def _table(spark: SparkSession, lake_uri: str, files: list[str], table: str, uniform: bool) -> DataFrame:
    """The table over its live files (the lake's commit protocol), with exactly the store's columns."""
    from pyspark.sql import functions as F

    columns = ddl.TABLE_COLUMNS[table]
    if not files:
        typed = ", ".join(f"CAST(NULL AS {_SPARK_TYPES[kind]}) AS {name}" for name, kind in columns)
        return spark.sql(f"SELECT {typed} WHERE false")
    root = lake_uri.rstrip("/") if "://" in lake_uri else "file://" + Path(lake_uri).resolve().as_posix()
    reader = spark.read.option("basePath", f"{root}/{table}")
    if not uniform:  # files written by other releases: reconcile their schemas by column name
        reader = reader.option("mergeSchema", "true")
    frame = reader.parquet(*(f"{root}/{name}" for name in files))
    selected = frame.select(*(F.col(name).cast(_SPARK_TYPES[kind]).alias(name) for name, kind in columns))
    return selected.distinct() if table == "slices" else selected  # segments and stores share slices


def _ntz(frame: DataFrame) -> DataFrame:
    """Timestamps (date_trunc yields Spark's zoned kind) as UTC wall-clock values, as DuckDB returns them:
    collecting a zoned timestamp would shift it to the Python worker's local zone."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    fields = frame.schema.fields
    if not any(isinstance(field.dataType, TimestampType) for field in fields):
        return frame
    frame = frame.toDF(*(f"c{i}" for i in range(len(fields))))  # result names may repeat
    return frame.select(
        *(
            F.col(f"c{i}").cast("timestamp_ntz") if isinstance(field.dataType, TimestampType) else F.col(f"c{i}")
            for i, field in enumerate(fields)
        )
    )


def _plain(value: Any) -> Any:
    from decimal import Decimal

    if isinstance(value, Decimal):
        return int(value)
    return value
