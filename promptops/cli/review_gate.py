"""``promptops review-gate``: one verdict from a spec's review evidence (docs/review-gate.md).

The adapter's whole job: read the flags and the reviewed repo's ``[tool.promptops.review-gate]`` table once,
build the policy object, call the library and print. Exit codes are the result's; anything that
stops the review (bad repo, bad config, I/O) raises and ``promptops.cli.run`` exits 3 with one line.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO

import click
import msgspec

from promptops.cli.changes import changed_files_options, gather_changed_files
from promptops.cli.numbers import FiniteFloat
from promptops.cli.project import Project, echo_lines, format_option, pass_project
from promptops.core import settings
from promptops.core.contract import list_contracts
from promptops.core.specs import SpecError
from promptops.parsing import ChangedFiles
from promptops.review_gate import (
    ReviewGateError,
    ReviewPolicy,
    ReviewRequest,
    Stage,
    Topology,
    render_text,
    review,
    stderr_notice,
)
from promptops.review_gate.reviewers import DEFAULT_BLOCK_CONFIDENCE, ReviewerOutputs

CONFIG_FILE = "pyproject.toml"


@click.command("review-gate")
@click.option("--spec", "spec_id", required=True, metavar="SPEC-ID", help="Spec to review, e.g. SPEC-KIT-9.")
@click.option(
    "--stage",
    required=True,
    type=click.Choice([s.value for s in Stage], case_sensitive=False),
    help="Stage to review (Unlock reviews the Audit output; Specify has no review point).",
)
@click.option(
    "--repo",
    type=click.Path(file_okay=False, path_type=Path),
    default=".",
    show_default=True,
    help="Repository holding the evidence and its pyproject.toml.",
)
@changed_files_options(", for reviewer outputs")
@click.option(
    "--block-confidence",
    type=FiniteFloat(0, 1),
    default=DEFAULT_BLOCK_CONFIDENCE,
    show_default=True,
    help="A merged reviewer finding at the highest severity blocks from this confidence up.",
)
@click.option("--strict-warnings", is_flag=True, help="Exit 1 when the review passes with warnings.")
@click.option(
    "--strict-artifacts",
    is_flag=True,
    help=(
        "Exit 2 when no review artifacts exist for the stage, a consensus file cannot be read exactly as "
        "written, or reviewer outputs cannot be evaluated."
    ),
)
@format_option()
@pass_project
def review_gate(
    project: Project,
    spec_id: str,
    stage: str,
    repo: Path,
    changed: tuple[str, ...],
    changed_files_from: IO[str] | None,
    git_range: str | None,
    block_confidence: float,
    strict_warnings: bool,
    strict_artifacts: bool,
    output_format: str,
) -> int:
    """Gate a change on its reviewers' evidence for one stage of a spec.

    Exit codes: 0 Passed, PassedWithWarnings, Skipped or NotApplicable; 1 PassedWithWarnings with
    --strict-warnings; 2 Failed (escalate to a human), or Skipped with --strict-artifacts; 3 tool failure.
    """
    files = gather_changed_files(repo, changed, changed_files_from, git_range)
    policy = ReviewPolicy(
        strict_warnings=strict_warnings, strict_artifacts=strict_artifacts, topology=load_topology(repo)
    )
    provider = ReviewerOutputs(
        contracts={name: project.contract(name) for name in list_contracts(project.root)},
        changed_files=None if files is None else ChangedFiles(files),
        block_confidence=block_confidence,
        strict_artifacts=strict_artifacts,
    )
    request = ReviewRequest(
        repo_root=repo, spec_id=spec_id, stage=Stage.parse(stage), policy=policy, signal_providers=(provider,)
    )
    result = review(request)
    notice = stderr_notice(result)
    if notice is not None:
        echo_lines(f"promptops: {notice}", err=True)
    if output_format == "json":
        click.echo(result.dumps())
    else:
        echo_lines(*render_text(result))
    return result.exit_code


def load_topology(repo: Path) -> Topology:
    """The evidence topology from ``repo``'s pyproject.toml; the default topology when the table is absent."""
    if not repo.is_dir():
        what = "does not exist" if not repo.exists() else "is not a directory"
        raise ReviewGateError(f"repository {repo.as_posix()} {what}")
    path = repo / CONFIG_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Topology()
    except (OSError, UnicodeDecodeError) as problem:
        reason = problem.strerror if isinstance(problem, OSError) else "not UTF-8"
        raise ReviewGateError(f"{path.as_posix()}: cannot read: {reason or problem}") from None
    source = path.as_posix()
    try:
        found, document = settings.parse(text, source)
    except SpecError as problem:
        raise ReviewGateError(str(problem)) from None
    if found.review_gate is None:
        return Topology()
    try:
        return Topology(**{k: v for k, v in msgspec.structs.asdict(found.review_gate).items() if v is not None})
    except ReviewGateError as problem:  # a path that would leave the repo
        key = (*settings.TABLE, "review-gate")
        raise ReviewGateError(
            str(SpecError(source, f"[tool.promptops.review-gate]: {problem}", document.line(key)))
        ) from None
