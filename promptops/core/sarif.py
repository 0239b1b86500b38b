"""SARIF 2.1.0 logs in the shape GitHub code scanning reads, shared by every command that emits SARIF.

What GitHub requires and every promptops log carries: ``$schema``, ``version``, ``runs[].tool.driver`` with
every rule (``id``, ``name``, ``shortDescription``, ``fullDescription``, ``help``, default level), and per
result ``ruleId``, ``level``, ``message.text``, a location with a repo-relative ``artifactLocation.uri``
(``uriBaseId`` ``%SRCROOT%``) and a ``region``, and ``partialFingerprints.primaryLocationLineHash`` so a re-run
does not open duplicate alerts. Each run names its producer in ``automationDetails.id`` (``promptops-lint/``,
``promptops-merge/``) so the two kinds of result never close each other's alerts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"


class Fingerprints:
    """``primaryLocationLineHash`` values for one log.

    Stable across runs and unrelated edits: a hash of the rule, the file and a text that identifies the
    result on its line, plus an occurrence counter for identical keys (GitHub's own hash has the same
    ``hash:occurrence`` shape).
    """

    def __init__(self) -> None:
        self._seen: Counter[str] = Counter()

    def __call__(self, rule_id: str, uri: str, text: str) -> str:
        import hashlib  # only SARIF output needs it: keeps a plain lint run's imports small

        key = hashlib.sha256(f"{rule_id}\0{uri}\0{text.strip()}".encode()).hexdigest()[:32]
        self._seen[key] += 1
        return f"{key}:{self._seen[key]}"


def region(
    start_line: int, start_column: int | None = None, end_line: int | None = None, end_column: int | None = None
) -> dict[str, int]:
    out = {"startLine": start_line}
    for key, value in (("startColumn", start_column), ("endLine", end_line), ("endColumn", end_column)):
        if value is not None:
            out[key] = value
    return out


def location(uri: str, where: dict[str, int]) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": uri, "uriBaseId": "%SRCROOT%"},
            "region": where,
        },
    }


def result(
    *,
    rule_id: str,
    rule_index: int,
    level: str,
    message: str,
    locations: Sequence[dict[str, Any]],
    fingerprint: str,
    properties: dict[str, Any] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "ruleId": rule_id,
        "ruleIndex": rule_index,
        "level": level,
        "message": {"text": message},
        "locations": list(locations),
        "partialFingerprints": {"primaryLocationLineHash": fingerprint},
    }
    if properties:
        out["properties"] = properties
    return out


def rule(
    *, rule_id: str, name: str, summary: str, description: str, help_text: str, level: str, tags: Sequence[str]
) -> dict[str, Any]:
    return {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": summary},
        "fullDescription": {"text": description},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": level},
        "properties": {"tags": list(tags)},
    }


def log(
    *, tool_version: str, rules: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]], automation_id: str
) -> dict[str, Any]:
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": {"name": "promptops", "version": tool_version, "rules": list(rules)}},
                "automationDetails": {"id": automation_id},
                "columnKind": "unicodeCodePoints",
                "results": list(results),
            }
        ],
    }
