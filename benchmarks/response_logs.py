"""Response logs (the record format of docs/store.md) from the deterministic corpus, for the store's tests.

Each record wraps one corpus response with an id, a timestamp, a rollout slot and model metadata. ``pool``
recycles that many distinct responses (generating a response costs far more than parsing it), so millions of
log lines stay cheap to produce while every line keeps its own id, time and slot.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import corpus
import msgspec

START = datetime(2025, 5, 1, tzinfo=UTC)
CONTRACT = "review-result"
ROLLOUTS = ("review-v7", "review-v7", "review-v7", "review-v8", None)
ARMS = ("baseline", "candidate")


def records(count: int, *, seed: int = 7, pool: int | None = None, days: int = 7) -> Iterator[dict[str, Any]]:
    """``count`` log records over ``days`` days; record i is the same for a given seed and pool."""
    source = corpus.stream(min(count, pool or count), seed)
    responses = itertools.cycle(list(source)) if pool is not None and pool < count else source
    step = timedelta(seconds=days * 86400 / max(count, 1))
    for i, response in zip(range(count), responses, strict=False):
        rollout = ROLLOUTS[i % len(ROLLOUTS)]
        yield {
            "response_id": f"resp-{seed}-{i:09d}",
            "ts": (START + i * step).isoformat(),
            "contract": CONTRACT,
            "rollout_id": rollout,
            "arm": ARMS[(i // 5) % 2] if rollout else None,
            "unit": f"acme/service#{i % 4999}",
            "changed_files": response.changed_files,
            "raw": response.raw.decode(),
            "model": "model-a" if i % 3 else "model-b",
            "latency_ms": float(800 + i % 700),
            "tokens": 1000 + i % 3000,
        }


def write(path: Path, count: int, **options: Any) -> int:
    """Write ``count`` records as JSONL to ``path`` (gzip when it ends in .gz); returns the bytes written."""
    encoder = msgspec.json.Encoder()
    lines = (encoder.encode(record) + b"\n" for record in records(count, **options))
    if path.name.endswith(".gz"):
        import gzip

        with gzip.open(path, "wb", compresslevel=1) as handle:
            for line in lines:
                handle.write(line)
    else:
        with path.open("wb") as handle:
            for chunk in _chunked(lines, 4096):
                handle.write(b"".join(chunk))
    return path.stat().st_size


def _chunked(lines: Iterator[bytes], size: int) -> Iterator[list[bytes]]:
    while chunk := list(itertools.islice(lines, size)):
        yield chunk
