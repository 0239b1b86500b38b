"""A deterministic corpus of review-result responses, shaped like real reviewer traffic.

Finding counts follow Binomial(20, 0.3) (0 to 20, mean 6). About 10% of responses carry one or two defects of
the kinds the ReviewResult contract names (bad enums, string line numbers, padded strings, backslash paths,
files outside the diff, missing fields, bad line ranges, unknown fields, duplicate ids, nulls); about 2% are malformed
or wrapped (fences and prose, think blocks, truncation, trailing commas, two objects, incompatible versions). Half of
the responses are pretty-printed, as models often answer.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

SEVERITIES = ["critical", "high", "medium", "low", "info"]
CATEGORIES = ["correctness", "security", "performance", "reliability", "maintainability", "style", "test"]
DIRS = ["src/api", "src/auth", "src/db", "src/core", "lib/util", "tests", "services/billing", "web/components"]
NAMES = ["users", "login", "session", "pool", "cache", "handlers", "models", "routes", "views", "invoice", "retry"]
EXTS = [".py", ".ts", ".go", ".rs", ".java"]
TITLES = [
    "SQL built from user input",
    "Possible null dereference",
    "Missing error handling on network call",
    "Unbounded retry loop",
    "Secret logged at info level",
    "Off-by-one in pagination",
    "Race on shared cache entry",
    "Test does not assert the result",
]
MESSAGES = [
    "The value returned by get_user may be None when the cache misses; dereferencing it raises AttributeError.",
    "user_id is concatenated into the query string. Use a bound parameter instead.",
    "Note: the retry loop has no upper bound, so a persistent failure spins forever and hides the error.",
    "The token is written to the log at INFO; anyone with log access can replay the session.",
    "page * size skips the first row of every page after the first one.",
    "Two requests can both miss the cache and both write it; the second write wins with stale data.",
]
SUGGESTIONS = [
    "if user is None: return None",
    "cursor.execute('SELECT * FROM users WHERE id = %s', (user_id,))",
    "for attempt in range(MAX_RETRIES):",
    "log.debug('token refreshed')",
]


@dataclass(frozen=True)
class Record:
    raw: bytes
    changed_files: list[str]
    kind: str  # "clean", "defect" or "malformed"


def build(count: int, seed: int = 7) -> list[Record]:
    return list(stream(count, seed))


def stream(count: int, seed: int = 7) -> Iterator[Record]:
    """The records of ``build``, one at a time (for corpora too large to hold)."""
    rng = random.Random(seed)
    for _ in range(count):
        yield _record(rng)


def _record(rng: random.Random) -> Record:
    changed = sorted({f"{rng.choice(DIRS)}/{rng.choice(NAMES)}{rng.choice(EXTS)}" for _ in range(rng.randint(2, 8))})
    findings = [_finding(rng, i, changed) for i in range(sum(rng.random() < 0.3 for _ in range(20)))]
    body: dict[str, Any] = {"schema_version": "1.0", "prompt_version": "1.0.0", "findings": findings}
    if rng.random() < 0.8:
        body["summary"] = f"Reviewed {len(changed)} files: found {len(findings)} issues."
    roll = rng.random()
    kind = "clean"
    if roll < 0.10:
        kind = "defect"
        for _ in range(rng.randint(1, 2)):
            _defect(rng, body, changed)
    text = json.dumps(body, indent=2 if rng.random() < 0.5 else None)
    if 0.10 <= roll < 0.12:
        kind = "malformed"
        text = _malform(rng, text, body)
    return Record(text.encode(), changed, kind)


def _finding(rng: random.Random, index: int, changed: list[str]) -> dict[str, Any]:
    line = rng.randint(1, 900)
    item: dict[str, Any] = {
        "id": f"F{index + 1}",
        "severity": rng.choice(SEVERITIES),
        "category": rng.choice(CATEGORIES),
        "title": rng.choice(TITLES),
        "file": rng.choice(changed),
        "line": line,
        "message": rng.choice(MESSAGES),
    }
    if rng.random() < 0.4:
        item["end_line"] = line + rng.randint(0, 12)
    if rng.random() < 0.5:
        item["suggestion"] = rng.choice(SUGGESTIONS)
    if rng.random() < 0.6:
        item["confidence"] = rng.choice(["high", "medium", "low"])
    if rng.random() < 0.2:
        item["rule_id"] = f"R{rng.randint(100, 999)}"
    return item


def _defect(rng: random.Random, body: dict[str, Any], changed: list[str]) -> None:
    findings = body["findings"]
    if not findings:
        findings.append(_finding(rng, 0, changed))
    item = rng.choice(findings)
    kind = rng.randrange(12)
    if kind == 0:
        item["severity"] = item["severity"].capitalize()
    elif kind == 1:
        item["category"] = "bug"
    elif kind == 2:
        item["line"] = str(item["line"])
    elif kind == 3:
        item["title"] = f"  {item['title']} "
    elif kind == 4:
        item["file"] = item["file"].replace("/", "\\")
    elif kind == 5:
        item["file"] = "docs/unrelated.md"
    elif kind == 6:
        item.pop("message", None)
    elif kind == 7:
        item["line"], item["end_line"] = 50, 10
    elif kind == 8:
        item["line"] = 0
    elif kind == 9:
        item["fix_hint"] = "use a guard clause"
    elif kind == 10:
        item["id"] = findings[0]["id"]
    else:
        item["suggestion"] = None


def _malform(rng: random.Random, text: str, body: dict[str, Any]) -> str:
    kind = rng.randrange(6)
    if kind == 0:
        return f"Here is my review:\n```json\n{text}\n```\n"
    if kind == 1:
        return f"<think>The diff changes the query builder; check for injection.</think>\n{text}"
    if kind == 2:
        return text[: max(1, int(len(text) * rng.uniform(0.3, 0.95)))]
    if kind == 3:
        return text[:-1].rstrip() + ",}"
    if kind == 4:
        return f"{text}\n{text}"
    return json.dumps({**body, "schema_version": "2.0"})
