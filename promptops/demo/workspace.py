"""The demo's workspace: a copy of a project, rewound to before the review-result contract's first release.

The demo then replays that contract's real release history (each prompt snapshot and schema comes from the
source project's release lock) and rolls the last release out. Nothing in the source project is written.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from promptops.core.contract import VERSIONS_DIR
from promptops.core.errors import PromptopsError
from promptops.core.lock import load_lock
from promptops.rollout.plan import ROLLOUT_DIR, load_plan, plan_path

CONTRACT = "review-result"
ROLLOUT = "review-1.1"
HEAD = f"templates/{CONTRACT}.j2"
_COPIED = (VERSIONS_DIR, "templates", ROLLOUT_DIR)


@dataclass(frozen=True)
class ReleaseStep:
    """One release to replay: the head template text, its partials and schema, and the lock's note."""

    version: str
    schema_version: str
    note: str
    head: str
    partials: dict[str, str]  # file name under templates/_partials/ -> text
    schema: str  # the schema file's text


class DemoError(PromptopsError):
    """The source project lacks what the demo replays."""


def prepare(source: Path, workspace: Path) -> tuple[ReleaseStep, ...]:
    """Copy ``source``'s versions/, templates/ and rollout/ into ``workspace`` (new or empty), rewind the
    review-result contract to before its first release and the rollout plan to before its first step, and
    return the releases to replay, oldest first."""
    if workspace.exists() and any(workspace.iterdir()):
        raise DemoError(f"{workspace}: the demo workspace must be a new or empty directory")
    history = _history(source)
    workspace.mkdir(parents=True, exist_ok=True)
    for name in _COPIED:
        shutil.copytree(source / name, workspace / name, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    contract = workspace / VERSIONS_DIR / CONTRACT
    shutil.rmtree(contract / "prompts")
    (contract / "releases.yaml").unlink()
    for schema in (contract / "schemas").glob("*.json"):
        if schema.name != f"{history[0].schema_version}.json":
            schema.unlink()
    install(workspace, history[0])
    plan = plan_path(workspace, CONTRACT, ROLLOUT)
    plan.write_text(_without_history(plan.read_text(encoding="utf-8")), encoding="utf-8")
    return history


def install(workspace: Path, step: ReleaseStep, *, prompt_version: str | None = None) -> None:
    """Make ``step``'s template the head (its pins rewritten to ``prompt_version`` when given), with its
    partials and schema."""
    head = step.head
    if prompt_version is not None:
        head = head.replace(
            f'{{% set prompt_version = "{step.version}" %}}', f'{{% set prompt_version = "{prompt_version}" %}}'
        )
    (workspace / HEAD).write_text(head, encoding="utf-8")
    for name, text in step.partials.items():
        (workspace / "templates" / "_partials" / name).write_text(text, encoding="utf-8")
    schema = workspace / VERSIONS_DIR / CONTRACT / "schemas" / f"{step.schema_version}.json"
    schema.write_text(step.schema, encoding="utf-8")


def _history(source: Path) -> tuple[ReleaseStep, ...]:
    base = source / VERSIONS_DIR / CONTRACT
    if not (base / "contract.yaml").is_file():
        raise DemoError(f"{source}: no {VERSIONS_DIR}/{CONTRACT}/ here: run the demo from a promptops project (--root)")
    lock = load_lock(source, CONTRACT)
    if len(lock.releases) < 2:
        raise DemoError(f"{lock.source}: the demo replays at least two releases of {CONTRACT}")
    plan_file = plan_path(source, CONTRACT, ROLLOUT)
    plan = load_plan(plan_file, plan_file.relative_to(source).as_posix())
    if lock.releases[-1].version != plan.candidate.prompt_version:
        raise DemoError(f"{plan.source}: the demo rolls out the latest release, {lock.releases[-1].version}")
    steps = []
    for release in lock.releases:
        partials = base / "prompts" / str(release.version) / "_partials"
        try:
            steps.append(
                ReleaseStep(
                    str(release.version),
                    str(release.schema_version),
                    release.note,
                    (base / release.snapshot).read_text(encoding="utf-8"),
                    {p.name: p.read_text(encoding="utf-8") for p in sorted(partials.glob("*.j2"))},
                    (base / "schemas" / f"{release.schema_version}.json").read_text(encoding="utf-8"),
                )
            )
        except OSError as problem:
            raise DemoError(f"{lock.source}: release {release.version}: cannot read {problem.filename}") from None
    return tuple(steps)


def _without_history(text: str) -> str:
    """The plan's text up to its history (appended last by every transition)."""
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("history:"):
            return "".join(lines[:index])
    return text
