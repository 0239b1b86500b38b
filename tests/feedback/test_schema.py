"""The shipped JSON Schema of a feedback event and the ingest decoder accept exactly the same events."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from typing import Any

import jsonschema
import pytest

from promptops.store.feedback_events import SCHEMA_PATH, FeedbackEvent, decode_event
from tests.feedback.events import event
from tests.helpers import REPO_ROOT

CASES: list[tuple[str, dict[str, Any]]] = [
    ("valid", event(1)),
    ("offset time", event(1, time="2026-01-02T10:00:00.123+05:30")),
    ("null actor", event(1, actor=None, actor_kind="none")),
    ("bot", event(1, actor="ci-bot[bot]", actor_kind="bot", outcome="ignored")),
    ("numbers in evidence", event(1, evidence={"kind": "commit", "sha": "abc", "line": 4, "score": 0.5})),
    ("naive time", event(1, time="2026-01-02T00:00:00")),
    ("not a time", event(1, time="yesterday")),
    ("unknown outcome", event(1, outcome="liked")),
    ("unknown actor kind", event(1, actor_kind="team")),
    ("empty event id", event(1, event_id="")),
    ("long event id", event(1, event_id="e" * 201)),
    ("empty source", event(1, source="")),
    ("no kind", event(1, evidence={"url": "x"})),
    ("empty kind", event(1, evidence={"kind": ""})),
    ("nested evidence", event(1, evidence={"kind": "x", "more": {"a": 1}})),
    ("unknown field", {**event(1), "extra": True}),
    ("other version", event(1, feedback_version="1.1")),
    ("missing actor", {k: v for k, v in event(1).items() if k != "actor"}),
    ("number id", {**event(1), "finding_id": 7}),
]


@pytest.mark.parametrize(("name", "value"), CASES, ids=[name for name, _ in CASES])
def test_schema_and_decoder_agree(name: str, value: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)
    by_schema = validator.is_valid(value)
    decoded = decode_event(json.dumps(value).encode())
    assert by_schema == isinstance(decoded, FeedbackEvent), (name, decoded)
    assert by_schema == (name in {"valid", "offset time", "null actor", "bot", "numbers in evidence"})


def test_the_schema_ships_in_the_package() -> None:
    shipped = resources.files("promptops") / "defaults" / "schemas" / "feedback-event-1.0.json"
    assert json.loads(shipped.read_text(encoding="utf-8"))["properties"]["feedback_version"] == {"const": "1.0"}
    assert "defaults/schemas/*.json" in (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_every_feedback_help_works_without_loading_the_store() -> None:
    script = (
        "import sys\n"
        "from promptops.cli import run\n"
        "for args in (['feedback', '--help'], ['feedback', 'ingest', '--help'], ['feedback', 'marker', '--help'],\n"
        "             ['feedback', 'collect', '--help'], ['feedback', 'collect', 'github', '--help']):\n"
        "    assert run(args) == 0, args\n"
        "assert 'duckdb' not in sys.modules and 'pyarrow' not in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=REPO_ROOT, check=False)
    assert done.returncode == 0, done.stderr
    assert "Usage: promptops feedback ingest [OPTIONS] PATHS..." in done.stdout
    assert "Print the marker a bot embeds" in done.stdout
    assert "collect  Turn what happened to posted findings" in done.stdout
