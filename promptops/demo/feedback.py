"""The demo's simulated feedback (``promptops demo --useless``): what developers did with each arm's findings.

The candidate parses perfectly but says little worth acting on: most of its findings are dismissed, while the
baseline's are acted on about half the time. The events are written as a feedback log (the documented format)
and ingested as ``promptops feedback ingest`` does, so the usefulness gate judges them from the store.
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path

from promptops.core.files import write_atomic
from promptops.store import Store
from promptops.store.feedback import ingest_feedback
from promptops.store.feedback_units import rollout_findings

# Probability that a finding is acted on (fixed or accepted); the others are dismissed.
ACTED_ON = {"baseline": 0.45, "candidate": 0.08}
# The SLO the demo's plan gets with --useless: at least a quarter of decided findings acted on.
USEFULNESS_SLO = "  acted_on_rate: {slo: 0.25, severity: critical}  # what developers do with the findings\n"


def add_usefulness_slo(plan_file: Path) -> None:
    """Add the acted-on rate SLO to the workspace's plan (its ``slos:`` mapping)."""
    text = plan_file.read_text(encoding="utf-8")
    write_atomic(plan_file, text.replace("slos:\n", "slos:\n" + USEFULNESS_SLO, 1).encode("utf-8"))


def write_feedback(
    store: Store, contract: str, rollout_id: str, since: datetime, until: datetime, log: Path, seed: int
) -> dict[str, dict[str, int]]:
    """One event per finding of the rollout logged in [since, until] (aware UTC), at ``until``; returns per arm
    how many of each outcome were written."""
    chance = random.Random(seed)
    naive = (since.astimezone(UTC).replace(tzinfo=None), until.astimezone(UTC).replace(tzinfo=None))
    lines: list[str] = []
    written: dict[str, dict[str, int]] = {}
    stamp = until.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for number, (response, finding, arm) in enumerate(rollout_findings(store.connection, contract, rollout_id, *naive)):
        acted = chance.random() < ACTED_ON.get(arm, 0.0)
        outcome = ("fixed" if chance.random() < 0.5 else "accepted") if acted else "dismissed"
        counts = written.setdefault(arm, {})
        counts[outcome] = counts.get(outcome, 0) + 1
        event = {
            "event_id": f"demo-{seed}-{number}",
            "finding_id": finding,
            "response_id": response,
            "outcome": outcome,
            "time": stamp,
            "source": "demo",
            "actor": "reviewer",
            "actor_kind": "person",
            "evidence": {"kind": "commit" if outcome == "fixed" else "reaction"},
            "feedback_version": "1.0",
        }
        lines.append(json.dumps(event))
    write_atomic(log, ("\n".join(lines) + "\n").encode("utf-8"))
    return written


def ingest(store: Store, log: Path, relative: str) -> int:
    """Ingest the feedback log into ``store``; the events stored."""
    report = ingest_feedback([log], store, relative=lambda _: relative)
    return report.total("inserted")
