"""A GitHub API on 127.0.0.1 that replays recorded answers, for the collector's live-mode tests.

Answers are queued per request key (a REST path with its query, or the GraphQL pull request number and cursor);
a queue's last answer repeats. The server keeps GitHub's primary-limit promise: once an answer says
``x-ratelimit-remaining: 0``, a request before the announced reset is logged as early and refused with 403.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

RESET_SOON = "reset-soon"  # a header value the server turns into an epoch two seconds ahead


@dataclass
class Answer:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Replay:
    routes: dict[str, list[Answer]]
    log: list[str] = field(default_factory=list)  # request keys, in arrival order
    early: list[str] = field(default_factory=list)  # requests made before a spent limit's reset
    authorizations: set[str] = field(default_factory=set)
    url: str = ""
    reset_at: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, key: str) -> Answer:
        with self.lock:
            self.log.append(key)
            if time.time() < self.reset_at:
                self.early.append(key)
                return Answer({"message": "API rate limit exceeded"}, 403, {"x-ratelimit-remaining": "0"})
            queue = self.routes.get(key)
            if not queue:
                return Answer({"message": "Not Found"}, 404)
            answer = queue.pop(0) if len(queue) > 1 else queue[0]
            headers = dict(answer.headers)
            if headers.get("x-ratelimit-reset") == RESET_SOON:
                self.reset_at = int(time.time()) + 2
                headers["x-ratelimit-reset"] = str(int(self.reset_at))
            return Answer(answer.body, answer.status, headers)


def graphql_key(number: int, cursor: str | None) -> str:
    return f"graphql #{number} after {cursor}"


@contextmanager
def serving(replay: Replay) -> Iterator[Replay]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._reply(replay.answer(self.path))

        def do_POST(self) -> None:
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            variables = request["variables"]
            self._reply(replay.answer(graphql_key(variables["number"], variables["cursor"])))

        def _reply(self, answer: Answer) -> None:
            replay.authorizations.add(self.headers.get("Authorization", ""))
            data = json.dumps(answer.body).replace("{api}", replay.url).encode()
            self.send_response(answer.status)
            for name, value in answer.headers.items():
                self.send_header(name, value.replace("{api}", replay.url))
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    replay.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield replay
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


FIXTURES = Path(__file__).parent / "fixtures" / "github"
OFFLINE = [
    "graphql_pr7_page1.json",
    "graphql_pr7_page2.json",
    "graphql_pr7_page3.json",
    "graphql_pr8.json",
    "commits_pr7.json",
    "commits_pr8.json",
    "webhook_deliveries.jsonl",
]


def collect_command(
    root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., tuple[int, str, str]]:
    """``promptops feedback collect github ARGS`` through the real CLI entry: (exit code, stdout, stderr)."""
    import promptops.cli

    def run(*args: str) -> tuple[int, str, str]:
        code = promptops.cli.run(["--root", str(root), "feedback", "collect", "github", *args])
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


def expected(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]
