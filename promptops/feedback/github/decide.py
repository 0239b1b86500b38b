"""One precedence from what happened on a pull request to a feedback event per finding (docs/usefulness.md).

1. fixed: a commit of the pull request changes the commented lines within ``window`` of the comment, or
   applies the comment's suggestion (GitHub's "Apply suggestion" commit; evidence "suggestion") at any time.
2. accepted: a thumbs-up by a person on the finding's comment.
3. accepted: the thread resolved by a person after the lines changed (a later commit, or GitHub marks it outdated).
4. dismissed: a thumbs-down by a person.
5. dismissed: the thread resolved by a person with no change.
6. ignored: the pull request is closed and none of the above holds.
Bots' reactions and resolutions and bulk resolutions decide nothing; findings on open pull requests are pending.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from promptops.feedback.github.model import NOBODY, Actor, Comment, Commit, PullRequest, Resolution
from promptops.feedback.github.patches import Lines, follow

SOURCE = "github"
FEEDBACK_VERSION = "1.0"
MARKER = re.compile(r"<!--\s*promptops:finding\s+(\S{1,200})\s+response=(\S{1,200})\s*-->")
_SUGGESTION = re.compile(r"^```suggestion\b", re.MULTILINE)


@dataclass(frozen=True)
class Settings:
    window: timedelta = timedelta(days=7)
    bulk_count: int = 5  # this many resolutions by one actor ...
    bulk_seconds: float = 30.0  # ... within this many seconds are a bulk resolution
    bots: frozenset[str] = frozenset()  # logins to treat as bots besides GitHub's apps (machine users)


@dataclass
class Collected:
    events: list[dict[str, Any]] = field(default_factory=list)
    pending: int = 0  # findings on open pull requests (or ones no document gave a state for)
    unmarked: int = 0  # threads with no finding marker (a person's own comments, or a removed marker)

    def to_dict(self) -> dict[str, Any]:
        outcomes: dict[str, int] = defaultdict(int)
        for event in self.events:
            outcomes[event["outcome"]] += 1
        return {
            "events": len(self.events),
            "outcomes": dict(sorted(outcomes.items())),
            "pending": self.pending,
            "unmarked": self.unmarked,
        }


def collect(pulls: Iterable[PullRequest], settings: Settings) -> Collected:
    pulls = sorted(pulls, key=lambda p: (p.repo, p.number))
    bulk = _bulk_resolutions(pulls, settings)
    result = Collected()
    for pull in pulls:
        for root in sorted(pull.threads):
            marked = _finding(pull, root)
            if marked is None:
                result.unmarked += 1
            elif pull.state != "closed":
                result.pending += 1
            else:
                result.events.append(_decide(pull, root, marked, bulk, settings))
    return result


def _finding(pull: PullRequest, root: int) -> tuple[Comment, str, str] | None:
    """The first live comment of the thread whose latest body holds a marker: (comment, finding, response)."""
    thread = sorted(
        (c for c in pull.comments.values() if root in (c.database_id, c.reply_to)),
        key=lambda c: (c.created, c.database_id),
    )
    for comment in thread:
        found = MARKER.search(comment.body)
        if found and not comment.deleted:
            return comment, found.group(1), found.group(2)
    return None


def _actor(actor: Actor, settings: Settings) -> Actor:
    return Actor(actor.login, "bot") if actor.login in settings.bots else actor


def _person(actor: Actor, settings: Settings) -> bool:
    return _actor(actor, settings).kind == "person"


def _bulk_resolutions(pulls: list[PullRequest], settings: Settings) -> set[tuple[str, int, int]]:
    """Threads resolved in bulk: >= bulk_count resolutions by one actor within bulk_seconds. A resolution
    known only from a GraphQL snapshot has no time; an actor with bulk_count of those on one pull request is
    taken as resolving them in bulk (the safe side: a resolution only ever adds acceptance)."""
    timed: dict[str | None, list[tuple[datetime, tuple[str, int, int]]]] = defaultdict(list)
    untimed: dict[tuple[str, int, str | None], list[tuple[str, int, int]]] = defaultdict(list)
    for pull in pulls:
        for root, thread in pull.threads.items():
            state = thread.resolution()
            if state is None or not state.resolved:
                continue
            key = (pull.repo, pull.number, root)
            if state.time is None:
                untimed[(pull.repo, pull.number, state.actor.login)].append(key)
            else:
                timed[state.actor.login].append((state.time, key))
    bulk = {key for keys in untimed.values() if len(keys) >= settings.bulk_count for key in keys}
    span = timedelta(seconds=settings.bulk_seconds)
    for resolutions in timed.values():
        resolutions.sort()
        times = [time for time, _ in resolutions]
        for first in range(len(resolutions)):
            last = first
            while last + 1 < len(resolutions) and times[last + 1] - times[first] <= span:
                last += 1
            if last - first + 1 >= settings.bulk_count:
                bulk.update(key for _, key in resolutions[first : last + 1])
    return bulk


def _change(pull: PullRequest, comment: Comment) -> Commit | None:
    """The first later commit of the pull request that changes the commented lines (or removes the file)."""
    if comment.side != "RIGHT" or comment.line is None:
        return None  # lines of the old file (LEFT) cannot be followed through the branch's commits
    lines = Lines(comment.start_line or comment.line, comment.line)
    path = comment.path
    commits = list(pull.commits.values())
    shas = [commit.sha for commit in commits]
    if comment.original_commit in shas:
        later = commits[shas.index(comment.original_commit) + 1 :]
    else:  # the commented commit was force-pushed away: go by time
        later = [commit for commit in commits if commit.time > comment.created]
    for commit in later:
        for change in commit.files:
            if path not in (change.filename, change.previous):
                continue
            if change.status == "removed":
                return commit
            if change.patch is None:  # binary or too large for GitHub to show: no lines to follow
                continue
            moved = follow(change.patch, lines)
            if moved is None:
                return commit
            lines, path = moved, change.filename
    return None


def _decide(
    pull: PullRequest, root: int, marked: tuple[Comment, str, str], bulk: set[tuple[str, int, int]], settings: Settings
) -> dict[str, Any]:
    comment, finding_id, response_id = marked
    thread = pull.threads[root]
    base = {"comment_id": root, "url": comment.url}
    commit = _change(pull, comment)
    # "Later" is the pull request's commit order after the commented commit; the window bounds the time of an
    # ordinary commit, while an applied suggestion is the finding's own text taken whenever it happened.
    applied = commit is not None and _SUGGESTION.search(comment.body) and commit.message.startswith("Apply suggestion")
    if commit is not None and (applied or commit.time <= comment.created + settings.window):
        evidence = {
            "kind": "suggestion" if applied else "commit",
            "sha": commit.sha,
            **base,
            "url": commit.url or comment.url,
        }
        author = _actor(commit.author, settings)
        return _event(pull, root, finding_id, response_id, "fixed", commit.time, author, evidence, commit.sha)
    reactions = sorted(
        (r for r in comment.reactions.values() if _person(r.actor, settings) and r.actor != comment.author),
        key=lambda r: (r.time, r.actor.login or ""),
    )
    resolution = thread.resolution()
    resolved: Resolution | None = None
    if (
        resolution is not None
        and resolution.resolved
        and _person(resolution.actor, settings)
        and (pull.repo, pull.number, root) not in bulk
    ):
        resolved = resolution
    changed = commit is not None or thread.outdated
    closed = pull.closed_at or comment.created
    for outcome, content in (("accepted", "+1"), ("dismissed", "-1")):
        first = next((r for r in reactions if r.content == content), None)
        if first is not None:
            evidence = {"kind": "reaction", "reaction": content, **base}
            key = f"{content}:{first.actor.login}"
            return _event(pull, root, finding_id, response_id, outcome, first.time, first.actor, evidence, key)
        if resolved is not None and changed == (outcome == "accepted"):
            evidence = {
                "kind": "resolution",
                "changed": "yes" if changed else "no",
                "thread_id": thread.node_id,
                **base,
            }
            key = f"{resolved.actor.login}:{evidence['changed']}"
            return _event(
                pull, root, finding_id, response_id, outcome, resolved.time or closed, resolved.actor, evidence, key
            )
    evidence = {"kind": "closed", "merged": "yes" if pull.merged else "no", **base, "url": pull.url or comment.url}
    return _event(pull, root, finding_id, response_id, "ignored", closed, NOBODY, evidence, "closed")


def _event(
    pull: PullRequest,
    root: int,
    finding_id: str,
    response_id: str,
    outcome: str,
    time: datetime,
    actor: Actor,
    evidence: dict[str, Any],
    key: str,
) -> dict[str, Any]:
    # The id hashes what identifies the decision, not incidental fields (urls, node ids a source may lack),
    # so collecting again from other documents yields the same id and ingest keeps one copy.
    identity = "\x1f".join(
        [SOURCE, pull.repo, str(pull.number), str(root), finding_id, outcome, str(evidence["kind"]), key]
    )
    return {
        "event_id": "gh-" + hashlib.sha256(identity.encode()).hexdigest()[:32],
        "finding_id": finding_id,
        "response_id": response_id,
        "outcome": outcome,
        "time": time.isoformat(timespec="seconds"),
        "source": SOURCE,
        "actor": actor.login,
        "actor_kind": actor.kind,
        "evidence": {k: v for k, v in evidence.items() if v not in ("", None)},
        "feedback_version": FEEDBACK_VERSION,
    }
