"""The end-to-end demo: lint, compatibility, releases, simulated traffic, gates, promotion, dashboard.

``run`` works in a workspace (promptops.demo.workspace) on a simulated clock ending at ``now``: it replays the
review-result contract's releases (refusing a too-small bump on the way), rolls the last one out through the
shipped plan with simulated reviewer traffic ingested into an embedded DuckDB store, gates every step and
promotes or holds, then writes the dashboard. It yields one ``Stage`` per step as it goes, each with the CLI
command that does the same, so the narrative can be printed while the demo runs. Pure: no printing, no clock
reads, no environment; the caller passes ``now`` and the directories.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from promptops.core.contract import load_contract
from promptops.core.files import write_atomic
from promptops.core.outcomes import Verdict
from promptops.demo import feedback
from promptops.demo.workspace import CONTRACT, ROLLOUT, ReleaseStep, install, prepare
from promptops.lint import head_lint, lint
from promptops.release import CutRequest, plan_cut, write_release
from promptops.report import write_report
from promptops.rollout.gate import GateResult, Purpose
from promptops.rollout.plan import Plan, load_plan, plan_path
from promptops.rollout.policies import RolloutPolicies
from promptops.rollout.session import RolloutRefused, promote, rollback, run_gate
from promptops.rollout.sizing import plan_needs
from promptops.simulate import BASELINE, CANDIDATE, REGRESSION, ArmProfile, simulate
from promptops.store import ParserCache, Store, ingest_logs

STORE = ".promptops/diagnostics.duckdb"
REPORTS = "reports"
DEMO_USER = "promptops-demo"
# Responses simulated per step, enough for the shipped plan's minimums (900 candidate responses at 5%).
TRAFFIC = {"canary": 24_000, "ramp": 12_000, "full": 3_000}
STEP_HOURS = 31  # each step runs past its 24 h minimum


@dataclass(frozen=True)
class Stage:
    """One step of the demo: what happened, and the command that does the same by hand."""

    title: str
    command: str
    lines: tuple[str, ...]
    data: dict[str, Any] = field(default_factory=dict)
    ok: bool = True  # False: the step refused or held, as the story intends

    def to_dict(self) -> dict[str, Any]:
        return {"title": self.title, "command": self.command, "lines": list(self.lines), "ok": self.ok, **self.data}


def run(
    source: Path,
    workspace: Path,
    now: datetime,
    *,
    regression: bool = False,
    useless: bool = False,
    dashboard: bool = True,
) -> Iterator[Stage]:
    """The whole lifecycle in ``workspace`` (new or empty), from the project at ``source``, ending at ``now``.

    ``regression``: the candidate drops many more findings, so the canary gate fails, the rollout is held
    and rolled back. ``useless``: the plan also gates on the acted-on rate, and simulated feedback dismisses most
    of the candidate's findings (which parse perfectly), so the usefulness gate holds it. ``dashboard``: write
    the contract's report into ``reports/`` at the end.
    """
    history = prepare(source, workspace)
    relative = _relative_to(workspace)
    yield _lint_stage(workspace)
    start = now - timedelta(days=5)  # the last release, before the rollout's first step
    yield from _release_stages(workspace, history, start)
    plan_file = plan_path(workspace, CONTRACT, ROLLOUT)
    if useless:
        feedback.add_usefulness_slo(plan_file)
    plan = load_plan(plan_file, relative(plan_file))
    yield _plan_stage(plan)
    store_path = workspace / STORE
    clock = _floor_hour(now - timedelta(hours=3 * STEP_HOURS + 6))
    plan = yield from _parser_stage(workspace, plan_file, plan, clock)
    profiles = {"baseline": BASELINE, "candidate": REGRESSION if regression else CANDIDATE}
    for step_index in range(1, len(plan.steps)):
        step = plan.steps[plan.step]
        responses = TRAFFIC.get(step.name, 3_000)
        end = clock + timedelta(hours=STEP_HOURS)
        log = workspace / "logs" / f"{plan.step:02d}-{step.name}.jsonl"
        yield _traffic_stage(workspace, plan, profiles, log, responses, clock, end, step_index)
        yield _ingest_stage(workspace, store_path, log)
        if useless:
            yield _feedback_stage(workspace, store_path, plan, clock, end, step_index)
        clock = end
        last = plan.step == len(plan.steps) - 1
        purpose = Purpose.MONITOR if last else Purpose.PROMOTE  # nothing to promote to after the last step
        with Store.open(store_path, display=STORE, read_only=True) as store:
            result = run_gate(workspace, plan, _contract(workspace), store.source, clock, purpose)
        if last:
            yield _gate_stage(plan, result, clock, relative(plan_file), purpose)
            break
        moved = yield from _decide(workspace, plan_file, plan, result, clock, relative(plan_file))
        if moved is None:
            break
        plan = moved
    if dashboard:
        yield _dashboard_stage(workspace, store_path, now)


def _lint_stage(workspace: Path) -> Stage:
    report = lint(workspace)
    return Stage(
        "Lint the templates",
        "promptops lint",
        (f"{len(report.files)} files checked: {report.errors} errors, {report.warnings} warnings",),
        {"files_checked": len(report.files), "errors": report.errors, "warnings": report.warnings},
        ok=report.errors == 0,
    )


def _release_stages(workspace: Path, history: tuple[ReleaseStep, ...], start: datetime) -> Iterator[Stage]:
    """Cut the releases before the last schema change quietly, then that one: schema diff, a refused bump, the
    cut; then each later release (a patch on the same schema) with its own cut. The last is cut at ``start``."""
    shown = _last_schema_change(history)

    def when(index: int) -> datetime:
        return start - timedelta(days=10 * (len(history) - 1 - index))

    cut_lines = []
    for index, step in enumerate(history[:shown]):
        if index:
            install(workspace, step)
        cut_lines.append(_cut(workspace, step, when(index)))
    yield Stage("Release history", f"promptops release cut --contract {CONTRACT}", tuple(cut_lines))
    latest, previous = history[shown], history[shown - 1]
    yield _schema_stage(workspace, latest, previous)
    patch = _next_patch(previous.version)
    install(workspace, latest, prompt_version=patch)
    refused = plan_cut(workspace, CutRequest(CONTRACT, _stamp(when(shown)), latest.note, lint=head_lint()))
    yield Stage(
        f"Cut {patch} (a patch bump)",
        f"promptops release cut --contract {CONTRACT}",
        tuple(f"refused: {line}" if i == 0 else line for i, line in enumerate(refused.refusals[0].splitlines()))
        if refused.refused
        else ("unexpectedly accepted",),
        {"refusals": list(refused.refusals)},
        ok=False,
    )
    for index in range(shown, len(history)):
        install(workspace, history[index])
        yield Stage(
            f"Cut {history[index].version}",
            f"promptops release cut --contract {CONTRACT}",
            (_cut(workspace, history[index], when(index)),),
        )


def _last_schema_change(history: tuple[ReleaseStep, ...]) -> int:
    """The index of the last release that targets another schema than the one before it (its schema diff and a
    refused patch bump show what a release guards against), else of the last release."""
    for index in range(len(history) - 1, 0, -1):
        if history[index].schema_version != history[index - 1].schema_version:
            return index
    return len(history) - 1


def _cut(workspace: Path, step: ReleaseStep, when: datetime) -> str:
    plan = plan_cut(workspace, CutRequest(CONTRACT, _stamp(when), step.note, lint=head_lint()))
    if plan.refused or plan.release is None:
        raise RuntimeError(f"the demo's release {step.version} was refused: {'; '.join(plan.refusals)}")
    write_release(workspace, plan)
    release = plan.release
    return (
        f"released {release.version} (schema {release.schema_version}; prompt change {release.prompt_class}, "
        f"schema change {release.schema_class}): {release.note}"
    )


def _schema_stage(workspace: Path, latest: ReleaseStep, previous: ReleaseStep) -> Stage:
    from promptops.compat import classify

    old = json.loads(previous.schema)
    new = json.loads(latest.schema)
    comparison = classify(old, new)
    lines = [
        f"schema {previous.schema_version} -> {latest.schema_version}: {comparison.change} change "
        f"(backward compatible: {'yes' if comparison.backward_compatible else 'no'})"
    ]
    lines += [f"  {d.kind} at {d.path}" for d in comparison.differences]
    folder = f"versions/{CONTRACT}/schemas"
    command = f"promptops compat diff {folder}/{previous.schema_version}.json {folder}/{latest.schema_version}.json"
    return Stage("Diff the schema", command, tuple(lines), {"compat": comparison.to_dict()})


def _plan_stage(plan: Plan) -> Stage:
    lines = [f"{plan.baseline.prompt_version} -> {plan.candidate.prompt_version}, unit {plan.unit}"]
    for index, (step, need) in enumerate(zip(plan.steps, plan_needs(plan), strict=True)):
        if step.weight == 0:
            lines.append(f"step {index} {step.name}: the parser that reads the candidate ships first")
        else:
            lines.append(
                f"step {index} {step.name}: {step.weight:.0%} of units; needs {need.candidate_needed:,} candidate "
                f"and {need.baseline_needed:,} baseline responses"
            )
    return Stage("Plan the rollout", f"promptops rollout plan {plan.source}", tuple(lines))


def _parser_stage(workspace: Path, plan_file: Path, plan: Plan, clock: datetime) -> Generator[Stage, None, Plan]:
    result = run_gate(workspace, plan, _contract(workspace), None, clock, Purpose.PROMOTE)
    moved = yield from _decide(workspace, plan_file, plan, result, clock, plan.source)
    if moved is None:
        raise RuntimeError(f"the demo's parser stage did not pass: {result.sentence}")
    return moved


def _traffic_stage(
    workspace: Path,
    plan: Plan,
    profiles: dict[str, ArmProfile],
    log: Path,
    responses: int,
    start: datetime,
    end: datetime,
    seed: int,
) -> Stage:
    arms: dict[str, int] = {}
    lines = []
    contract = _contract(workspace)
    for record in simulate(plan, contract, responses=responses, start=start, end=end, seed=seed, profiles=profiles):
        arms[record["arm"]] = arms.get(record["arm"], 0) + 1
        lines.append(json.dumps(record))
    write_atomic(log, ("\n".join(lines) + "\n").encode("utf-8"))
    split = ", ".join(f"{arm} {count:,}" for arm, count in sorted(arms.items()))
    return Stage(
        f"Traffic at step {plan.step} ({plan.steps[plan.step].name})",
        f"promptops rollout simulate {plan.source} --responses {responses} --out {_rel(workspace, log)}",
        (f"{responses:,} simulated reviewer responses over {STEP_HOURS} h: {split}",),
        {"responses": responses, "arms": arms},
    )


def _ingest_stage(workspace: Path, store_path: Path, log: Path) -> Stage:
    parsers = ParserCache.for_project(workspace, RolloutPolicies(workspace))
    with Store.open(store_path, display=STORE) as store:
        report = ingest_logs([log], store, parsers, relative=_relative_to(workspace))
    return Stage(
        "Ingest into the diagnostics store",
        f"promptops ingest {_rel(workspace, log)}",
        (f"{report.inserted:,} responses parsed and stored in {STORE}",),
        {"inserted": report.inserted, "bad_records": report.bad_records},
    )


def _feedback_stage(workspace: Path, store_path: Path, plan: Plan, start: datetime, end: datetime, seed: int) -> Stage:
    log = workspace / "feedback" / f"{plan.step:02d}-{plan.steps[plan.step].name}.jsonl"
    with Store.open(store_path, display=STORE) as store:
        written = feedback.write_feedback(store, CONTRACT, plan.rollout_id, start, end, log, seed)
        stored = feedback.ingest(store, log, _rel(workspace, log))
    lines = [f"{stored:,} feedback events stored (developers fixing, accepting or dismissing each finding)"]
    for arm, outcomes in sorted(written.items()):
        total = sum(outcomes.values())
        acted = outcomes.get("fixed", 0) + outcomes.get("accepted", 0)
        lines.append(f"{arm}: {acted:,} of {total:,} findings acted on ({acted / total:.0%}), the rest dismissed")
    command = f"promptops feedback ingest {_rel(workspace, log)}"
    return Stage("Feedback on the findings", command, tuple(lines), {"feedback": written, "stored": stored})


def _decide(
    workspace: Path, plan_file: Path, plan: Plan, result: GateResult, clock: datetime, source: str
) -> Generator[Stage, None, Plan | None]:
    """Gate, then promote on a pass; hold and roll back otherwise. Returns the new plan, or None when held."""
    yield _gate_stage(plan, result, clock, source, Purpose.PROMOTE)
    try:
        moved = promote(plan_file, plan, result, by=DEMO_USER, now=clock)
    except RolloutRefused as refused:
        reason = f"gate {result.verdict} at step {plan.step}: {result.reason}"
        rollback(plan_file, plan, by=DEMO_USER, now=clock, reason=reason)
        yield Stage(
            "Hold and roll back",
            f'promptops rollout rollback {source} --reason "{reason}"',
            (str(refused).split(": ", 1)[0] + "; every unit is back on the baseline (candidate weight 0)",),
            ok=False,
        )
        return None
    yield Stage(
        "Promote",
        f"promptops rollout promote {source}",
        (f"step {moved.step} ({moved.steps[moved.step].name}): the candidate now serves {moved.weight:.0%} of units",),
        {"step": moved.step, "weight": moved.weight},
    )
    return moved


def _gate_stage(plan: Plan, result: GateResult, clock: datetime, source: str, purpose: Purpose) -> Stage:
    lines = [f"{result.verdict}" + (f" [{result.reason}]" if result.reason else "") + f": {result.sentence}"]
    for metric in result.metrics:
        candidate = metric.arms.get("candidate")
        if candidate is not None and candidate.rate is not None:
            floor = metric.pending is not None  # a usefulness metric: decided findings, the SLO a floor
            bound = f"at most {candidate.high:.2%}" if floor else f"up to {candidate.high:.2%}"
            of = f"{candidate.n:,} decided findings" if floor else f"{candidate.n:,}"
            lines.append(
                f"  {metric.metric}: candidate {candidate.rate:.2%} ({bound}) of {of}; SLO {metric.slo:.2%}: "
                f"{metric.status}"
            )
    return Stage(
        f"Gate step {plan.step} ({plan.steps[plan.step].name})",
        f"promptops rollout gate {source} --purpose {purpose}",
        tuple(lines),
        {"gate": result.to_dict(), "at": clock.isoformat()},
        ok=result.verdict in (Verdict.PASSED, Verdict.PASSED_WITH_WARNINGS),
    )


def _dashboard_stage(workspace: Path, store_path: Path, now: datetime) -> Stage:
    with Store.open(store_path, display=STORE, read_only=True) as store:
        files = write_report(workspace, _contract(workspace), store.source, workspace / REPORTS, now=now)
    lines = [f"wrote {_rel(workspace, files.html)} (open it in a browser, offline) and {_rel(workspace, files.json)}"]
    for view in files.report.rollouts:
        state = "rolled back" if view.rolled_back else f"candidate at {view.weight:.0%}"
        lines.append(f"{view.rollout}: step {view.step} ({view.step_name}), {state}; latest gate {view.verdict}")
    return Stage(
        "Dashboard",
        f"promptops report --contract {CONTRACT} --out {REPORTS}/",
        tuple(lines),
        {
            "dashboard": _rel(workspace, files.html),
            "files": [_rel(workspace, files.html), _rel(workspace, files.json)],
            "rollouts": {view.rollout: view.verdict for view in files.report.rollouts},
        },
    )


def _contract(workspace: Path) -> Any:
    return load_contract(workspace, CONTRACT)


def _next_patch(version: str) -> str:
    major, minor, patch = (int(part) for part in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _relative_to(workspace: Path) -> Callable[[Path], str]:
    return lambda path: _rel(workspace, path)


def _rel(workspace: Path, path: Path) -> str:
    try:
        return path.resolve().relative_to(workspace.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
