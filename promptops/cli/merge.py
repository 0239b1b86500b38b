"""``promptops merge``: merge reviewer outputs into one ranked report (thin shell over promptops.merge)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any

import click

from promptops import __version__
from promptops.cli.changes import NO_CHANGED_FILES, changed_files_options, gather_changed_files, repo_option
from promptops.cli.numbers import FiniteFloat
from promptops.cli.project import Project, format_option, pass_project
from promptops.core.errors import PromptopsError
from promptops.core.files import read_input
from promptops.core.outcomes import ExitCode
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.merge import FORMATS, MergeOptions, ReviewerOutput, merge, to_markdown, to_result, to_sarif
from promptops.parsing import tiers

# The contract merge writes its result in: the agent-output aggregator returns an AgentOutput.
RESULT_CONTRACT = "agent-output"
_OUTPUT = re.compile(r"(?P<contract>[^=:]+)(?::(?P<tier>[^=]+))?=(?P<path>.+)\Z")


def _per_contract(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in values:
        name, sep, version = item.partition("=")
        if not sep or not name or not version:
            raise click.BadParameter(f"{item!r} is not CONTRACT=VERSION", ctx, param)
        out[name] = version
    return out


@click.command()
@click.argument("outputs", nargs=-1, required=True, metavar="CONTRACT[:TIER]=PATH...")
@changed_files_options()
@repo_option
@click.option(
    "--prompt-version",
    "prompt_versions",
    multiple=True,
    metavar="CONTRACT=X.Y.Z",
    callback=_per_contract,
    help="Pinned prompt version of a contract's outputs (default: its contract.yaml policy).",
)
@click.option(
    "--schema-version",
    "schema_versions",
    multiple=True,
    metavar="CONTRACT=X.Y",
    callback=_per_contract,
    help="Required schema version of a contract's outputs (default: its contract.yaml policy).",
)
@click.option(
    "--similarity",
    type=FiniteFloat(0.0, 1.0),
    default=MergeOptions.similarity,
    show_default=True,
    help="Near-duplicate threshold: token overlap of two findings at the same file and line.",
)
@click.option("--no-report-filter", is_flag=True, help="Report every valid finding (ignore report filters).")
@click.option(
    "--strict-warnings", is_flag=True, help="Exit 1 when an output has parser warnings (dropped findings, truncation)."
)
@format_option(*FORMATS)
@pass_project
def merge_command(
    project: Project,
    outputs: tuple[str, ...],
    changed: tuple[str, ...],
    changed_files_from: IO[str] | None,
    git_range: str | None,
    repo: Path,
    prompt_versions: dict[str, str],
    schema_versions: dict[str, str],
    similarity: float,
    no_report_filter: bool,
    strict_warnings: bool,
    output_format: str,
) -> int:
    """Merge reviewer OUTPUTS, each given as CONTRACT=PATH or CONTRACT:TIER=PATH (PATH - for standard input).

    Every output is validated with its contract against the changed files; duplicates are merged (same id,
    or same file and line with near-equal text), findings are ranked by severity x confidence and grouped by
    file, and every merged finding lists the reviewers that reported it. The json format is an agent-output
    document. A reviewer named nowhere in an output is called after its file.

    Exit codes: 0 merged, 1 an output has parser warnings (with --strict-warnings), 2 an output was rejected (the
    others are still merged and printed), 3 tool failure.
    """
    files = gather_changed_files(repo, changed, changed_files_from, git_range)
    if files is None:
        raise click.UsageError(NO_CHANGED_FILES)
    unused = sorted((set(prompt_versions) | set(schema_versions)) - {_spec(o)[0] for o in outputs})
    if unused:
        raise click.BadParameter(
            f"no output uses contract {unused[0]!r}", param_hint="--prompt-version/--schema-version"
        )
    readers = [_reader(project, spec, prompt_versions, schema_versions) for spec in outputs]
    report = merge(readers, files, MergeOptions(similarity=similarity, report_filters=not no_report_filter))
    if output_format == "json":
        document = to_result(report, project.contract(RESULT_CONTRACT))
        click.echo(json.dumps(document, indent=2, ensure_ascii=False))
    elif output_format == "sarif":
        click.echo(json.dumps(to_sarif(report, __version__), indent=2, ensure_ascii=False))
    else:
        click.echo(to_markdown(report), nl=False)
    if report.rejected:
        return ExitCode.FAILED
    return ExitCode.WARNINGS if strict_warnings and report.has_warnings else ExitCode.OK


def _spec(text: str) -> tuple[str, str | None, str]:
    match = _OUTPUT.match(text)
    if match is None:
        raise click.BadParameter(f"{text!r} is not CONTRACT=PATH or CONTRACT:TIER=PATH", param_hint="OUTPUTS")
    return match["contract"], match["tier"], match["path"]


def _reader(
    project: Project, spec: str, prompt_versions: dict[str, str], schema_versions: dict[str, str]
) -> ReviewerOutput:
    name, tier, path = _spec(spec)
    contract = project.contract(name)
    if tier is not None:
        contract = tiers.tier(contract, tier)
    policy = contract.default_policy.with_overrides(
        schema_floor=_version(schema_versions.get(name), SchemaVersion.parse, "--schema-version"),
        prompt_version=_version(prompt_versions.get(name), PromptVersion.parse, "--prompt-version"),
    )
    raw = read_input(path)  # bounded; a device, a missing or too large file is one line, exit 3
    source = "-" if path == "-" else project.relative(path)
    return ReviewerOutput(contract, raw, source, policy=policy)


def _version(text: str | None, parse: Any, flag: str) -> Any:
    if text is None:
        return None
    try:
        return parse(text)
    except PromptopsError as exc:
        raise click.BadParameter(str(exc), param_hint=flag) from None
