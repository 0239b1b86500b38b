"""Fetching the same documents from the GitHub API: GraphQL ``reviewThreads`` pages and the REST commits of
a pull request, with pagination, and rate limits respected (Retry-After, x-ratelimit-remaining/-reset,
secondary limits). The token arrives as an argument; this module reads no environment."""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from promptops.feedback.github.model import CollectError

# Page sizes keep a query under GitHub's 500,000-node limit (50 threads x 50 comments x 20 reactions).
QUERY = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    nameWithOwner
    pullRequest(number: $number) {
      number state url closedAt mergedAt
      reviewThreads(first: 50, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id isResolved isOutdated diffSide
          resolvedBy { login __typename }
          comments(first: 50) {
            nodes {
              databaseId body url createdAt lastEditedAt path line startLine originalLine originalStartLine
              author { login __typename }
              originalCommit { oid }
              reactions(first: 20) { nodes { content createdAt user { login __typename } } }
            }
          }
        }
      }
    }
  }
}
"""
_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')
_ATTEMPTS = 6


@dataclass
class Api:
    url: str = "https://api.github.com"
    token: str = field(default="", repr=False)
    max_wait: float = 900.0  # longest wait for a rate limit before giving up (seconds)
    timeout: float = 30.0
    sleep: Callable[[float], None] = time.sleep
    clock: Callable[[], float] = time.time
    _resume_at: float = 0.0  # when the primary limit is spent: the reset time it announced

    @property
    def graphql_url(self) -> str:
        base = self.url.rstrip("/")
        return base[: -len("/v3")] + "/graphql" if base.endswith("/api/v3") else base + "/graphql"  # GitHub Enterprise

    def request(self, url: str, body: dict[str, Any] | None = None) -> tuple[Any, dict[str, str]]:
        """The decoded JSON answer and its headers (lower-case names), after waiting out rate limits."""
        data = None if body is None else json.dumps(body).encode()
        backoff = 60.0
        for _ in range(_ATTEMPTS):
            self._wait(self._resume_at - self.clock())
            request = urllib.request.Request(url, data=data, method="POST" if data else "GET")
            request.add_header("Authorization", f"Bearer {self.token}")
            request.add_header("Accept", "application/vnd.github+json")
            request.add_header("X-GitHub-Api-Version", "2022-11-28")
            request.add_header("User-Agent", "promptops-feedback-collector")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                    status, headers, raw = answer.status, dict(answer.headers.items()), answer.read()
            except urllib.error.HTTPError as failed:
                status, headers, raw = failed.code, dict(failed.headers.items()), failed.read()
            except (urllib.error.URLError, TimeoutError, OSError) as failed:
                raise CollectError(
                    f"{_shown(url)}: cannot reach the GitHub API: {getattr(failed, 'reason', failed)}"
                ) from None
            headers = {k.lower(): v for k, v in headers.items()}
            if headers.get("x-ratelimit-remaining") == "0" and "x-ratelimit-reset" in headers:
                self._resume_at = float(headers["x-ratelimit-reset"]) + 1
            payload = _json(raw, url) if raw else None
            limited = status in (403, 429) and (
                "retry-after" in headers
                or headers.get("x-ratelimit-remaining") == "0"
                or "rate limit" in str(payload).lower()
            )
            if (
                status == 200
                and isinstance(payload, dict)
                and any(e.get("type") == "RATE_LIMITED" for e in payload.get("errors") or [] if isinstance(e, dict))
            ):
                limited = True
            if limited:
                if "retry-after" in headers:
                    self._wait(float(headers["retry-after"]))
                elif headers.get("x-ratelimit-remaining") != "0":  # a secondary limit without a time: back off
                    self._wait(backoff)
                    backoff *= 2
                continue
            if status >= 500:
                self._wait(min(backoff, 8.0))
                backoff *= 2
                continue
            if status != 200:
                message = payload.get("message", "") if isinstance(payload, dict) else ""
                raise CollectError(f"{_shown(url)}: GitHub answered {status} {message}".rstrip())
            return payload, headers
        raise CollectError(
            f"{_shown(url)}: GitHub kept refusing after {_ATTEMPTS} attempts (rate limit or server errors)"
        )

    def _wait(self, seconds: float) -> None:
        if seconds <= 0:
            return
        if seconds > self.max_wait:
            raise CollectError(
                f"GitHub rate limit: the API asks to wait {seconds:.0f} s, more than --max-wait {self.max_wait:.0f} s"
            )
        self.sleep(seconds)


def fetch(api: Api, repo: str, number: int) -> Iterator[tuple[str, str]]:
    """One pull request's documents as (JSON text, where) pairs, in the shapes the collector reads offline."""
    owner, _, name = repo.partition("/")
    cursor: str | None = None
    page = 0
    while True:
        page += 1
        variables = {"owner": owner, "name": name, "number": number, "cursor": cursor}
        answer, _ = api.request(api.graphql_url, {"query": QUERY, "variables": variables})
        where = f"{repo}#{number} reviewThreads page {page}"
        try:
            info = answer["data"]["repository"]["pullRequest"]["reviewThreads"]["pageInfo"]
        except (KeyError, TypeError):
            errors = answer.get("errors") if isinstance(answer, dict) else None
            first = errors[0] if isinstance(errors, list) and errors and isinstance(errors[0], dict) else {}
            raise CollectError(
                f"{where}: GitHub's GraphQL API answered: {first.get('message', 'no review threads')}"
            ) from None
        yield json.dumps(answer), where
        if not info.get("hasNextPage"):
            break
        cursor = info["endCursor"]
    commits: list[Any] = []
    url: str | None = f"{api.url.rstrip('/')}/repos/{repo}/pulls/{number}/commits?per_page=100"
    while url:
        listed, headers = api.request(url)
        for item in listed if isinstance(listed, list) else []:
            detail, _ = api.request(f"{api.url.rstrip('/')}/repos/{repo}/commits/{item['sha']}")  # files and patches
            commits.append(detail)
        found = _NEXT.search(headers.get("link", ""))
        url = found.group(1) if found else None
    yield json.dumps({"repository": repo, "number": number, "commits": commits}), f"{repo}#{number} commits"


def _json(raw: bytes, url: str) -> Any:
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise CollectError(f"{_shown(url)}: the GitHub API answered with something that is not JSON") from None


def _shown(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}{parts.path}"
