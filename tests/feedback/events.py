"""Builders of feedback events and response logs for the feedback tests."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.helpers import log_record

STORE = ".promptops/diagnostics.duckdb"


def event(number: int, finding_id: str = "F1", response_id: str = "r0", **overrides: Any) -> dict[str, Any]:
    return {
        "event_id": f"e{number}",
        "finding_id": finding_id,
        "response_id": response_id,
        "outcome": "accepted",
        "time": "2026-01-02T00:00:00Z",
        "source": "github",
        "actor": "octocat",
        "actor_kind": "person",
        "evidence": {"kind": "reaction", "reaction": "+1", "url": "https://github.com/o/r/pull/1#c1"},
        "feedback_version": "1.0",
        **overrides,
    }


def write_lines(path: Path, items: Iterable[dict[str, Any] | str]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for item in items:
            handle.write((item if isinstance(item, str) else json.dumps(item)) + "\n")
    return path


def write_responses(path: Path, count: int, *, start: int = 0, ts: str = "2026-01-01T00:00:00Z") -> Path:
    """``count`` review-result responses r<start>... (two findings each, ids F1 and F2), units PR 0-3, arms
    alternating."""
    return write_lines(
        path,
        (
            log_record(
                f"r{i}",
                ts=ts,
                rollout_id="review-v7",
                arm="candidate" if i % 2 else "baseline",
                unit=f"org/repo#{i % 4}",
            )
            for i in range(start, start + count)
        ),
    )
