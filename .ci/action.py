"""The steps of the promptops GitHub Action (action.yml), as a script that runs anywhere.

Inputs come as the action passes them, in environment variables:

- ``INPUT_LINT`` (``true``/``false``): ``promptops lint``, its SARIF report written to ``INPUT_SARIF_FILE``
  (default ``promptops-lint.sarif``) for code scanning;
- ``INPUT_RELEASE_CHECK`` (``true``/``false``): ``promptops release check``;
- ``INPUT_ROLLOUT_GATE`` (a plan file, empty for none): ``promptops rollout gate PLAN``, with
  ``INPUT_GATE_PURPOSE`` (``monitor``/``promote``) and ``INPUT_STORE`` (empty: the default store).

It writes a Markdown job summary to ``$GITHUB_STEP_SUMMARY`` (standard output when unset), the outputs
``exit-code``, ``verdict``, ``sarif-file`` and one ``*-exit-code`` per command to ``$GITHUB_OUTPUT``, and exits
with the worst exit code of the commands (3 > 2 > 1 > 0; promptops' documented codes). With
``PROMPTOPS_ACTION_DEFER_EXIT=true`` it exits 0 and leaves failing to a later step (after the SARIF upload).
A command whose output cannot be read counts as a tool failure (3): the gate never fails open.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TOOL_FAILURE = 3
MAX_ROWS = 50  # findings and metrics listed in the summary; the rest are counted
VERDICT_ICONS = {"Passed": "✅", "PassedWithWarnings": "⚠️", "Skipped": "⏭️", "Failed": "❌", "Escalate": "🛑"}


class InputError(Exception):
    """An input of the action has a value it cannot take."""


@dataclass
class Outcome:
    name: str
    code: int
    summary: list[str]


def main() -> int:
    try:
        lint = _flag("INPUT_LINT", default=True)
        release_check = _flag("INPUT_RELEASE_CHECK", default=False)
        plan = os.environ.get("INPUT_ROLLOUT_GATE", "").strip()
        purpose = os.environ.get("INPUT_GATE_PURPOSE", "").strip() or "monitor"
        if purpose not in ("monitor", "promote"):
            raise InputError(f"gate-purpose: expected monitor or promote, got {purpose!r}")
    except InputError as problem:
        print(f"promptops action: error: {problem}", file=sys.stderr)
        return TOOL_FAILURE
    if not (lint or release_check or plan):
        print(
            "promptops action: error: nothing to run (lint, release-check and rollout-gate are all off)",
            file=sys.stderr,
        )
        return TOOL_FAILURE
    outputs: dict[str, str] = {}
    outcomes: list[Outcome] = []
    if lint:
        sarif = Path(os.environ.get("INPUT_SARIF_FILE", "").strip() or "promptops-lint.sarif").resolve()
        outcomes.append(run_lint(sarif))
        outputs["sarif-file"] = str(sarif) if sarif.is_file() else ""
    if release_check:
        outcomes.append(run_release_check())
    if plan:
        outcome, verdict = run_gate(plan, purpose, os.environ.get("INPUT_STORE", "").strip())
        outcomes.append(outcome)
        outputs["verdict"] = verdict
    code = max(outcome.code for outcome in outcomes)
    for outcome in outcomes:
        outputs[f"{outcome.name}-exit-code"] = str(outcome.code)
    outputs["exit-code"] = str(code)
    write_summary(outcomes, code)
    write_outputs(outputs)
    if os.environ.get("PROMPTOPS_ACTION_DEFER_EXIT", "").strip().lower() == "true":
        return 0
    return code


def _flag(name: str, *, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value not in ("true", "false"):
        raise InputError(f"{name[6:].lower().replace('_', '-')}: expected true or false, got {value!r}")
    return value == "true"


def promptops(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the promptops CLI of this interpreter (the one the action installed it into)."""
    return subprocess.run([sys.executable, "-m", "promptops", *args], capture_output=True, text=True, check=False)


def _errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    sys.stderr.write(done.stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    return ["", "```text", *lines[:MAX_ROWS], "```"] if lines else []


def run_lint(sarif: Path) -> Outcome:
    done = promptops("lint", "--format", "sarif", "--output", str(sarif))
    lines = ["## promptops lint", ""]
    code = done.returncode
    try:
        results = [r for run in json.loads(sarif.read_text(encoding="utf-8"))["runs"] for r in run.get("results", [])]
    except (OSError, ValueError, KeyError, TypeError):
        results = None
    if results is None:
        code = max(code, TOOL_FAILURE)
        lines.append(f"❌ lint could not run (exit {done.returncode}).")
    else:
        errors = sum(1 for r in results if r.get("level") == "error")
        warnings = sum(1 for r in results if r.get("level") == "warning")
        icon = "❌" if code >= 2 else "⚠️" if warnings else "✅"
        lines.append(f"{icon} {errors} errors, {warnings} warnings (exit {code}).")
        if results:
            lines += ["", "| location | rule | message |", "| --- | --- | --- |"]
            for result in results[:MAX_ROWS]:
                lines.append(f"| {_location(result)} | {result.get('ruleId', '')} | {_cell(_message(result))} |")
            if len(results) > MAX_ROWS:
                lines.append(f"\n... and {len(results) - MAX_ROWS} more in the SARIF report.")
    return Outcome("lint", code, lines + _errors(done))


def run_release_check() -> Outcome:
    done = promptops("release", "check")
    code = done.returncode
    icon = "✅" if code == 0 else "⚠️" if code == 1 else "❌"
    lines = ["## promptops release check", "", f"{icon} exit {code}."]
    if done.stdout.strip():
        lines += ["", "```text", *done.stdout.rstrip().splitlines()[:MAX_ROWS], "```"]
    sys.stdout.write(done.stdout)
    return Outcome("release-check", code, lines + _errors(done))


def run_gate(plan: str, purpose: str, store: str) -> tuple[Outcome, str]:
    args = ["rollout", "gate", plan, "--purpose", purpose, "--format", "json"]
    if store:
        args += ["--store", store]
    done = promptops(*args)
    code = done.returncode
    lines = [f"## promptops rollout gate `{plan}`", ""]
    try:
        result: dict[str, Any] = json.loads(done.stdout)
        verdict = str(result["verdict"])
    except (ValueError, KeyError, TypeError):
        # No verdict to show: whatever the exit code said, the gate did not pass.
        code = max(code, TOOL_FAILURE)
        lines.append(f"❌ **error**: the gate gave no verdict (exit {done.returncode}).")
        return Outcome("gate", code, lines + _errors(done)), "error"
    step = f"step {result.get('step')} ({result.get('step_name')}, weight {result.get('weight')})"
    lines.append(f"{VERDICT_ICONS.get(verdict, '❔')} **{verdict}** at {step}: {result.get('sentence') or ''}")
    if result.get("reason"):
        lines.append(f"\nReason: `{result['reason']}`")
    problems = (result.get("parser") or {}).get("problems") or []
    lines += [f"- {_cell(str(problem))}" for problem in problems[:MAX_ROWS]]
    metrics = result.get("metrics") or []
    if metrics:
        lines += ["", "| metric | severity | status | candidate | SLO | why |", "| --- | --- | --- | --- | --- | --- |"]
        for metric in metrics[:MAX_ROWS]:
            arm = (metric.get("arms") or {}).get("candidate") or {}
            rate = arm.get("rate")
            seen = f"{rate:.4f} ({arm.get('x')}/{arm.get('n')})" if isinstance(rate, int | float) else "n/a"
            lines.append(
                f"| {metric.get('metric')} | {metric.get('severity')} | {metric.get('status')} | {seen} | "
                f"{metric.get('slo')} | {_cell(str(metric.get('message') or metric.get('reason') or ''))} |"
            )
    lines.append(f"\nExit {code}.")
    return Outcome("gate", code, lines + _errors(done)), verdict


def _location(result: dict[str, Any]) -> str:
    try:
        physical = result["locations"][0]["physicalLocation"]
        return f"{physical['artifactLocation']['uri']}:{physical['region']['startLine']}"
    except (KeyError, IndexError, TypeError):
        return ""


def _message(result: dict[str, Any]) -> str:
    message = result.get("message")
    return str(message.get("text", "")) if isinstance(message, dict) else ""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def write_summary(outcomes: list[Outcome], code: int) -> None:
    icon = "✅" if code == 0 else "⚠️" if code == 1 else "❌"
    text = "\n".join([f"# promptops {icon} exit {code}", ""] + [line for o in outcomes for line in [*o.summary, ""]])
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        with open(target, "a", encoding="utf-8") as summary:
            summary.write(text + "\n")
    else:
        print(text)


def write_outputs(outputs: dict[str, str]) -> None:
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    with open(target, "a", encoding="utf-8") as out:
        for name, value in outputs.items():
            out.write(f"{name}={value}\n")  # one-line values: paths, codes and verdict names


if __name__ == "__main__":
    sys.exit(main())
