"""``promptops rollout simulate``: a response log of simulated reviewer traffic, to rehearse a rollout."""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

import click

from promptops.cli.numbers import FiniteFloat
from promptops.cli.project import Project, format_option, pass_project
from promptops.cli.rollout_common import PLAN_FILE, read_plan
from promptops.cli.store_options import parse_now
from promptops.core.errors import PromptopsError
from promptops.core.escape import one_line
from promptops.core.files import write_output
from promptops.core.outcomes import ExitCode

_PROFILES = ("baseline", "candidate", "regression")  # promptops.simulate's ArmProfile constants
MAX_RESPONSES = 10_000_000  # the log is streamed: memory does not grow with it, time and disk do
WRITE_LINES = 10_000  # records encoded into one write
MAX_HOURS = 24 * 366 * 10  # ten years
LATEST = datetime(9000, 1, 1, tzinfo=UTC)  # far enough for any rehearsal, far from datetime's end


@click.command("simulate")
@click.argument("plan_file", type=PLAN_FILE)
@click.option(
    "--responses",
    type=click.IntRange(min=1, max=MAX_RESPONSES),
    required=True,
    help="How many response records.",
)
@click.option("--start", "start_text", metavar="ISO", help="Time of the window's start (UTC; default: now).")
@click.option(
    "--hours",
    type=FiniteFloat(min=0, min_open=True, max=MAX_HOURS),
    default=1.0,
    show_default=True,
    help="Length of the window the records spread over.",
)
@click.option(
    "--seed", type=click.IntRange(0, 2**63 - 1), default=0, show_default=True, help="Same seed, same records."
)
@click.option("--weight", type=FiniteFloat(0, 1), help="Split traffic at this weight (default: the plan's).")
@click.option(
    "--candidate-profile",
    type=click.Choice(_PROFILES),
    default="candidate",
    show_default=True,
    help="Defect rates of the candidate arm (regression: many dropped findings).",
)
@click.option(
    "--out",
    "out_path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="JSONL response log to write (a regular file, replaced atomically).",
)
@format_option()
@pass_project
def simulate_command(
    project: Project,
    plan_file: Path,
    responses: int,
    start_text: str | None,
    hours: float,
    seed: int,
    weight: float | None,
    candidate_profile: str,
    out_path: Path,
    output_format: str,
) -> int:
    """Write a response log of simulated reviewer traffic for PLAN_FILE, to rehearse a rollout.

    Each record's arm comes from the plan's real assignment of its unit; defects (drops, coercions, wrappers,
    truncation, malformed JSON) occur at each arm's profile rates. Feed the log to ``promptops ingest``.
    Shows progress on stderr when it is a terminal.
    """
    plan = read_plan(project, plan_file)
    start = parse_now(start_text, "--start")
    try:
        end = start + timedelta(hours=hours)
        end.astimezone(UTC)
    except OverflowError:
        end = datetime.max.replace(tzinfo=UTC)
    if end > LATEST:
        raise click.BadParameter(
            f"the window ends after {LATEST.year}: start earlier or use fewer --hours", param_hint="--start/--hours"
        )
    _check_replaceable(project, out_path)
    from promptops import simulate as sim  # the simulator (and rstr) load only for this command

    profiles = {"baseline": sim.BASELINE, "candidate": sim.CANDIDATE, "regression": sim.REGRESSION}
    records = sim.simulate(
        plan,
        project.contract(plan.contract, check_schemas=False),
        responses=responses,
        start=start,
        end=end,
        seed=seed,
        profiles={"baseline": sim.BASELINE, "candidate": profiles[candidate_profile]},
        weight=weight,
    )
    arms: dict[str, int] = {}
    _check_replaceable(project, out_path)  # again: the path may have changed while the plan was read
    write_output(out_path, _encoded(_progress(records, responses, "simulating responses"), arms), mode=0o644)
    summary = {"log": project.relative(out_path), "responses": responses, "arms": arms}
    if output_format == "json":
        click.echo(json.dumps(summary, indent=2))
    else:
        split = ", ".join(f"{arm} {count:,}" for arm, count in sorted(arms.items()))
        noun = "simulated response" if responses == 1 else "simulated responses"
        click.echo(one_line(f"{summary['log']}: {responses:,} {noun} ({split})"))
    return ExitCode.OK


def _check_replaceable(project: Project, path: Path) -> None:
    """``--out`` replaces regular files only: a device node, directory, FIFO or symlink stays as it is."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    except OSError as problem:
        raise PromptopsError(f"{project.relative(path)}: cannot check: {problem.strerror}") from None
    if not stat.S_ISREG(mode):
        kind = "a symlink" if stat.S_ISLNK(mode) else "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise PromptopsError(f"{project.relative(path)}: is {kind}; --out replaces regular files only")


def _encoded(records: Iterable[dict[str, Any]], arms: dict[str, int]) -> Iterator[bytes]:
    """The log's bytes, WRITE_LINES records at a time, counting each arm's records into ``arms``."""
    lines: list[str] = []
    for record in records:
        arms[record["arm"]] = arms.get(record["arm"], 0) + 1
        lines.append(json.dumps(record))
        if len(lines) >= WRITE_LINES:
            yield ("\n".join(lines) + "\n").encode()
            lines = []
    if lines:
        yield ("\n".join(lines) + "\n").encode()


T = TypeVar("T")


def _progress(items: Iterable[T], length: int, label: str) -> Iterator[T]:
    """``items``, with a progress bar on stderr when it is a terminal (quiet in pipes, logs and CI)."""
    if not sys.stderr.isatty():
        yield from items
        return
    with click.progressbar(items, length=length, label=label, file=sys.stderr) as bar:
        yield from bar
