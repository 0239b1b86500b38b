"""``promptops feedback``: what became of the findings a reviewer posted (docs/feedback.md).

``feedback ingest`` exit codes: 0 every event was stored (or was already there); 2 some lines were bad (each
reported with file:line; every good event was still stored); 3 the tool could not do its job (store locked past
--lock-timeout, a file or the store could not be read). Events for findings the store does not know yet are
stored, counted and reported; they are no error.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.store_options import lock_timeout_option, store_location, store_option
from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line
from promptops.core.outcomes import ExitCode
from promptops.core.wording import count

if TYPE_CHECKING:
    from promptops.store import BadRecord

MAX_REPORTED = 100  # bad lines printed one per line on stderr; the rest are counted


@click.command("ingest")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@store_option("DuckDB file to write")
@lock_timeout_option()
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=50_000, show_default=True, help="Events per transaction."
)
@format_option()
@pass_project
def ingest(
    project: Project,
    paths: tuple[Path, ...],
    store_path: Path | None,
    lock_timeout: float,
    batch_size: int,
    output_format: str,
) -> int:
    """Store feedback events (.jsonl, .jsonl.gz, or directories of them) in the diagnostics store.

    Each line is one event in the feedback event format (schema feedback-event-1.0). Ingest is idempotent on
    (source, event_id). Events for findings the store does not hold yet are stored and reported as unknown.

    Exit codes: 0 all events stored; 2 some lines were bad (reported with file:line, the rest stored); 3 tool
    failure (store locked past --lock-timeout, unreadable file or store).
    """
    from promptops.store import Store  # the store extra loads here, never for --help
    from promptops.store.feedback import ingest_feedback

    path, display = store_location(project, store_path)
    shown = 0

    def on_bad(bad: BadRecord) -> None:
        nonlocal shown
        shown += 1
        if shown <= MAX_REPORTED:
            click.echo(f"promptops: {one_line(bad)}", err=True)

    with Store.open(path, display=display, lock_timeout=lock_timeout) as store:
        report = ingest_feedback(list(paths), store, relative=project.relative, batch_size=batch_size, on_bad=on_bad)
    if shown > MAX_REPORTED:
        more = shown - MAX_REPORTED
        click.echo(f"promptops: ... and {count(more, 'more bad line')} (the first {MAX_REPORTED} are shown)", err=True)
    for failed in report.failed:
        click.echo(f"promptops: error: {one_line(failed.error or '')}", err=True)
    bad = report.total("bad_records")
    code = ExitCode.TOOL_FAILURE if report.failed else ExitCode.FAILED if bad else ExitCode.OK
    if output_format == "json":
        click.echo(json.dumps({"store": display, **report.to_dict(), "exit_code": code}, indent=2))
    else:
        unknown = report.total("unknown")
        click.echo(
            one_line(
                f"{display}: {count(report.total('inserted'), 'event')} stored"
                f" ({unknown:,} for findings not in the store yet), {report.total('duplicates'):,} already stored,"
                f" {count(bad, 'bad line')}; {count(report.total('records'), 'line')} read from"
                f" {count(len(report.files), 'file')}"
            )
        )
    return code


@click.command("marker")
@click.argument("finding_id")
@click.argument("response_id")
def marker(finding_id: str, response_id: str) -> None:
    """Print the marker a bot embeds in the comment it posts for a finding.

    The marker is an HTML comment, invisible on GitHub, that lets the feedback collector tie what happens to
    the comment back to FINDING_ID of RESPONSE_ID.
    """
    from promptops.parsing.ids import marker as render

    try:
        click.echo(render(finding_id, response_id))
    except ValueError as problem:
        raise PromptopsError(str(problem)) from None


class _FeedbackGroup(click.Group):
    """Holds no command objects itself, so every listing (the CLI reference too) asks ``get_command``, which
    loads ``collect`` (the collectors, promptops.cli.feedback_collect) only when it is run or listed."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return ["collect", "ingest", "marker"]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name == "collect":
            from promptops.cli.feedback_collect import collect_group

            return collect_group
        return {"ingest": ingest, "marker": marker}.get(cmd_name)


@click.group("feedback", cls=_FeedbackGroup)
def feedback() -> None:
    """Finding feedback: collect and store what developers did with each finding, and mark posted comments."""
