"""Lint report formats: text (default), json, github (workflow annotations), sarif (SARIF 2.1.0), gitlab
(GitLab's code quality report).

SARIF follows the conventions of ``promptops.core.sarif`` (what GitHub code scanning requires), with a full
``region`` per result; rule ids are the stable PO codes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from promptops.core import sarif
from promptops.core.escape import one_line
from promptops.core.findings import Check, Finding
from promptops.lint.engine import LintReport

SARIF_SCHEMA = sarif.SARIF_SCHEMA
FORMATS = ("text", "json", "github", "sarif", "gitlab")


def render_report(
    report: LintReport,
    fmt: str,
    rules: Sequence[Check],
    sources: dict[str, list[str]],
    tool_version: str,
    automation_id: str = "promptops-lint/",
) -> str:
    """The report in format ``fmt``; ``sources`` maps files to their lines (for SARIF fingerprints)."""
    if fmt == "json":
        return json.dumps(to_dict(report), indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return "".join(github_line(f) + "\n" for f in report.findings)
    if fmt == "gitlab":
        return json.dumps(to_gitlab(report), indent=2, ensure_ascii=False) + "\n"
    if fmt == "sarif":
        return (
            json.dumps(to_sarif(report, rules, sources, tool_version, automation_id), indent=2, ensure_ascii=False)
            + "\n"
        )
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
        one_line(f"{f.file}:{f.span.line}:{f.span.column}: {f.code} [{f.level}] {f.message} ({f.name})")
        for f in report.findings
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


def to_dict(report: LintReport) -> dict[str, Any]:
    return {
        "files": list(report.files),
        "findings": [f.to_dict() for f in report.findings],
        "summary": summary(report),
    }


def _escape_data(text: str) -> str:
    # one line first (control characters escaped), then the runner's own escapes; the line starts with our "::"
    return one_line(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


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
    report: LintReport,
    rules: Sequence[Check],
    sources: dict[str, list[str]],
    tool_version: str,
    automation_id: str = "promptops-lint/",
) -> dict[str, Any]:
    index = {rule.code: i for i, rule in enumerate(rules)}
    fingerprints = sarif.Fingerprints()
    results = []
    for finding in report.findings:
        lines = sources.get(finding.file, [])
        text = lines[finding.span.line - 1] if 0 < finding.span.line <= len(lines) else ""
        span = finding.span
        results.append(
            sarif.result(
                rule_id=finding.code,
                rule_index=index[finding.code],
                level=str(finding.level),
                message=finding.message,
                locations=[
                    sarif.location(finding.file, sarif.region(span.line, span.column, span.end_line, span.end_column))
                ],
                # the flagged line's text: stable across runs and unrelated edits
                fingerprint=fingerprints(finding.code, finding.file, text),
            )
        )
    return sarif.log(
        tool_version=tool_version,
        rules=[_sarif_rule(rule) for rule in rules],
        results=results,
        automation_id=automation_id,
    )


def _sarif_rule(rule: Check) -> dict[str, Any]:
    doc = rule.doc()
    return sarif.rule(
        rule_id=rule.code,
        name=rule.name,
        summary=rule.summary(),
        description=doc.split("\n\n", 2)[1] if doc.count("\n\n") else rule.summary(),
        help_text=doc,
        level=str(rule.level),
        tags=["prompt", "contract"],
    )


# GitLab's code quality severities (info, minor, major, critical, blocker) for lint levels.
GITLAB_SEVERITY = {"error": "major", "warning": "minor"}


def to_gitlab(report: LintReport) -> list[dict[str, Any]]:
    """The findings as a GitLab code quality report (a JSON array the merge request widget reads)."""
    issues = []
    seen: dict[str, int] = {}
    for finding in report.findings:
        key = f"{finding.code}\0{finding.file}\0{finding.span.line}\0{finding.message}"
        seen[key] = seen.get(key, 0) + 1  # identical findings on one line still need distinct fingerprints
        issues.append(
            {
                "description": f"{finding.code} {finding.message}",
                "check_name": finding.code,
                "fingerprint": hashlib.sha256(f"{key}\0{seen[key]}".encode()).hexdigest(),
                "severity": GITLAB_SEVERITY.get(str(finding.level), "major"),
                "location": {"path": finding.file, "lines": {"begin": finding.span.line, "end": finding.span.end_line}},
            }
        )
    return issues


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
