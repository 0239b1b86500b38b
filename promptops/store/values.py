"""What a stored response's values must be: checked when a value is handed over (``Recorder.record``, an
ingested log record), so a value the store cannot hold fails there, naming its field, and never at the flush
that would lose the whole buffered batch with it.

The store keeps strings as UTF-8 (a lone surrogate has no encoding), ``tokens`` as a BIGINT, ``latency_ms`` as
a finite DOUBLE, and ``ts`` as a UTC time that Python can read back.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from promptops.store.logs import MAX_TOKENS

if TYPE_CHECKING:
    from promptops.parsing import ParseOutcome

# Only a time in the first or last year can leave the datetime range once moved to UTC.
EDGE_YEARS = frozenset({1, 9999})


def check_ts(ts: datetime) -> None:
    """Raise ValueError when ``ts`` (UTC when naive) is outside the range Python can read back in UTC."""
    if ts.tzinfo is not None and ts.year in EDGE_YEARS:
        try:
            ts.astimezone(UTC)
        except OverflowError:
            raise ValueError(f"field 'ts': {ts.isoformat()} is out of range in UTC") from None


def check_values(
    *,
    response_id: object,
    ts: object,
    contract: object,
    rollout_id: object,
    arm: object,
    unit: object,
    model: object,
    latency_ms: object,
    tokens: object,
) -> None:
    """Raise ValueError (one line, naming the field) when a value cannot be stored as it is."""
    for name, value, required in (
        ("response_id", response_id, True),
        ("contract", contract, True),
        ("rollout_id", rollout_id, False),
        ("arm", arm, False),
        ("unit", unit, False),
        ("model", model, False),
    ):
        if value is None and not required:
            continue
        if not isinstance(value, str) or (required and not value):
            wanted = "a non-empty string" if required else "a string or None"
            raise ValueError(f"field {name!r}: expected {wanted}, got {_shown(value)}")
        _check_text(name, value)
    if not isinstance(ts, datetime):
        raise ValueError(f"field 'ts': expected a datetime, got {_shown(ts)}")
    check_ts(ts)
    if latency_ms is not None:
        if isinstance(latency_ms, bool) or not isinstance(latency_ms, int | float):
            raise ValueError(f"field 'latency_ms': expected a number or None, got {_shown(latency_ms)}")
        if not math.isfinite(latency_ms) or latency_ms < 0:
            raise ValueError(f"field 'latency_ms': {latency_ms!r} is not a finite number >= 0")
    if tokens is not None:
        if isinstance(tokens, bool) or not isinstance(tokens, int):
            raise ValueError(f"field 'tokens': expected an integer or None, got {_shown(tokens)}")
        if not 0 <= tokens <= MAX_TOKENS:
            raise ValueError(f"field 'tokens': {_shown(tokens)} is outside 0..{MAX_TOKENS}")


def check_outcome(outcome: ParseOutcome) -> None:
    """Raise ValueError when a text of ``outcome`` cannot be stored (a parse of a string holding a lone
    surrogate can quote it in a diagnostic)."""
    for name in ("prompt_version", "schema_version"):
        value = getattr(outcome, name)
        if value is not None:
            _check_text(f"outcome.{name}", value)
    for number, diagnostic in enumerate(outcome.diagnostics):
        for name in ("path", "finding_id", "message"):
            value = getattr(diagnostic, name)
            if isinstance(value, str):
                _check_text(f"outcome.diagnostics[{number}].{name}", value)


def _check_text(name: str, value: str) -> None:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as problem:
        raise ValueError(
            f"field {name!r}: not valid Unicode (a lone surrogate at character {problem.start + 1})"
        ) from None


def _shown(value: object) -> str:
    if isinstance(value, int) and value.bit_length() > 128:  # repr of a huge int is slow, or refused
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    if len(text) > 40:
        text = f"{text[:37]}..."
    return f"{type(value).__name__} {text}"
