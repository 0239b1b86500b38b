"""The feedback event format (version 1.0): one JSON object a line, decoded and checked here.

The format is the JSON Schema ``promptops/defaults/schemas/feedback-event-1.0.json`` (``SCHEMA_PATH``);
this decoder accepts exactly what it accepts (a test holds them together) and says what is wrong in one line.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Literal

import msgspec

from promptops.core import specs

FEEDBACK_VERSION = "1.0"
SCHEMA_PATH = (
    Path(__file__).resolve().parent.parent / "defaults" / "schemas" / f"feedback-event-{FEEDBACK_VERSION}.json"
)
OUTCOMES = ("fixed", "accepted", "dismissed", "ignored")
ACTED_ON = ("fixed", "accepted")
ACTOR_KINDS = ("person", "bot", "none")

_Id = Annotated[str, msgspec.Meta(min_length=1, max_length=1000)]
_Name = Annotated[str, msgspec.Meta(min_length=1, max_length=200)]


class FeedbackEvent(msgspec.Struct, forbid_unknown_fields=True, frozen=True):
    """One feedback event; ``time`` is aware (the format requires an offset)."""

    event_id: _Name
    finding_id: _Id
    response_id: _Id
    outcome: Literal["fixed", "accepted", "dismissed", "ignored"]
    time: datetime
    source: _Name
    actor: Annotated[str, msgspec.Meta(max_length=200)] | None
    actor_kind: Literal["person", "bot", "none"]
    evidence: dict[str, str | int | float | bool | None]
    feedback_version: Literal["1.0"]


_DECODER = msgspec.json.Decoder(FeedbackEvent)


def decode_event(line: bytes | memoryview) -> FeedbackEvent | str:
    """The event on ``line``, or a one-line description of what is wrong with it."""
    try:
        event = _DECODER.decode(line)
    except msgspec.ValidationError as problem:
        message = str(problem)
        unknown = message.partition("Object contains unknown field `")[2]
        if unknown and "` - at `$." not in message:
            return (
                f"unknown field '{unknown.partition('`')[0]}' (feedback_version {FEEDBACK_VERSION} has no such field)"
            )
        return specs.record_problem(message)
    except (msgspec.DecodeError, RecursionError, UnicodeDecodeError):
        return str(specs.decode_line(_DECODER, line))  # the one line the loader writes for each
    if event.time.tzinfo is None:
        return "field 'time': needs an offset (Z or +hh:mm)"
    kind = event.evidence.get("kind")
    if not isinstance(kind, str) or not kind:
        return "field 'evidence.kind': required, a non-empty string"
    try:
        event.time.astimezone(UTC)
    except OverflowError:
        return f"field 'time': {event.time.isoformat()} is out of range in UTC"
    for name in ("event_id", "finding_id", "response_id", "source", "actor"):
        value = getattr(event, name)
        if value is not None and not _encodable(value):
            return f"field {name!r}: holds a lone surrogate (not UTF-8)"
    if not all(_encodable(k) and (not isinstance(v, str) or _encodable(v)) for k, v in event.evidence.items()):
        return "field 'evidence': holds a lone surrogate (not UTF-8)"
    return event


def utc(moment: datetime) -> datetime:
    """``moment`` as a naive UTC time, the store's TIMESTAMP (a naive ``moment`` is taken as UTC)."""
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
