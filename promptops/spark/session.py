"""Starting (or reusing) the SparkSession the engine runs on, with a one-line error when Spark cannot start."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from promptops.core import DISTRIBUTION
from promptops.core.errors import PromptopsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

INSTALL_HINT = f"the Spark engine needs pyspark and Java 17+: pip install '{DISTRIBUTION}[spark]'"

# Settings the engine relies on whatever the cluster's defaults: times are UTC wall-clock values (the store's
# TIMESTAMP columns), hive partition values stay strings (a contract named "2025" is not a number), and Arrow
# carries rows between the JVM and the Python workers.
_CONFIG: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
    "spark.sql.parquet.inferTimestampNTZ.enabled": "true",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
}


class SparkUnavailableError(PromptopsError):
    """pyspark is not installed, or Spark (its JVM) cannot start."""


def require_pyspark() -> None:
    """Raise SparkUnavailableError (one line: how to install) when the spark extra is missing."""
    try:
        import pyspark  # noqa: F401
        import sqlglot  # noqa: F401
    except ImportError:
        raise SparkUnavailableError(INSTALL_HINT) from None


def spark_session(
    master: str | None = None, *, app_name: str = "promptops", config: dict[str, str] | None = None
) -> SparkSession:
    """The active SparkSession, or a new one on ``master`` (None: spark-submit's or local[*]).

    An active session is reused as it is (its master included): under spark-submit, and in tests that share
    one session, the session already running is the one to use.
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        _settle(active)
        return active
    builder: Any = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    if master is None or master.startswith("local"):
        # Local Python workers run this interpreter (and so see this promptops); a cluster's executors use
        # the cluster's Python, with the promptops wheel installed there (docs/spark.md).
        # PySpark takes the workers' interpreter from PYSPARK_PYTHON only (the default is whatever python3
        # is first on PATH), so a local session sets it unless the caller already has.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = builder.config("spark.pyspark.python", sys.executable)
        # In local mode the driver's JVM is the executor too, and each task holds one whole segment.
        builder = builder.config("spark.driver.memory", "2g")
    for key, value in {**_CONFIG, **(config or {})}.items():
        builder = builder.config(key, value)
    try:
        session: SparkSession = builder.getOrCreate()
    except Exception as problem:  # the JVM did not start (no Java, bad master URL): say so in one line
        first = str(problem).strip().splitlines()[0] if str(problem).strip() else type(problem).__name__
        raise SparkUnavailableError(f"Spark could not start ({first}); {INSTALL_HINT}") from None
    _settle(session)
    return session


def _settle(session: SparkSession) -> None:
    """The engine's SQL settings on a session made elsewhere too (spark-submit, a notebook)."""
    for key, value in _CONFIG.items():
        if key.startswith("spark.sql."):
            session.conf.set(key, value)
    session.sparkContext.setLogLevel("ERROR")


@contextmanager
def job_errors(what: str) -> Iterator[None]:
    """A failed Spark job as one line (PromptopsError): the Python error at the bottom of an executor's
    traceback, or the JVM's first line, never the stack."""
    try:
        yield
    except PromptopsError:
        raise
    except Exception as problem:
        if not type(problem).__module__.startswith(("pyspark", "py4j")):
            raise
        raise PromptopsError(f"{what} failed on Spark: {_cause(problem)}") from None


def _cause(problem: BaseException) -> str:
    lines = [line.strip() for line in str(problem).splitlines() if line.strip()]
    for line in reversed(lines):  # the executor's Python error, e.g. "ValueError: ..."
        head = line.split(":", 1)[0]
        if head.endswith(("Error", "Exception")) and " " not in head and not line.startswith("at "):
            return line
    return lines[0] if lines else type(problem).__name__
