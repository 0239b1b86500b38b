"""What the GitHub collector knows about a pull request, merged from every document it was given."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from promptops.core.errors import PromptopsError

ActorKind = Literal["person", "bot", "none"]


class CollectError(PromptopsError):
    """A document the collector cannot read, or an API answer it cannot use; the message names the place."""


@dataclass(frozen=True)
class Actor:
    login: str | None
    kind: ActorKind

    @staticmethod
    def of(login: object, typename: object = None) -> Actor:
        """GitHub marks apps as type/__typename "Bot" and their logins end in "[bot]"."""
        if not isinstance(login, str) or not login:
            return NOBODY
        bot = typename == "Bot" or login.endswith("[bot]")
        return Actor(login, "bot" if bot else "person")


NOBODY = Actor(None, "none")


@dataclass(frozen=True)
class Reaction:
    content: str  # "+1" or "-1" (GraphQL THUMBS_UP / THUMBS_DOWN)
    actor: Actor
    time: datetime


@dataclass
class Comment:
    database_id: int
    body: str
    seen: tuple[datetime, int]  # (last edit time, input order): the latest body wins
    created: datetime
    author: Actor
    path: str
    start_line: int | None  # lines at the commit the comment was made on (GitHub's originalLine)
    line: int | None
    side: str  # RIGHT (the new file) or LEFT (the old one)
    original_commit: str | None
    reply_to: int | None
    url: str
    deleted: bool = False
    reactions: dict[tuple[str, str | None], Reaction] = field(default_factory=dict)


@dataclass(frozen=True)
class Resolution:
    resolved: bool
    actor: Actor
    time: datetime | None  # None when only a GraphQL snapshot says so (it carries no resolution time)
    order: int


@dataclass
class Thread:
    root: int  # the database id of its first comment: the same key in webhooks and GraphQL
    node_id: str = ""
    outdated: bool = False
    snapshot: Resolution | None = None  # GraphQL's current state wins over webhook history
    webhooks: list[Resolution] = field(default_factory=list)

    def resolution(self) -> Resolution | None:
        history = sorted(self.webhooks, key=lambda r: (r.time is not None, r.time or datetime.min, r.order))
        if self.snapshot is None:
            return history[-1] if history else None
        if not self.snapshot.resolved:
            return self.snapshot
        # The snapshot has no time: borrow it from the latest webhook resolution by the same actor.
        times = [r.time for r in history if r.resolved and r.actor == self.snapshot.actor and r.time]
        return Resolution(True, self.snapshot.actor, max(times) if times else None, self.snapshot.order)


@dataclass(frozen=True)
class FileChange:
    filename: str
    previous: str | None
    status: str
    patch: str | None  # GitHub leaves it out for binary and very large diffs


@dataclass(frozen=True)
class Commit:
    sha: str
    time: datetime
    message: str
    author: Actor
    url: str
    files: tuple[FileChange, ...]


@dataclass
class PullRequest:
    repo: str
    number: int
    state: str | None = None  # "open" or "closed"; None when no document said
    state_rank: tuple[int, datetime, int] = (0, datetime.min.replace(tzinfo=UTC), 0)
    closed_at: datetime | None = None
    merged: bool = False
    url: str = ""
    comments: dict[int, Comment] = field(default_factory=dict)
    threads: dict[int, Thread] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)  # in the pull request's order
