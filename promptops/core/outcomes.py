"""The results vocabulary, defined once: verdicts, exit codes, and the one map from a verdict to a code.

Every gate and command speaks it (the rollout gate, the review gate, the CLI). Spelling rule: verdicts are
CamelCase (the review gate's published names); exit codes are the documented numbers below. This module
imports nothing from promptops, so any layer may use it.
"""

from __future__ import annotations

from enum import IntEnum, StrEnum


class Verdict(StrEnum):
    PASSED = "Passed"
    PASSED_WITH_WARNINGS = "PassedWithWarnings"
    FAILED = "Failed"
    ESCALATE = "Escalate"  # the rollout gate holds: a person decides
    SKIPPED = "Skipped"
    NOT_APPLICABLE = "NotApplicable"  # the review gate's Specify stage has no review point


class ExitCode(IntEnum):
    """0 success (accepted, clean, passed, skipped); 1 warnings under ``--strict-warnings``; 2 the subject
    failed (a rejected response, an error finding, a failed or escalated gate); 3 the tool could not do its job
    (bad flags, unreadable files, broken contracts, internal errors)."""

    OK = 0
    WARNINGS = 1
    FAILED = 2
    TOOL_FAILURE = 3


def exit_code(verdict: Verdict, *, strict_warnings: bool = False, strict_artifacts: bool = False) -> ExitCode:
    """Passed, NotApplicable 0; PassedWithWarnings 0 (1 strict); Failed, Escalate 2; Skipped 0 (2 strict)."""
    if verdict in (Verdict.FAILED, Verdict.ESCALATE):
        return ExitCode.FAILED
    if verdict is Verdict.PASSED_WITH_WARNINGS:
        return ExitCode.WARNINGS if strict_warnings else ExitCode.OK
    if verdict is Verdict.SKIPPED:
        return ExitCode.FAILED if strict_artifacts else ExitCode.OK
    return ExitCode.OK


def verdict_of(*, failed: bool, warned: bool) -> Verdict:
    """The verdict of a command that found errors (``failed``) or only warnings (``warned``)."""
    return Verdict.FAILED if failed else Verdict.PASSED_WITH_WARNINGS if warned else Verdict.PASSED
