"""A second corpus of review-result answers, generated apart from corpus.py: other vocabularies, finding counts
and layouts, so that a speed-up tuned to one generator shows up (or not) on another.

About 89% of the answers are clean, 9% carry a defect (one of the kinds the contract names) and 2% wrap one
object in prose, a fence or a think block. Finding counts are geometric (mean 4, at most 30); texts are longer and
more varied (escapes, non-ASCII), paths deeper, and layouts compact, indented by 2 or 4, or with spaced separators.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

from corpus import Record

_WORDS = [
    "cache",
    "handler",
    "request",
    "token",
    "buffer",
    "index",
    "cursor",
    "retry",
    "lock",
    "queue",
    "session",
    "schema",
    "payload",
    "timeout",
    "offset",
    "writer",
    "reader",
    "channel",
    "worker",
    "batch",
    "pointer",
    "counter",
    "mutex",
    "socket",
    "header",
]
_VERBS = ["leaks", "overflows", "races", "skips", "drops", "truncates", "duplicates", "blocks", "reorders", "misreads"]
_ROOTS = ["pkg", "internal", "cmd", "app/src/main", "frontend/src", "crates/core/src", "server/handlers"]
_LEAVES = ["store", "api_client", "parser", "scheduler", "auth_flow", "billing", "cli", "config", "metrics"]
_SUFFIXES = [".go", ".kt", ".tsx", ".rs", ".rb", ".py", ".cpp"]
_NOTES = ["é", "ü", "—", "→", "“quoted”", "\u00a0", "日本"]
_SNIPPETS = [
    'if err != nil {\n\treturn fmt.Errorf("read: %w", err)\n}',
    "with lock:\n    self.count += 1",
    'let value = map.get(&key).ok_or("missing")?;',
    "defer conn.Close()",
    "assert response.status_code == 200, response.text",
]


def build(count: int, origin: int = 2026) -> list[Record]:
    return list(stream(count, origin))


def stream(count: int, origin: int = 2026) -> Iterator[Record]:
    rng = random.Random(origin)
    for _ in range(count):
        yield _answer(rng)


def _sentence(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    if rng.random() < 0.15:
        text += f" {rng.choice(_NOTES)}"
    return text[0].upper() + text[1:] + "."


def _finding(rng: random.Random, changed: list[str], number: int) -> dict[str, Any]:
    start = rng.randint(1, 5000)
    item: dict[str, Any] = {
        "id": f"rev-{rng.getrandbits(24):06x}-{number}",
        "severity": rng.choices(["critical", "high", "medium", "low", "info"], [1, 3, 5, 4, 2])[0],
        "category": rng.choice(
            ["correctness", "security", "performance", "reliability", "maintainability", "style", "test"]
        ),
        "title": f"{rng.choice(_WORDS).capitalize()} {rng.choice(_VERBS)} under load",
        "file": rng.choice(changed),
        "line": start,
        "message": " ".join(_sentence(rng, rng.randint(6, 18)) for _ in range(rng.randint(1, 4))),
    }
    if rng.random() < 0.5:
        item["end_line"] = start + rng.randint(0, 40)
    if rng.random() < 0.35:
        item["suggestion"] = rng.choice(_SNIPPETS)
    if rng.random() < 0.7:
        item["confidence"] = rng.choice(["high", "medium", "low"])
    if rng.random() < 0.3:
        item["rule_id"] = f"{rng.choice(['SEC', 'PERF', 'BUG'])}-{rng.randint(1, 99):02d}"
    return item


def _answer(rng: random.Random) -> Record:
    changed = sorted(
        {f"{rng.choice(_ROOTS)}/{rng.choice(_LEAVES)}/{rng.choice(_LEAVES)}{rng.choice(_SUFFIXES)}" for _ in range(6)}
    )
    count = 0
    while count < 30 and rng.random() < 0.8:  # geometric, mean 4
        count += 1
    body: dict[str, Any] = {"schema_version": "1.0", "prompt_version": "1.0.0"}
    if rng.random() < 0.6:
        body["summary"] = _sentence(rng, rng.randint(8, 25))
    body["findings"] = [_finding(rng, changed, n) for n in range(count)]
    roll = rng.random()
    kind = "clean"
    if roll < 0.09:
        kind = "defect"
        _spoil(rng, body, changed)
    layout = rng.randrange(4)
    if layout == 0:
        text = json.dumps(body, ensure_ascii=rng.random() < 0.5)
    elif layout == 3:
        text = json.dumps(body, separators=(", ", ": "), ensure_ascii=False)
    else:
        text = json.dumps(body, indent=2 * layout, ensure_ascii=False)
    if 0.09 <= roll < 0.11:
        kind = "wrapped"
        text = _wrap(rng, text)
    return Record(text.encode(), changed, kind)


def _spoil(rng: random.Random, body: dict[str, Any], changed: list[str]) -> None:
    findings = body["findings"]
    if not findings:
        findings.append(_finding(rng, changed, 0))
    item = rng.choice(findings)
    spoil = rng.randrange(8)
    if spoil == 0:
        item["severity"] = item["severity"].upper()
    elif spoil == 1:
        item["line"] = float(item["line"]) + 0.5
    elif spoil == 2:
        item["file"] = item["file"].replace("/", "\\")
    elif spoil == 3:
        item["message"] = f"{item['message']}\n"
    elif spoil == 4:
        del item["title"]
    elif spoil == 5:
        item["end_line"] = max(1, item["line"] - 3)
        item["line"] += 1
    elif spoil == 6:
        item["reviewer"] = "bot"
    else:
        item["category"] = "bug-risk"


def _wrap(rng: random.Random, text: str) -> str:
    style = rng.randrange(4)
    if style == 0:
        return f"```json\n{text}\n```"
    if style == 1:
        return f"I looked at the diff. Findings below.\n\n```\n{text}\n```\n\nLet me know if you need more."
    if style == 2:
        return f"<think>\nCheck the locking first, then the error paths.\n</think>\n\n{text}"
    return f"Sure! {text}"
