"""What a reviewer output lost, as review signals: the gate fails closed on what the parser could not keep.

A finding the contract dropped (a severity spelled ``"Critical"`` where the schema says ``critical``, a file
outside the change, a cut-off answer) is invisible to the merge, so without these signals a reviewer's only
critical finding would let the change pass. Each dropped finding is one signal carrying its severity as the
reviewer wrote it, the parser's reason and the file it named; it blocks when that severity, case-folded, maps
to the blocking level through the contract's severity map (or is that level's own name). A rejected output is
one signal; it blocks when any finding still readable in its text has a blocking severity. Reading the text
here is best effort (plain JSON, or the first JSON object inside prose or a fence): what cannot be read stays
advisory, and says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from promptops.core.contract import Contract
from promptops.merge import SourceReport
from promptops.parsing.diagnostics import Diagnostic
from promptops.parsing.semantics import merge_semantics
from promptops.review_gate.signals import Origin, ReviewSignal, Severity, SignalKind, infer_role

BLOCKING_LEVEL = "critical"  # the highest common severity (P0 and "critical" map to it)
_TEXT_LIMIT = 200  # characters of a model-written value echoed in a signal
_TRIES = 16  # object starts tried in prose before giving up (each try may read the rest of the text)


def lost_signals(source: SourceReport, contract: Contract, raw: str | bytes) -> list[ReviewSignal]:
    """Signals for one reviewer output's dropped findings, or for the whole output when it was rejected."""
    findings = _raw_findings(raw, contract.items)
    if not source.outcome.accepted:
        return [_rejected(source, contract, findings)]
    signals = []
    seen: set[int] = set()
    for diagnostic in source.outcome.diagnostics:
        index = diagnostic.finding_index
        if diagnostic.disposition != "dropped" or index is None or index in seen:
            continue
        seen.add(index)  # one signal per dropped finding: its first reason
        finding = findings[index] if findings is not None and 0 <= index < len(findings) else None
        signals.append(_dropped(source, contract, diagnostic, finding))
    return signals


def blocking_severity(contract: Contract, written: Any) -> bool:
    """Whether a severity as a reviewer wrote it is the blocking level, case-folded."""
    if not isinstance(written, str):
        return False
    folded = written.strip().casefold()
    if folded == BLOCKING_LEVEL:
        return True
    semantics = merge_semantics(contract)
    if semantics is None:
        return False
    return any(key.casefold() == folded and common == BLOCKING_LEVEL for key, common in semantics.severity_map.items())


def _dropped(
    source: SourceReport, contract: Contract, diagnostic: Diagnostic, finding: Mapping[str, Any] | None
) -> ReviewSignal:
    written = _field(contract, finding, "severity")
    named_file = _field(contract, finding, "file")
    blocks = blocking_severity(contract, written)
    finding_id = diagnostic.finding_id
    if finding_id is None and finding is not None and contract.roles.id is not None:
        written_id = finding.get(contract.roles.id)
        finding_id = _clip(written_id) if isinstance(written_id, str) else None
    where = f" ({named_file})" if isinstance(named_file, str) else ""
    severity_text = f"severity {_clip(written)!r}" if isinstance(written, str) else "severity unreadable"
    message = (
        f"finding {diagnostic.finding_index}{where} dropped by contract {source.contract}, {severity_text}: "
        f"{diagnostic.code}: {diagnostic.message}"
    )
    detail = {
        "loss": "dropped_finding",
        "finding_index": diagnostic.finding_index,
        "finding_id": finding_id,
        "severity_as_written": _clip(written) if isinstance(written, str) else None,
        "reason": str(diagnostic.code),
        "file": _clip(named_file) if isinstance(named_file, str) else None,
    }
    return _signal(source, message, blocks, detail)


def _rejected(source: SourceReport, contract: Contract, findings: list[Mapping[str, Any]] | None) -> ReviewSignal:
    written = [_field(contract, f, "severity") for f in findings or ()]
    blocking = [w for w in written if blocking_severity(contract, w)]
    reason = str(source.outcome.reason)
    if blocking:
        also = f", and {len(blocking)} of its findings say {_clip(blocking[0])!r}"
    elif findings is None:
        also = ", and its findings cannot be read"
    else:
        also = ""
    message = f"rejected by contract {source.contract} ({reason}){also}"
    detail = {
        "loss": "rejected_output",
        "reason": reason,
        "severities_as_written": sorted({_clip(w) for w in written if isinstance(w, str)}),
        "blocking_findings": len(blocking),
    }
    return _signal(source, message, bool(blocking), detail, by_tool=True)


def _signal(
    source: SourceReport, message: str, blocks: bool, detail: dict[str, Any], *, by_tool: bool = False
) -> ReviewSignal:
    """A dropped finding is the reviewer's (origin Role); a rejected output is the tool's (origin System)."""
    return ReviewSignal(
        kind=SignalKind.OTHER,
        severity=Severity.BLOCK if blocks else Severity.ADVISORY,
        origin=Origin.SYSTEM if by_tool else Origin.ROLE,
        role=None if by_tool else infer_role(source.reviewer),
        agent=source.reviewer,
        message=f"{source.source}: {message}",
        evidence_path=source.source,
        detail=detail,
    )


def _field(contract: Contract, finding: Mapping[str, Any] | None, role: str) -> Any:
    """The finding's severity (from the contract's merge section) or file (its path field), as written."""
    if finding is None:
        return None
    if role == "severity":
        semantics = merge_semantics(contract)
        name = semantics.severity_field if semantics is not None else "severity"
    else:
        name = contract.roles.path or "file"
    return finding.get(name)


def _raw_findings(raw: str | bytes, items: str) -> list[Mapping[str, Any]] | None:
    """The findings array as written, when the text holds a readable JSON object with one; else None."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    value: Any = None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        start, tries = text.find("{"), 0
        while start >= 0 and value is None and tries < _TRIES:
            tries += 1
            try:
                value, _ = json.JSONDecoder().raw_decode(text, start)
            except (ValueError, RecursionError):
                start = text.find("{", start + 1)
    found = value.get(items) if isinstance(value, Mapping) else None
    if not isinstance(found, list):
        return None
    return [item if isinstance(item, Mapping) else {} for item in found]


def _clip(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _TEXT_LIMIT:
        return value[: _TEXT_LIMIT - 1] + "…"
    return value
