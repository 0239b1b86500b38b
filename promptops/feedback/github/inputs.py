"""Reading the JSON a team already has into pull requests: webhook deliveries, GraphQL ``reviewThreads``
pages and the commits of a pull request. Each document is recognised by its shape (see docs/usefulness.md)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from promptops.feedback.github.model import (
    NOBODY,
    Actor,
    CollectError,
    Comment,
    Commit,
    FileChange,
    PullRequest,
    Reaction,
    Resolution,
    Thread,
)

_EARLIEST = datetime.min.replace(tzinfo=UTC)
_REACTIONS = {"THUMBS_UP": "+1", "THUMBS_DOWN": "-1", "+1": "+1", "-1": "-1"}


class Inputs:
    """Pull requests keyed by (owner/name, number), filled document by document."""

    def __init__(self) -> None:
        self.pulls: dict[tuple[str, int], PullRequest] = {}
        self._order = 0

    def read_text(self, text: str, where: str) -> None:
        """A file holding one JSON document, a JSON array of them, or one document a line (JSON Lines)."""
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            for number, line in enumerate(text.splitlines(), 1):
                if line.strip():
                    try:
                        document = json.loads(line)
                    except json.JSONDecodeError as bad:
                        raise CollectError(f"{where}:{number}: not JSON: {bad.msg}") from None
                    self.add(document, f"{where}:{number}")
            return
        for document in whole if isinstance(whole, list) else [whole]:
            self.add(document, where)

    def add(self, document: Any, where: str) -> None:
        self._order += 1
        if not isinstance(document, dict):
            raise CollectError(f"{where}: expected a JSON object, found {type(document).__name__}")
        try:
            if "data" in document or "errors" in document:
                self._graphql(document, where)
            elif "commits" in document:
                self._commits(document, where)
            elif "event" in document and ("request" in document or "payload" in document):
                # GitHub's webhook deliveries API holds the payload in "request"; a saved delivery at the top
                holder = _obj(document, "request", where) if "request" in document else document
                payload = _obj(holder, "payload", where)
                delivered = _time_or_none(document.get("delivered_at"), where)
                self._webhook(str(document["event"]), payload, delivered, where)
            elif "action" in document:
                event = (
                    "pull_request_review_thread"
                    if "thread" in document
                    else "pull_request_review_comment"
                    if "comment" in document
                    else "pull_request"
                )
                self._webhook(event, document, None, where)
            else:
                raise CollectError(
                    f"{where}: not a webhook delivery, a GraphQL reviewThreads page or a commits document"
                )
        except (KeyError, TypeError, ValueError) as bad:  # a field of the wrong type deep inside
            raise CollectError(f"{where}: malformed document: {bad}") from None

    def _pull(self, repo: str, number: int) -> PullRequest:
        return self.pulls.setdefault((repo, number), PullRequest(repo, number))

    # -- webhooks ------------------------------------------------------------------------------------------

    def _webhook(self, event: str, payload: dict[str, Any], delivered: datetime | None, where: str) -> None:
        repo = _str(_obj(payload, "repository", where), "full_name", where)
        pr = _obj(payload, "pull_request", where)
        pull = self._pull(repo, _int(pr, "number", where))
        self._pr_state(pull, pr, (1, delivered or _EARLIEST, self._order), where)
        action = payload.get("action")
        if event == "pull_request_review_thread":
            thread = _obj(payload, "thread", where)
            comments = [
                self._rest_comment(pull, c, f"{where}: thread.comments") for c in _list(thread, "comments", where)
            ]
            if not comments:
                return
            root = min(comments, key=lambda c: (c.reply_to is not None, c.created)).database_id
            entry = pull.threads.setdefault(root, Thread(root))
            entry.node_id = entry.node_id or str(thread.get("node_id") or "")
            if action in ("resolved", "unresolved"):
                sender = payload.get("sender") or {}
                actor = Actor.of(sender.get("login"), sender.get("type"))
                entry.webhooks.append(Resolution(action == "resolved", actor, delivered, self._order))
        elif event == "pull_request_review_comment":
            comment = self._rest_comment(pull, _obj(payload, "comment", where), f"{where}: comment")
            if action == "deleted":
                comment.deleted = True
        elif event != "pull_request":
            raise CollectError(f"{where}: webhook event {event!r} is not one the collector reads")

    def _rest_comment(self, pull: PullRequest, c: dict[str, Any], where: str) -> Comment:
        user = c.get("user") or {}
        reply_to = c.get("in_reply_to_id")
        comment = self._comment(
            pull,
            Comment(
                database_id=_int(c, "id", where),
                body=str(c.get("body") or ""),
                seen=(_time(c.get("updated_at") or c.get("created_at"), f"{where}.updated_at"), self._order),
                created=_time(c.get("created_at"), f"{where}.created_at"),
                author=Actor.of(user.get("login"), user.get("type")),
                path=_str(c, "path", where),
                start_line=c.get("original_start_line"),
                line=c.get("original_line"),
                side=str(c.get("side") or "RIGHT"),
                original_commit=c.get("original_commit_id"),
                reply_to=reply_to if isinstance(reply_to, int) else None,
                url=str(c.get("html_url") or ""),
            ),
        )
        if comment.reply_to is None:
            pull.threads.setdefault(comment.database_id, Thread(comment.database_id))
        return comment

    # -- GraphQL ----------------------------------------------------------------------------------------------

    def _graphql(self, document: dict[str, Any], where: str) -> None:
        if document.get("errors"):
            first = document["errors"][0]
            raise CollectError(
                f"{where}: a GraphQL error answer: {first.get('message', first) if isinstance(first, dict) else first}"
            )
        repository = _obj(_obj(document, "data", where), "repository", f"{where}: data")
        repo = _str(repository, "nameWithOwner", f"{where}: data.repository")
        pr = _obj(repository, "pullRequest", f"{where}: data.repository")
        pull = self._pull(repo, _int(pr, "number", f"{where}: pullRequest"))
        state = pr.get("state")
        if isinstance(state, str):
            self._pr_state(
                pull,
                {
                    "state": "open" if state == "OPEN" else "closed",
                    "closed_at": pr.get("closedAt"),
                    "merged_at": pr.get("mergedAt"),
                    "html_url": pr.get("url"),
                },
                (2, _EARLIEST, self._order),
                where,
            )
        threads = _obj(pr, "reviewThreads", f"{where}: pullRequest")
        for index, node in enumerate(_list(threads, "nodes", f"{where}: reviewThreads")):
            self._graphql_thread(pull, node, f"{where}: reviewThreads.nodes[{index}]")

    def _graphql_thread(self, pull: PullRequest, node: dict[str, Any], where: str) -> None:
        nodes = _list(_obj(node, "comments", where), "nodes", f"{where}.comments")
        if not nodes:
            return
        root = _int(nodes[0], "databaseId", f"{where}.comments.nodes[0]")
        for index, c in enumerate(nodes):
            at = f"{where}.comments.nodes[{index}]"
            author = c.get("author") or {}
            commit = c.get("originalCommit") or {}
            comment = self._comment(
                pull,
                Comment(
                    database_id=_int(c, "databaseId", at),
                    body=str(c.get("body") or ""),
                    seen=(_time(c.get("lastEditedAt") or c.get("createdAt"), f"{at}.createdAt"), self._order),
                    created=_time(c.get("createdAt"), f"{at}.createdAt"),
                    author=Actor.of(author.get("login"), author.get("__typename")),
                    path=_str(c, "path", at),
                    start_line=c.get("originalStartLine"),
                    line=c.get("originalLine"),
                    side=str(node.get("diffSide") or "RIGHT"),
                    original_commit=commit.get("oid"),
                    reply_to=None if index == 0 else root,
                    url=str(c.get("url") or ""),
                ),
            )
            for r_index, r in enumerate(_list(c.get("reactions") or {"nodes": []}, "nodes", at)):
                content = _REACTIONS.get(str(r.get("content")))
                user = r.get("user") or {}
                if content is not None:
                    actor = Actor.of(user.get("login"), user.get("__typename"))
                    reaction = Reaction(
                        content, actor, _time(r.get("createdAt"), f"{at}.reactions.nodes[{r_index}].createdAt")
                    )
                    comment.reactions[(content, actor.login)] = reaction
        thread = pull.threads.setdefault(root, Thread(root))
        thread.node_id = str(node.get("id") or thread.node_id)
        thread.outdated = bool(node.get("isOutdated"))
        resolver = node.get("resolvedBy") or {}
        actor = Actor.of(resolver.get("login"), resolver.get("__typename")) if node.get("isResolved") else NOBODY
        thread.snapshot = Resolution(bool(node.get("isResolved")), actor, None, self._order)

    def _comment(self, pull: PullRequest, new: Comment) -> Comment:
        """Observations of one comment merge; the body seen last (by edit time, then input order) wins."""
        old = pull.comments.get(new.database_id)
        if old is None:
            pull.comments[new.database_id] = new
            return new
        if new.seen >= old.seen:
            old.body, old.seen = new.body, new.seen
        old.reply_to = old.reply_to if old.reply_to is not None else new.reply_to
        return old

    # -- pull request state and commits ----------------------------------------------------------------------

    def _pr_state(self, pull: PullRequest, pr: Mapping[str, Any], rank: tuple[int, datetime, int], where: str) -> None:
        """The latest word on the state wins: a GraphQL page (the current state) over webhooks, and among
        webhooks the latest delivery (then the later input)."""
        if pr.get("state") in ("open", "closed") and rank >= pull.state_rank:
            pull.state, pull.state_rank = str(pr["state"]), rank
            pull.closed_at = _time_or_none(pr.get("closed_at"), where)
            pull.merged = bool(pr.get("merged_at"))
        pull.url = pull.url or str(pr.get("html_url") or "")

    def _commits(self, document: dict[str, Any], where: str) -> None:
        repo = _str(document, "repository", where)
        pull = self._pull(repo, _int(document, "number", where))
        for index, c in enumerate(_list(document, "commits", where)):
            at = f"{where}: commits[{index}]"
            detail = _obj(c, "commit", at)
            author = c.get("author") or {}
            files = tuple(
                FileChange(
                    _str(f, "filename", f"{at}.files"),
                    f.get("previous_filename"),
                    str(f.get("status", "")),
                    f.get("patch"),
                )
                for f in _list(c, "files", at)
            )
            sha = _str(c, "sha", at)
            pull.commits[sha] = Commit(
                sha=sha,
                time=_time(_obj(detail, "committer", f"{at}.commit").get("date"), f"{at}.commit.committer.date"),
                message=str(detail.get("message") or ""),
                author=Actor.of(author.get("login"), author.get("type")),
                url=str(c.get("html_url") or ""),
                files=files,
            )


def read_documents(documents: Iterable[tuple[str, str]]) -> dict[tuple[str, int], PullRequest]:
    """(text, where) pairs: each a file's text and the name its errors should carry."""
    inputs = Inputs()
    for text, where in documents:
        inputs.read_text(text, where)
    return inputs.pulls


def _obj(parent: Mapping[str, Any], key: str, where: str) -> dict[str, Any]:
    value = parent.get(key)
    if not isinstance(value, dict):
        raise CollectError(f"{where}: field {key!r} must be an object")
    return value


def _list(parent: Mapping[str, Any], key: str, where: str) -> list[dict[str, Any]]:
    value = parent.get(key)
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise CollectError(f"{where}: field {key!r} must be a list of objects")
    return value


def _str(parent: Mapping[str, Any], key: str, where: str) -> str:
    value = parent.get(key)
    if not isinstance(value, str) or not value:
        raise CollectError(f"{where}: field {key!r} must be a non-empty string")
    return value


def _int(parent: Mapping[str, Any], key: str, where: str) -> int:
    value = parent.get(key)
    if not isinstance(value, int) or isinstance(value, bool):
        raise CollectError(f"{where}: field {key!r} must be an integer")
    return value


def _time(value: object, where: str) -> datetime:
    if not isinstance(value, str):
        raise CollectError(f"{where}: must be an ISO 8601 time")
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise CollectError(f"{where}: {value!r} is not an ISO 8601 time") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _time_or_none(value: object, where: str) -> datetime | None:
    return None if value is None else _time(value, where)
