"""The GitHub collector live: pagination and rate limits against recorded answers replayed on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.feedback.github_replay import (
    FIXTURES,
    RESET_SOON,
    Answer,
    Replay,
    collect_command,
    expected,
    graphql_key,
    serving,
)


@pytest.fixture
def collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    return collect_command(tmp_path, monkeypatch, capsys)


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def recorded() -> dict[str, list[Answer]]:
    """GitHub's answers for acme/widgets#7 and #8, with a secondary limit on the second GraphQL page and the
    primary limit spent by the first page of the commit list."""
    cursors = load("graphql_cursors.json")["7"]
    quota = {"x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4990", "x-ratelimit-reset": "1999999999"}
    secondary = Answer(
        {
            "message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
            "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
        },
        403,
        {"Retry-After": "1"},
    )
    routes = {
        graphql_key(7, cursors[0]): [Answer(load("graphql_pr7_page1.json"), headers=quota)],
        graphql_key(7, cursors[1]): [secondary, Answer(load("graphql_pr7_page2.json"), headers=quota)],
        graphql_key(7, cursors[2]): [Answer(load("graphql_pr7_page3.json"), headers=quota)],
        graphql_key(8, None): [Answer(load("graphql_pr8.json"), headers=quota)],
        "/repos/acme/widgets/pulls/8/commits?per_page=100": [Answer([], headers=quota)],
    }
    commits = load("commits_pr7.json")["commits"]
    listed = [
        {key: c[key] for key in ("sha", "node_id", "commit", "url", "html_url", "author", "parents")} for c in commits
    ]
    half = len(listed) // 2
    first_page = "/repos/acme/widgets/pulls/7/commits?per_page=100"
    spent = {**quota, "x-ratelimit-remaining": "0", "x-ratelimit-reset": RESET_SOON}
    routes[first_page] = [Answer(listed[:half], headers={**spent, "Link": f'<{{api}}{first_page}&page=2>; rel="next"'})]
    routes[f"{first_page}&page=2"] = [Answer(listed[half:], headers={"Link": f'<{{api}}{first_page}>; rel="first"'})]
    for c in commits:
        routes[f"/repos/acme/widgets/commits/{c['sha']}"] = [Answer(c, headers=quota)]
    return routes


@pytest.mark.slow  # waits out a Retry-After and a primary limit's reset: a few seconds
def test_live_collection_gives_exactly_the_expected_events(
    collect: Callable[..., tuple[int, str, str]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("REVIEW_TOKEN", "ghs_recorded")
    out = tmp_path / "events.jsonl"
    with serving(Replay(recorded())) as replay:
        code, _, stderr = collect(
            "--pr",
            "acme/widgets#7",
            "--pr",
            "acme/widgets#8",
            "--api-url",
            replay.url,
            "--token-env",
            "REVIEW_TOKEN",
            "--output",
            str(out),
        )
    assert code == 0, stderr
    assert [json.loads(line) for line in out.read_text().splitlines()] == expected("expected_live.jsonl")
    assert "3 findings pending on open pull requests" in stderr
    cursors = load("graphql_cursors.json")["7"]
    # Three GraphQL pages, the second asked twice (after its secondary limit), then both pages of commits.
    assert replay.log[:5] == [
        graphql_key(7, cursors[0]),
        graphql_key(7, cursors[1]),
        graphql_key(7, cursors[1]),
        graphql_key(7, cursors[2]),
        "/repos/acme/widgets/pulls/7/commits?per_page=100",
    ]
    assert "/repos/acme/widgets/pulls/7/commits?per_page=100&page=2" in replay.log
    assert replay.early == []  # nothing asked before the spent limit's reset
    assert replay.authorizations == {"Bearer ghs_recorded"}
