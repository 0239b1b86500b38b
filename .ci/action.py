"""The steps of the promptops GitHub Action (action.yml), as a script that runs anywhere.

Inputs come as the action passes them, in environment variables:

- ``INPUT_LINT`` (``true``/``false``): ``promptops lint``, its SARIF report written to ``INPUT_SARIF_FILE``
  (default ``promptops-lint.sarif``) for code scanning;
- ``INPUT_RELEASE_CHECK`` (``true``/``false``): ``promptops release check``;
- ``INPUT_ROLLOUT_GATE`` (a plan file, empty for none): ``promptops rollout gate PLAN``, with
  ``INPUT_GATE_PURPOSE`` (``monitor``/``promote``), ``INPUT_STORE`` (empty: the default store) and
  ``INPUT_STRICT_ARTIFACTS`` (``true``, the default: a gate with no data to judge fails the job).

It writes a Markdown job summary to ``$GITHUB_STEP_SUMMARY`` (standard output when unset), the outputs
``exit-code``, ``verdict``, ``sarif-file`` and one ``*-exit-code`` per command to ``$GITHUB_OUTPUT``, and exits
with the worst exit code of the commands (3 > 2 > 1 > 0; promptops' documented codes). With
``PROMPTOPS_ACTION_DEFER_EXIT=true`` it exits 0 and leaves failing to a later step (after the SARIF upload).
A command whose output cannot be read counts as a tool failure (3): the gate never fails open.

Everything it passes on comes from the checkout, and a pull request writes the checkout: the SARIF report is
written and read without following a symlink, every value is escaped to one line before it reaches the log,
the summary or ``$GITHUB_OUTPUT`` (``promptops.core.escape``), and outputs use the delimiter form with a random
delimiter, so no name can add an output or a workflow command of its own.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from promptops.core.escape import one_line, one_line_cell
from promptops.store import DEFAULT_STORE

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
        strict_artifacts = _flag("INPUT_STRICT_ARTIFACTS", default=True)
        if purpose not in ("monitor", "promote"):
            raise InputError(f"gate-purpose: expected monitor or promote, got {purpose!r}")
    except InputError as problem:
        print(f"promptops action: error: {one_line(problem)}", file=sys.stderr)
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
        # absolute(), never resolve(): resolving would follow a committed symlink and write to its target
        sarif = Path(os.environ.get("INPUT_SARIF_FILE", "").strip() or "promptops-lint.sarif").absolute()
        outcome, written = run_lint(sarif)
        outcomes.append(outcome)
        outputs["sarif-file"] = str(sarif) if written else ""
    if release_check:
        outcomes.append(run_release_check())
    if plan:
        outcome, verdict = run_gate(plan, purpose, os.environ.get("INPUT_STORE", "").strip(), strict_artifacts)
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
    return subprocess.run(
        [sys.executable, "-m", "promptops", *args],
        capture_output=True,
        encoding="utf-8",
        errors="backslashreplace",  # bytes that are not UTF-8 are shown, never a crash of the action
        check=False,
    )


def _log(text: str, stream: Any) -> list[str]:
    """``text``'s lines, each escaped to one line, written to ``stream`` (the CI log) and returned."""
    lines = [one_line(line) for line in text.splitlines() if line.strip()]
    stream.write("".join(line + "\n" for line in lines))
    return lines


def _fenced(lines: list[str]) -> list[str]:
    """A Markdown code block holding ``lines``: its fence is longer than any backtick run in them."""
    if not lines:
        return []
    fence = "`" * max(3, 1 + max((len(run) for line in lines for run in re.findall(r"`+", line)), default=0))
    return ["", f"{fence}text", *lines[:MAX_ROWS], fence]


def _errors(done: subprocess.CompletedProcess[str]) -> list[str]:
    return _fenced(_log(done.stderr, sys.stderr))


def _read_regular(path: Path) -> str | None:
    """The text of ``path`` when it is a regular file (a symlink is not followed), else None."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    with os.fdopen(handle, "rb") as stream:
        if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
            return None
        return stream.read().decode("utf-8", errors="replace")


def run_lint(sarif: Path) -> tuple[Outcome, bool]:
    """Lint's outcome, and whether it wrote the SARIF report (a regular file, fit to upload)."""
    done = promptops("lint", "--format", "sarif", "--output", str(sarif))
    lines = ["## promptops lint", ""]
    code = done.returncode
    text = _read_regular(sarif)
    try:
        results = [r for run in json.loads(text or "")["runs"] for r in run.get("results", [])]
    except (ValueError, KeyError, TypeError):
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
                lines.append(
                    f"| {_cell(_location(result))} | {_cell(result.get('ruleId', ''))} | {_cell(_message(result))} |"
                )
            if len(results) > MAX_ROWS:
                lines.append(f"\n... and {len(results) - MAX_ROWS} more in the SARIF report.")
    return Outcome("lint", code, lines + _errors(done)), results is not None


def run_release_check() -> Outcome:
    done = promptops("release", "check")
    code = done.returncode
    icon = "✅" if code == 0 else "⚠️" if code == 1 else "❌"
    lines = ["## promptops release check", "", f"{icon} exit {code}."]
    lines += _fenced(_log(done.stdout, sys.stdout))
    return Outcome("release-check", code, lines + _errors(done))


def run_gate(plan: str, purpose: str, store: str, strict_artifacts: bool) -> tuple[Outcome, str]:
    args = ["rollout", "gate", plan, "--purpose", purpose, "--format", "json"]
    if store:
        args += ["--store", store]
    if strict_artifacts:
        args.append("--strict-artifacts")
    done = promptops(*args)
    code = done.returncode
    lines = [f"## promptops rollout gate {_code(plan)}", ""]
    store_note = _store_note(store)
    try:
        result: dict[str, Any] = json.loads(done.stdout)
        verdict = str(result["verdict"])
        if verdict not in VERDICT_ICONS:
            raise ValueError(verdict)
    except (ValueError, KeyError, TypeError):
        # No verdict to show: whatever the exit code said, the gate did not pass.
        code = max(code, TOOL_FAILURE)
        lines.append(f"❌ **error**: the gate gave no verdict (exit {done.returncode}).")
        lines += [f"\n{store_note}"] if store_note else []
        return Outcome("gate", code, lines + _errors(done)), "error"
    step = f"step {result.get('step')} ({result.get('step_name')}, weight {result.get('weight')})"
    lines.append(f"{VERDICT_ICONS[verdict]} **{verdict}** at {_cell(step)}: {_cell(result.get('sentence') or '')}")
    if result.get("reason"):
        lines.append(f"\nReason: {_code(result['reason'])}")
    if verdict == "Skipped":
        lines.append("\n" + _no_data(strict_artifacts, code, store_note))
    problems = (result.get("parser") or {}).get("problems") or []
    lines += [f"- {_cell(problem)}" for problem in problems[:MAX_ROWS]]
    metrics = result.get("metrics") or []
    if metrics:
        lines += ["", "| metric | severity | status | candidate | SLO | why |", "| --- | --- | --- | --- | --- | --- |"]
        for metric in metrics[:MAX_ROWS]:
            arm = (metric.get("arms") or {}).get("candidate") or {}
            rate = arm.get("rate")
            seen = f"{rate:.4f} ({arm.get('x')}/{arm.get('n')})" if isinstance(rate, int | float) else "n/a"
            cells = [metric.get("metric"), metric.get("severity"), metric.get("status"), seen, metric.get("slo")]
            why = metric.get("message") or metric.get("reason") or ""
            lines.append("| " + " | ".join(_cell(cell) for cell in [*cells, why]) + " |")
    lines.append(f"\nExit {code}.")
    return Outcome("gate", code, lines + _errors(done)), verdict


def _store_note(store: str) -> str:
    """What the summary says of a store that is not there: a CI checkout has none unless a step brings it."""
    path = Path(store) if store else Path(DEFAULT_STORE)
    if os.path.lexists(path):
        return ""
    which = "the `store` input" if store else "no `store` input, so the default"
    return (
        f"No diagnostics store at {_cell(path)} ({which}): a CI checkout has none unless an earlier step brings "
        "it (download an artifact, restore a cache, or set `store` to a Parquet export the job can read)."
    )


def _no_data(strict_artifacts: bool, code: int, store_note: str) -> str:
    why = store_note or "The store holds no responses of this step to judge."
    if strict_artifacts:
        return f"❌ The gate had no data to judge, which fails the job (`strict-artifacts` is on, exit {code}). {why}"
    return f"⚠️ The gate had no data to judge and `strict-artifacts` is off, so it does not fail the job. {why}"


def _location(result: dict[str, Any]) -> str:
    try:
        physical = result["locations"][0]["physicalLocation"]
        return f"{physical['artifactLocation']['uri']}:{physical['region']['startLine']}"
    except (KeyError, IndexError, TypeError):
        return ""


def _message(result: dict[str, Any]) -> str:
    message = result.get("message")
    return str(message.get("text", "")) if isinstance(message, dict) else ""


def _cell(value: object) -> str:
    """A value from the checkout or a command's output as Markdown text on one line (a table cell included)."""
    return one_line_cell("" if value is None else value)


def _code(value: object) -> str:
    """A value as inline code on one line: the backtick fence is longer than any run of backticks inside."""
    text = one_line(value)
    fence = "`" * (1 + max((len(run) for run in re.findall(r"`+", text)), default=0))
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


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
    """Each output in the delimiter form (``name<<DELIMITER``, the value, the delimiter) with a delimiter no
    value can guess, and each value escaped to one line: a name from the checkout cannot add an output."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return
    delimiter = f"ghadelimiter_{uuid.uuid4()}"
    with open(target, "a", encoding="utf-8") as out:
        for name, value in outputs.items():
            safe = one_line(value)
            if delimiter in safe:  # cannot happen with a fresh random delimiter; never write a broken record
                raise SystemExit(f"promptops action: error: output {name} holds the delimiter")
            out.write(f"{name}<<{delimiter}\n{safe}\n{delimiter}\n")


if __name__ == "__main__":
    sys.exit(main())
