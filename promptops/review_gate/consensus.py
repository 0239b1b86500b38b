"""ConsensusJson evidence files: which file is chosen, and the subset of it we read.

Selection is the lexicographic maximum of the file names matching ``spec-<stage_slug>_*.json`` (latest by
naming convention, compared as Python strings, i.e. by code point). Parsing follows the ConsensusJson schema
exactly: every field optional (absent and ``null`` mean the same), unknown fields ignored, a present field
of the wrong type is a parse failure, as a strict typed decoder would have it. Failures carry a one-line
reason; the caller turns them into the signal ``Failed to parse consensus file: {path}: {error}``, which
blocks when the file may hold a conflict (:func:`holds_conflict`) and under ``--strict-artifacts``.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any


class ConsensusParseError(ValueError):
    """The bytes are not a ConsensusJson document; ``str()`` is the one-line reason."""


@dataclass(frozen=True)
class ConsensusRecord:
    """The fields of a ConsensusJson file that the review reads."""

    agent: str | None = None
    model: str | None = None
    error: str | None = None
    conflicts: tuple[str, ...] | None = None
    synthesis_status: str | None = None

    def metadata(self) -> dict[str, Any]:
        """Descriptive fields for the result (never used for the decision beyond what signals carry)."""
        return {"agent": self.agent, "model": self.model, "synthesis_status": self.synthesis_status}


def consensus_pattern(stage_slug: str) -> str:
    return f"spec-{stage_slug}_*.json"


def matching_names(names: Iterable[str], stage_slug: str) -> list[str]:
    """The names matching the stage's pattern, sorted (so the last one is the selection)."""
    pattern = consensus_pattern(stage_slug)
    return sorted(name for name in names if fnmatchcase(name, pattern))


def select_latest(names: Iterable[str], stage_slug: str) -> str | None:
    """Lexicographic max of the matching names, or None when none match (stage mismatch = no artifacts)."""
    matches = matching_names(names, stage_slug)
    return matches[-1] if matches else None


def parse_consensus(data: bytes) -> ConsensusRecord:
    """Decode one ConsensusJson document or raise :class:`ConsensusParseError` with the reason."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as problem:
        raise ConsensusParseError(f"invalid UTF-8 at byte {problem.start}") from None
    try:
        document = json.loads(text, object_pairs_hook=_Object, parse_constant=_reject_constant)
    except json.JSONDecodeError as problem:
        raise ConsensusParseError(
            f"invalid JSON: {problem.msg} at line {problem.lineno} column {problem.colno}"
        ) from None
    except _ConstantError as problem:
        raise ConsensusParseError(f"invalid JSON: {problem}") from None
    except RecursionError:
        raise ConsensusParseError("invalid JSON: nesting too deep") from None
    except ValueError as problem:  # e.g. an integer beyond Python's digit limit
        raise ConsensusParseError(f"invalid JSON: {problem}") from None
    if not isinstance(document, _Object):
        raise ConsensusParseError(f"expected a JSON object at the top level, found {_kind(document)}")
    consensus = _field(document, "consensus", _Object, "an object", "")
    conflicts: tuple[str, ...] | None = None
    synthesis_status = None
    if consensus is not None:
        raw_conflicts = _field(consensus, "conflicts", list, "an array of strings", "consensus.")
        if raw_conflicts is not None:
            for index, item in enumerate(raw_conflicts):
                if not isinstance(item, str):
                    raise ConsensusParseError(
                        f"field 'consensus.conflicts[{index}]': expected a string, found {_kind(item)}"
                    )
            conflicts = tuple(raw_conflicts)
        synthesis_status = _field(consensus, "synthesis_status", str, "a string", "consensus.")
    return ConsensusRecord(
        agent=_field(document, "agent", str, "a string", ""),
        model=_field(document, "model", str, "a string", ""),
        error=_field(document, "error", str, "a string", ""),
        conflicts=conflicts,
        synthesis_status=synthesis_status,
    )


# A "conflicts" member whose value is not written as null or [] (an escaped \" before it is inside a string).
_CONFLICTS_MEMBER = re.compile(r'(?<!\\)"conflicts"\s*:(?!\s*(?:null\b|\[\s*\]))')


def holds_conflict(data: bytes) -> bool:
    """May a consensus file that failed to parse hold a conflict? The gate fails closed, so this answers yes
    unless every ``conflicts`` member the file holds is provably empty: one written with a value other than
    ``null`` or ``[]`` anywhere in the text (behind a BOM, a repeated key, NaN, trailing text or a cut), or one
    a lenient reading finds non-empty (a key spelled with escapes, at any depth, repeated or not)."""
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if _CONFLICTS_MEMBER.search(text):
        return True
    try:
        document, _ = json.JSONDecoder(object_pairs_hook=list).raw_decode(text)
    except (ValueError, RecursionError):
        return False  # nothing readable names a conflict
    pending = [document]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            for entry in item:
                if isinstance(entry, tuple) and len(entry) == 2:  # a member of an object, as the hook keeps it
                    key, value = entry
                    if key == "conflicts" and value not in (None, []):
                        return True
                    pending.append(value)
                else:
                    pending.append(entry)
    return False


class _Object(dict[str, Any]):
    """A decoded JSON object that remembers which keys appeared more than once."""

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        counts = Counter(key for key, _ in pairs)
        self.repeated = frozenset(key for key, count in counts.items() if count > 1)


class _ConstantError(ValueError):
    pass


def _reject_constant(name: str) -> Any:
    raise _ConstantError(f"{name} is not valid JSON")


def _field(obj: _Object, name: str, expected: type, description: str, prefix: str) -> Any:
    # A repeated field we read is a failure (never silently last-wins); unknown fields may repeat freely.
    if name in obj.repeated:
        raise ConsensusParseError(f"field '{prefix}{name}' appears more than once")
    value = obj.get(name)
    if value is None:
        return None
    if not isinstance(value, expected):
        found = _kind(value)
        raise ConsensusParseError(f"field '{prefix}{name}': expected {description} or null, found {found}")
    return value


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return "null"
