"""``promptops feedback collect github``: feedback events from what happened to posted findings on GitHub.

Reads webhook deliveries, GraphQL ``reviewThreads`` pages and commits documents (files, or ``-`` for standard
input), and with ``--pr`` fetches the same live from the GitHub API. Events go to ``--output`` (written
atomically) or standard output, one JSON object a line; a summary goes to standard error.

Exit codes: 0 events written (none is fine: every finding may be pending); 3 an input is unreadable or
malformed, the token is missing, or the API could not be used (unreachable, refused, rate-limited past
``--max-wait``).
"""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from pathlib import Path

import click

from promptops.cli.project import echo_lines
from promptops.core.files import read_text, write_output
from promptops.core.outcomes import ExitCode
from promptops.feedback.github import Api, CollectError, Settings, collect, fetch, read_documents

_PULL = re.compile(r"^([A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#([1-9][0-9]*)$")


@click.group("collect")
def collect_group() -> None:
    """Turn what happened to posted findings into feedback events (JSON Lines for `feedback ingest`)."""


@collect_group.command("github")
@click.argument("inputs", nargs=-1, metavar="[PATH]...")
@click.option(
    "--pr",
    "pulls",
    multiple=True,
    metavar="OWNER/NAME#N",
    help="Fetch this pull request from the GitHub API (repeatable).",
)
@click.option(
    "--token-env",
    default="GITHUB_TOKEN",
    show_default=True,
    metavar="NAME",
    help="Environment variable holding the API token (with --pr).",
)
@click.option(
    "--api-url",
    default="https://api.github.com",
    show_default=True,
    help="GitHub API root (GitHub Enterprise: https://HOST/api/v3).",
)
@click.option(
    "--max-wait",
    type=click.FloatRange(min=0),
    default=900,
    show_default=True,
    help="Longest wait for a rate limit (seconds) before giving up.",
)
@click.option(
    "--window-days",
    type=click.FloatRange(min=0),
    default=7,
    show_default=True,
    help="A commit counts as a fix within this many days of the comment.",
)
@click.option(
    "--bulk-count",
    type=click.IntRange(min=2),
    default=5,
    show_default=True,
    help="This many resolutions by one actor ...",
)
@click.option(
    "--bulk-seconds",
    type=click.FloatRange(min=0),
    default=30,
    show_default=True,
    help="... within this many seconds are a bulk resolution.",
)
@click.option(
    "--bot",
    "bots",
    multiple=True,
    metavar="LOGIN",
    help="Treat this login as a bot (a machine user); GitHub apps are bots already.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the events here instead of standard output.",
)
def github_command(
    inputs: tuple[str, ...],
    pulls: tuple[str, ...],
    token_env: str,
    api_url: str,
    max_wait: float,
    window_days: float,
    bulk_count: int,
    bulk_seconds: float,
    bots: tuple[str, ...],
    output: Path | None,
) -> int:
    """Feedback events from GitHub review threads: offline from PATHs, or live with --pr."""
    if not inputs and not pulls:
        raise click.UsageError("give PATHs of webhook deliveries, GraphQL pages or commits, or --pr OWNER/NAME#N")
    documents = [(read_text(name), name) for name in inputs]
    if pulls:
        token = os.environ.get(token_env, "")
        if not token:
            raise CollectError(f"--pr needs an API token: environment variable {token_env} is not set")
        api = Api(url=api_url, token=token, max_wait=max_wait)
        for pull in pulls:
            found = _PULL.match(pull)
            if found is None:
                raise click.BadParameter(f"{pull!r} is not OWNER/NAME#NUMBER", param_hint="--pr")
            documents.extend(fetch(api, found.group(1), int(found.group(2))))
    settings = Settings(timedelta(days=window_days), bulk_count, bulk_seconds, frozenset(bots))
    result = collect(read_documents(documents).values(), settings)
    lines = "".join(json.dumps(event, sort_keys=True) + "\n" for event in result.events)
    if output is None:
        click.echo(lines, nl=False)
    else:
        write_output(output, lines.encode())
    summary = result.to_dict()
    outcomes = ", ".join(f"{name} {n}" for name, n in summary["outcomes"].items()) or "none"
    echo_lines(
        f"collected {summary['events']} feedback events ({outcomes}); {summary['pending']} findings pending on open "
        f"pull requests; {summary['unmarked']} threads without a finding marker",
        err=True,
    )
    return ExitCode.OK
