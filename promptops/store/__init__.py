"""The diagnostics store: parse outcomes in DuckDB, rates as SQL views, Parquet export (docs/store.md).

Modules: ``ddl`` (tables, migrations, views), ``store`` (open, lock, whole-batch writes), ``batch`` (columnar
batches, Recorder, also the re-ask loop's trace sink), ``traces`` (trace steps as rows), ``logs`` (response log
segments and records), ``policies`` (policy resolver, parser cache), ``ingest`` (logs to store), ``metrics``
(rates), ``parquet`` (export, views over an export), ``defaults`` (the defaults the commands' help shows).

Names load lazily: a command that only reads the store (``rollout gate``) must not pay for pyarrow and the
parser, which only writers need.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from promptops.core.lazy import lazy_names

if TYPE_CHECKING:
    from promptops.store.batch import Recorder
    from promptops.store.errors import StoreError, StoreLockedError
    from promptops.store.ingest import BadRecord, IngestReport, ingest_logs
    from promptops.store.metrics import RatesQuery, RatesReport, rates
    from promptops.store.parquet import export_parquet, open_parquet
    from promptops.store.policies import DefaultPolicyResolver, ParserCache, PolicyResolver
    from promptops.store.store import Batch, Store, WriteResult

DEFAULT_STORE = ".promptops/diagnostics.duckdb"

_EXPORTS: dict[str, str] = {
    "Recorder": "promptops.store.batch",
    "StoreError": "promptops.store.errors",
    "StoreLockedError": "promptops.store.errors",
    "BadRecord": "promptops.store.ingest",
    "IngestReport": "promptops.store.ingest",
    "ingest_logs": "promptops.store.ingest",
    "RatesQuery": "promptops.store.metrics",
    "RatesReport": "promptops.store.metrics",
    "rates": "promptops.store.metrics",
    "export_parquet": "promptops.store.parquet",
    "open_parquet": "promptops.store.parquet",
    "DefaultPolicyResolver": "promptops.store.policies",
    "ParserCache": "promptops.store.policies",
    "PolicyResolver": "promptops.store.policies",
    "Batch": "promptops.store.store",
    "Store": "promptops.store.store",
    "WriteResult": "promptops.store.store",
}

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


__getattr__ = lazy_names(__name__, _EXPORTS)
