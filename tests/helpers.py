"""Shared builders for tests: the repository's contracts and well-formed review-result responses."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from promptops.reask import Message, ModelReply

REPO_ROOT = Path(__file__).resolve().parents[1]
CHANGED = ["src/api/users.py", "src/auth/login.py", "tests/test_login.py"]


def finding(index: int = 1, **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": f"F{index}",
        "severity": "high",
        "category": "security",
        "title": "SQL built from user input",
        "file": "src/api/users.py",
        "line": 40 + index,
        "message": "user_id is concatenated into the query; use a bound parameter.",
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not DROP}


def response(findings: Any = ..., **overrides: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "schema_version": "1.0",
        "prompt_version": "1.0.0",
        "summary": "Reviewed the change.",
        "findings": [finding(1), finding(2)] if findings is ... else findings,
    }
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not DROP}


def text(value: Any) -> str:
    return json.dumps(value)


def log_record(rid: str, **overrides: Any) -> dict[str, Any]:
    """One response log record (what services write and ``promptops ingest`` reads) holding a valid response."""
    return {
        "response_id": rid,
        "ts": "2026-01-01T00:00:00Z",
        "contract": "review-result",
        "rollout_id": None,
        "arm": None,
        "unit": None,
        "changed_files": list(CHANGED),
        "raw": text(response()),
        **overrides,
    }


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()  # pass as a field value to leave the field out


class Script:
    """A fake model answering from a script (an Exception entry is raised), recording what it was sent."""

    def __init__(self, *answers: str | ModelReply | Exception) -> None:
        self._answers = iter(answers)
        self.calls: list[tuple[Message, ...]] = []

    def __call__(self, messages: Sequence[Message]) -> ModelReply | str:
        self.calls.append(tuple(messages))
        answer = next(self._answers)
        if isinstance(answer, Exception):
            raise answer
        return answer


def empty_store(path: Path) -> str:
    """Create an empty diagnostics store at ``path`` (what a project has before any traffic is ingested): the
    store commands refuse a store path where nothing exists."""
    from promptops.store import Store

    Store.open(path).close()
    return str(path)
