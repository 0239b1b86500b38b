"""A batch streamed into its transaction: ingest hands the writer thread each parsed chunk as it comes, and the
writer inserts it (``Store.write_parts``) while the next chunk is parsed."""

from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from promptops.core.errors import PromptopsError
from promptops.store.findings import empty_findings
from promptops.store.store import Batch, Store

# Parts of a batch queued for the writer thread: each is a chunk (at most DECODE_CHUNK responses), so this
# process never holds a whole batch's tables, whatever --batch-size says.
STREAM_PARTS = 2
END = object()  # the batch is complete: commit it
ABORT = object()  # the run failed: roll the batch back


class Aborted(Exception):
    """Raised into the writer by ABORT: the batch's transaction is rolled back."""


class Stream:
    """One batch's transaction: the writer thread inserts its parts (``Store.write_parts``) as they are put."""

    def __init__(self, writer: ThreadPoolExecutor, store: Store) -> None:
        self._parts: queue.Queue[object] = queue.Queue(maxsize=STREAM_PARTS)
        self.future = writer.submit(store.write_parts, self._take(), writer="ingest")

    def _take(self) -> Iterator[Batch]:
        while (part := self._parts.get()) is not END:
            if part is ABORT:
                raise Aborted
            assert isinstance(part, Batch)
            yield part

    def put(self, part: object) -> None:
        # Never wait on a queue nobody reads: a writer that failed raises its error here instead.
        while True:
            try:
                self._parts.put(part, timeout=0.05)
                return
            except queue.Full:
                if self.future.done():
                    if part is ABORT:
                        return
                    self.future.result()
                    raise PromptopsError("the store writer stopped before the batch was complete") from None


def or_empty(findings: pa.Table | None) -> pa.Table:
    return empty_findings() if findings is None else findings
