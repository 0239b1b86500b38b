"""The GitHub collector offline: recorded webhook deliveries, GraphQL pages and commits to feedback events."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest

from promptops.feedback.github import MARKER
from promptops.feedback.github.patches import Lines, follow
from tests.conftest import NetworkBlocked
from tests.feedback.github_replay import (
    FIXTURES,
    OFFLINE,
    Answer,
    Replay,
    collect_command,
    expected,
    graphql_key,
    serving,
)

Collect = Callable[..., tuple[int, str, str]]


@pytest.fixture
def collect(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    return collect_command(tmp_path, monkeypatch, capsys)


def events(text: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in text.splitlines()]


def test_the_recorded_documents_give_exactly_the_expected_events(collect: Collect, tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    code, stdout, stderr = collect(*(str(FIXTURES / name) for name in OFFLINE), "--output", str(out))
    assert (code, stdout) == (0, "")
    got = events(out.read_text())
    assert got == expected("expected_offline.jsonl")
    assert stderr == (
        "collected 120 feedback events (accepted 15, dismissed 12, fixed 25, ignored 68); 3 findings pending on "
        "open pull requests; 2 threads without a finding marker\n"
    )
    by_comment = {e["evidence"]["comment_id"]: e for e in got}  # type: ignore[index]
    # The bulk resolution (hasty, 7 threads in 18 s) and the bot's resolutions decide nothing.
    assert {by_comment[1_970_000 + 10 * i]["outcome"] for i in [*range(52, 58), *range(59, 63)]} == {"ignored"}
    # The edited marker: the latest body (GraphQL's, edited an hour later) names the finding, not the webhook's
    # older one that the input gives last.
    first = json.loads((FIXTURES / "webhook_deliveries.jsonl").read_text().splitlines()[0])
    older = MARKER.search(first["request"]["payload"]["comment"]["body"])
    assert older is not None and first["request"]["payload"]["comment"]["id"] == 1_970_630
    assert by_comment[1_970_630]["outcome"] == "accepted"
    assert by_comment[1_970_630]["finding_id"] not in ("", older.group(1))


def test_collecting_again_from_the_documents_in_another_order_gives_the_same_events(collect: Collect) -> None:
    code, stdout, _ = collect(*(str(FIXTURES / name) for name in reversed(OFFLINE)))
    assert code == 0
    assert events(stdout) == expected("expected_offline.jsonl")


def test_the_bulk_rule_and_the_window_are_settings(collect: Collect) -> None:
    code, stdout, _ = collect(
        *(str(FIXTURES / name) for name in OFFLINE), "--bulk-count", "8", "--window-days", "9", "--bot", "dave"
    )
    assert code == 0
    by_comment = {e["evidence"]["comment_id"]: e for e in events(stdout)}  # type: ignore[index]
    # Seven resolutions by hasty are no bulk under 8: resolved with no change, dismissed.
    assert {by_comment[1_970_000 + 10 * i]["outcome"] for i in range(52, 58)} == {"dismissed"}
    # The commit 8 days after the comment is a fix within 9 days.
    assert {by_comment[1_970_000 + 10 * i]["outcome"] for i in range(25, 28)} == {"fixed"}
    # dave, named a bot, no longer dismisses by resolving.
    assert {by_comment[1_970_000 + 10 * i]["outcome"] for i in range(28, 32)} == {"ignored"}


def test_an_open_pull_request_gives_no_events(collect: Collect) -> None:
    code, stdout, stderr = collect(str(FIXTURES / "graphql_pr8.json"))
    assert (code, stdout) == (0, "")
    assert "3 findings pending on open pull requests" in stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ('{"data": {"repository": null}}\n', "bad.json: data: field 'repository' must be an object"),
        ('{"event": "pull_request"}\n{"nope": 1}\n', "bad.json:1: not JSON"),
        ('[{"kind": "x"}]', "bad.json: not a webhook delivery, a GraphQL reviewThreads page or a commits document"),
        (
            '{"errors": [{"type": "NOT_FOUND", "message": "Could not resolve to a PullRequest"}]}',
            "a GraphQL error answer",
        ),
        (
            '{"repository": "a/b", "number": 1, "commits": [{"sha": "x", "commit": {"committer": {"date": "soon"}}, '
            '"files": []}]}',
            "bad.json: commits[0].commit.committer.date: 'soon' is not an ISO 8601 time",
        ),
    ],
)
def test_a_bad_document_is_one_line_naming_the_file_and_exit_3(
    collect: Collect, tmp_path: Path, content: str, problem: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content.replace('{"event": "pull_request"}\n', '{"event": "pull_request"\n'))
    code, stdout, stderr = collect(str(bad))
    assert (code, stdout) == (3, "")
    assert stderr.count("\n") == 1 and stderr.startswith("promptops: error: ")
    assert problem in stderr


def test_live_mode_needs_the_token_variable(collect: Collect, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REVIEW_TOKEN", raising=False)
    code, _, stderr = collect("--pr", "acme/widgets#7", "--token-env", "REVIEW_TOKEN")
    assert code == 3
    assert stderr == "promptops: error: --pr needs an API token: environment variable REVIEW_TOKEN is not set\n"


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (
            Answer({"message": "You have exceeded a secondary rate limit."}, 403, {"Retry-After": "3600"}),
            "GitHub rate limit: the API asks to wait 3600 s, more than --max-wait 59 s",
        ),
        (  # GraphQL's own limit, with no time named: the 60 s backoff is already too long
            Answer({"data": None, "errors": [{"type": "RATE_LIMITED", "message": "API rate limit exceeded"}]}),
            "GitHub rate limit: the API asks to wait 60 s, more than --max-wait 59 s",
        ),
        (
            Answer({"data": {"repository": None}, "errors": [{"type": "NOT_FOUND", "message": "Could not resolve"}]}),
            "acme/widgets#7 reviewThreads page 1: GitHub's GraphQL API answered: Could not resolve",
        ),
    ],
)
def test_an_api_that_cannot_be_used_stops_with_one_line(
    collect: Collect, monkeypatch: pytest.MonkeyPatch, answer: Answer, problem: str
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_test")
    with serving(Replay({graphql_key(7, None): [answer]})) as replay:
        code, stdout, stderr = collect("--pr", "acme/widgets#7", "--api-url", replay.url, "--max-wait", "59")
    assert (code, stdout) == (3, "")
    assert stderr == f"promptops: error: {problem}\n"
    assert replay.log == [graphql_key(7, None)]


@pytest.mark.parametrize(
    ("patch", "lines", "after"),
    [
        ("@@ -18,5 +18,5 @@\n a\n b\n-c\n+C\n d\n e", Lines(20, 20), None),  # the line itself
        ("@@ -18,5 +18,5 @@\n a\n b\n-c\n+C\n d\n e", Lines(21, 25), Lines(21, 25)),  # just below
        ("@@ -0,0 +1,3 @@\n+x\n+y\n+z", Lines(40, 40), Lines(43, 43)),  # lines added on top
        ("@@ -2,3 +2,1 @@\n a\n-b\n-c", Lines(10, 12), Lines(8, 10)),  # lines removed above
        ("@@ -22,0 +23,1 @@\n+x", Lines(18, 22), Lines(18, 22)),  # added right after the range
        ("@@ -20,0 +21,1 @@\n+x", Lines(18, 22), None),  # added inside the range
        ("@@ -17,0 +18,1 @@\n+x", Lines(18, 22), Lines(19, 23)),  # added right before it
    ],
)
def test_following_lines_through_a_patch(patch: str, lines: Lines, after: Lines | None) -> None:
    assert follow(patch, lines) == after


def test_connecting_to_another_machine_fails_the_test(no_network: list[str]) -> None:
    with socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect(("192.0.2.1", 443))  # TEST-NET-1: never routed
    assert no_network == ["192.0.2.1"]
    no_network.clear()  # this test wanted the attempt; any other fails at teardown


def test_an_applied_suggestion_is_a_fix_outside_the_window_and_a_commit_is_not(collect: Collect) -> None:
    code, stdout, _ = collect(*(str(FIXTURES / name) for name in OFFLINE), "--window-days", "0.5")
    assert code == 0
    by_comment = {e["evidence"]["comment_id"]: e for e in events(stdout)}  # type: ignore[index]
    outcomes = {i: by_comment[1_970_000 + 10 * i]["outcome"] for i in range(25)}
    assert {outcomes[i] for i in range(20, 25)} == {"fixed"}  # applied two days later
    assert outcomes[0] == "accepted"  # changed a day later, outside the window, then resolved by alice
    assert {outcomes[i] for i in range(1, 20)} == {"ignored"}
