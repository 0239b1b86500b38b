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

from promptops.core.lazy import by_module, lazy_names

if TYPE_CHECKING:
    from promptops.store.batch import Recorder
    from promptops.store.errors import StoreError, StoreLockedError
    from promptops.store.ingest import BadRecord, IngestReport, ingest_logs
    from promptops.store.metrics import RatesQuery, RatesReport, rates
    from promptops.store.parquet import export_parquet, open_parquet
    from promptops.store.policies import DefaultPolicyResolver, ParserCache, PolicyResolver
    from promptops.store.store import Batch, Store, WriteResult

DEFAULT_STORE = ".promptops/diagnostics.duckdb"

_EXPORTS = by_module(
    {
        "promptops.store.batch": ("Recorder",),
        "promptops.store.errors": ("StoreError", "StoreLockedError"),
        "promptops.store.ingest": ("BadRecord", "IngestReport", "ingest_logs"),
        "promptops.store.metrics": ("RatesQuery", "RatesReport", "rates"),
        "promptops.store.parquet": ("export_parquet", "open_parquet"),
        "promptops.store.policies": ("DefaultPolicyResolver", "ParserCache", "PolicyResolver"),
        "promptops.store.store": ("Batch", "Store", "WriteResult"),
    }
)

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
