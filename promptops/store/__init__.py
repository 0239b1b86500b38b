"""The diagnostics store: parse outcomes in DuckDB, rates as SQL views, Parquet export (README "Diagnostics store").

Modules: ``ddl`` (tables, migrations, views), ``store`` (open, lock, whole-batch writes), ``batch`` (columnar
batches, Recorder, also the re-ask loop's trace sink), ``traces`` (trace steps as rows), ``logs`` (response log
segments and records), ``policies`` (policy resolver, parser cache), ``ingest`` (logs to store), ``metrics``
(rates), ``parquet`` (export, views over an export).
"""

from promptops.store.batch import Recorder
from promptops.store.errors import StoreError, StoreLockedError
from promptops.store.ingest import BadRecord, IngestReport, ingest_logs
from promptops.store.metrics import RatesQuery, RatesReport, rates
from promptops.store.parquet import export_parquet, open_parquet
from promptops.store.policies import DefaultPolicyResolver, ParserCache, PolicyResolver
from promptops.store.store import Batch, Store, WriteResult

DEFAULT_STORE = ".promptops/diagnostics.duckdb"

__all__ = [
    "DEFAULT_STORE",
    "BadRecord",
    "Batch",
    "DefaultPolicyResolver",
    "IngestReport",
    "ParserCache",
    "PolicyResolver",
    "RatesQuery",
    "RatesReport",
    "Recorder",
    "Store",
    "StoreError",
    "StoreLockedError",
    "WriteResult",
    "export_parquet",
    "ingest_logs",
    "open_parquet",
    "rates",
]
