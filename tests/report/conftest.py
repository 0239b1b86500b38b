"""A real project for report tests: the shipped plan promoted to its canary, simulated traffic ingested through
the CLI into a DuckDB store, and one hand-written response whose model text is an XSS payload.

The store is built once per session and copied per test (a copy is cheap, simulating and ingesting is not).
"""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

import promptops.cli
from tests.helpers import REPO_ROOT, empty_store

PLAN = "rollout/review-result/review-1.1.yaml"
STORE = "diagnostics.duckdb"
T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
NOW = T0 + timedelta(hours=31)
TRAFFIC = 6000

# Model text that must be shown as text and never run: in a finding id, a file (its drop message names it), an
# enum value, an unknown property name, and the summary.
SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'
ENUM = "<script>window.__pwned=2</script>"
KEY = "<svg onload=window.__pwned=3>"
LONG_FILE = "src/" + "x" * 5000 + ".py"  # its drop message must be cut, not embedded whole


def xss_record() -> dict[str, object]:
    def finding(**fields: object) -> dict[str, object]:
        base: dict[str, object] = {
            "id": "F9",
            "severity": "high",
            "category": "security",
            "title": "t",
            "file": "src/app.py",
            "line": 3,
            "message": SCRIPT,
        }
        return {**base, **fields}

    raw = {
        "schema_version": "1.1",
        "prompt_version": "1.1.1",
        "summary": SCRIPT,
        "findings": [
            finding(id=SCRIPT, file=IMG),
            finding(id=IMG, severity=ENUM),
            finding(**{KEY: 1}),
            finding(file=LONG_FILE),
        ],
    }
    return {
        "response_id": "xss-1",
        "ts": (NOW - timedelta(minutes=30)).isoformat(),  # the latest drops: first among the examples
        "contract": "review-result",
        "rollout_id": "review-1.1",
        "arm": "candidate",
        "unit": "acme/api#1",
        "changed_files": ["src/app.py"],
        "raw": json.dumps(raw),
    }


def run(root: Path, *args: str) -> None:
    code = promptops.cli.run(["--root", str(root), *args])
    assert code == 0, f"promptops {' '.join(args)} exited {code}"


@pytest.fixture(scope="session")
def built_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("report") / "project"
    for name in ("versions", "templates", "rollout"):
        shutil.copytree(REPO_ROOT / name, root / name)
    logs = root / "logs"
    logs.mkdir()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PROMPTOPS_NO_TEMPLATE_CACHE", "1")
        store = empty_store(root / STORE)  # the parser stage reads the store too: nothing rejected yet
        run(root, "rollout", "promote", str(root / PLAN), "--by", "tester", "--now", T0.isoformat(), "--store", store)
        run(
            root,
            "rollout",
            "simulate",
            str(root / PLAN),
            "--responses",
            str(TRAFFIC),
            "--start",
            T0.isoformat(),
            "--hours",
            "30",
            "--seed",
            "1",
            "--out",
            str(logs / "traffic.jsonl"),
        )
        (logs / "xss.jsonl").write_text(json.dumps(xss_record()) + "\n", encoding="utf-8")
        run(root, "ingest", str(logs), "--store", str(root / STORE))
    return root


@pytest.fixture
def report_project(built_project: Path, tmp_path: Path) -> Path:
    """A copy of the built project (store included) that the test may change."""
    root = tmp_path / "project"
    shutil.copytree(built_project, root)
    return root
