"""Reviewer outputs of all four contracts, built from small tables so each test states only what it varies."""

from __future__ import annotations

import json
from typing import Any

from promptops import Contract, load_contract
from promptops.merge import ReviewerOutput
from promptops.parsing import tiers
from tests.helpers import REPO_ROOT

CONTRACTS: dict[str, Contract] = {
    name: load_contract(REPO_ROOT, name)
    for name in ("review-result", "agent-output", "reviewer-finding", "code-review-findings")
}


def rf(
    id_: str, severity: str, confidence: float, file: str, line: int | None, text: str, **extra: Any
) -> dict[str, Any]:
    """A reviewer-finding finding."""
    out: dict[str, Any] = {"id": id_, "reviewer": extra.pop("reviewer", "security-reviewer"), "severity": severity}
    out |= {"file": file, **({"line": line} if line is not None else {}), "description": text, "confidence": confidence}
    return out | extra


def crf(severity: str, confidence: int, file: str, line: int, title: str, **extra: Any) -> dict[str, Any]:
    """A code-review-findings finding (detail tier)."""
    return {
        "title": title,
        "severity": severity,
        "file": file,
        "line": line,
        "why_it_matters": extra.pop("why_it_matters", f"{title}: it breaks in production."),
        "autofix_class": "manual",
        "owner": "human",
        "requires_verification": True,
        "confidence": confidence,
        "evidence": [f"{file}:{line}"],
        "pre_existing": False,
    } | extra


def ao(
    id_: str, severity: str, title: str, message: str, file: str | None = None, line: int | None = None
) -> dict[str, Any]:
    """An agent-output finding."""
    out: dict[str, Any] = {"id": id_, "title": title, "severity": severity, "category": "correctness"}
    if file is not None:
        out["file"] = file
    if line is not None:
        out["line"] = line
    return out | {"message": message}


def rr(id_: str, severity: str, file: str, line: int, title: str, confidence: str | None = None) -> dict[str, Any]:
    """A review-result finding."""
    out = {"id": id_, "severity": severity, "category": "security", "title": title, "file": file, "line": line}
    out["message"] = f"{title}, in detail."
    if confidence is not None:
        out["confidence"] = confidence
    return out


def document(contract: str, findings: list[dict[str, Any]], reviewer: str = "security") -> dict[str, Any]:
    if contract == "review-result":
        return {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings}
    if contract == "agent-output":
        return {"findings": findings, "summary": "Reviewed."}
    if contract == "code-review-findings":
        return {"reviewer": reviewer, "findings": findings, "residual_risks": [], "testing_gaps": []}
    return {"findings": findings}


def output(contract: str, findings: list[dict[str, Any]], source: str, **kwargs: Any) -> ReviewerOutput:
    reviewer = kwargs.pop("reviewer", "security")
    tier = kwargs.pop("tier", None)
    chosen = tiers.tier(CONTRACTS[contract], tier) if tier else CONTRACTS[contract]
    raw = json.dumps(document(contract, findings, reviewer))
    return ReviewerOutput(chosen, raw, source, **kwargs)
