"""Lint report formats: text (default), json, github (workflow annotations), sarif (SARIF 2.1.0).

SARIF carries what GitHub code scanning requires: ``$schema``, ``version``, ``runs[].tool.driver`` with every
rule (``id``, ``name``, ``shortDescription``, ``fullDescription``, ``help``, default level), and per result
``ruleId``, ``level``, ``message.text``, one location with a repo-relative ``artifactLocation.uri`` and a full
``region``, and ``partialFingerprints.primaryLocationLineHash`` so re-runs do not open duplicate alerts.
Rule ids are the stable PO codes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from typing import Any

from promptops.lint.engine import LintReport
from promptops.lint.model import Finding, Rule

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FORMATS = ("text", "json", "github", "sarif")


def render_report(
    report: LintReport, fmt: str, rules: Sequence[Rule], sources: dict[str, list[str]], tool_version: str
) -> str:
    """The report in format ``fmt``; ``sources`` maps files to their lines (for SARIF fingerprints)."""
    if fmt == "json":
        return json.dumps(to_json(report), indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return "".join(github_line(f) + "\n" for f in report.findings)
    if fmt == "sarif":
        return json.dumps(to_sarif(report, rules, sources, tool_version), indent=2, ensure_ascii=False) + "\n"
    return to_text(report)


def summary(report: LintReport) -> dict[str, int]:
    return {
        "files": len(report.files),
        "errors": report.errors,
        "warnings": report.warnings,
        "suppressed": report.suppressed,
    }


def to_text(report: LintReport) -> str:
    lines = [
        f"{f.file}:{f.span.line}:{f.span.column}: {f.code} [{f.level}] {f.message} ({f.name})" for f in report.findings
    ]
    suppressed = f" ({report.suppressed} suppressed)" if report.suppressed else ""
    noun = "file" if len(report.files) == 1 else "files"
    if not report.findings:
        lines.append(f"All checks passed: {len(report.files)} {noun} linted{suppressed}.")
    else:
        affected = len({f.file for f in report.findings})
        lines.append(
            f"Found {_count(report.errors, 'error')} and {_count(report.warnings, 'warning')} in "
            f"{affected} of {len(report.files)} {noun}{suppressed}. "
            "Explain a rule with: promptops lint --explain CODE"
        )
    return "\n".join(lines) + "\n"


def to_json(report: LintReport) -> dict[str, Any]:
    return {
        "files": list(report.files),
        "findings": [f.to_dict() for f in report.findings],
        "summary": summary(report),
    }


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(finding: Finding) -> str:
    span = finding.span
    props = (
        f"file={_escape_property(finding.file)},line={span.line},col={span.column},"
        f"endLine={span.end_line},endColumn={span.end_column},"
        f"title={_escape_property(f'{finding.code} {finding.name}')}"
    )
    return f"::{finding.level} {props}::{_escape_data(finding.message)}"


def to_sarif(
    report: LintReport, rules: Sequence[Rule], sources: dict[str, list[str]], tool_version: str
) -> dict[str, Any]:
    import hashlib  # only SARIF needs it

    index = {rule.code: i for i, rule in enumerate(rules)}
    occurrences: Counter[str] = Counter()
    results = []
    for finding in report.findings:
        lines = sources.get(finding.file, [])
        text = lines[finding.span.line - 1] if 0 < finding.span.line <= len(lines) else ""
        # Stable across runs and unrelated edits: rule, file and the flagged line's text, plus an occurrence
        # counter for identical lines (GitHub's own hash has the same "hash:occurrence" shape).
        key = hashlib.sha256(f"{finding.code}\0{finding.file}\0{text.strip()}".encode()).hexdigest()[:32]
        occurrences[key] += 1
        results.append(
            {
                "ruleId": finding.code,
                "ruleIndex": index[finding.code],
                "level": str(finding.level),
                "message": {"text": finding.message},
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": finding.file, "uriBaseId": "%SRCROOT%"},
                            "region": {
                                "startLine": finding.span.line,
                                "startColumn": finding.span.column,
                                "endLine": finding.span.end_line,
                                "endColumn": finding.span.end_column,
                            },
                        },
                    }
                ],
                "partialFingerprints": {"primaryLocationLineHash": f"{key}:{occurrences[key]}"},
            }
        )
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "promptops",
                        "version": tool_version,
                        "rules": [_sarif_rule(rule) for rule in rules],
                    }
                },
                "automationDetails": {"id": "promptops-lint/"},
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def _sarif_rule(rule: Rule) -> dict[str, Any]:
    doc = rule.doc()
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary()},
        "fullDescription": {"text": doc.split("\n\n", 2)[1] if doc.count("\n\n") else rule.summary()},
        "help": {"text": doc},
        "defaultConfiguration": {"level": str(rule.level)},
        "properties": {"tags": ["prompt", "contract"]},
    }


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
