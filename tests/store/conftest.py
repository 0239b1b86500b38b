from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from promptops.store import ParserCache, Store
from tests.helpers import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "benchmarks"))

import response_logs  # lives in benchmarks/, shared with bench_store.py


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project root with the repository's contracts and an empty logs/ directory."""
    (tmp_path / "versions").symlink_to(REPO_ROOT / "versions", target_is_directory=True)
    (tmp_path / "logs").mkdir()
    return tmp_path


@pytest.fixture
def write_log() -> Callable[..., Path]:
    def write(path: Path, count: int, **options: Any) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        response_logs.write(path, count, **{"pool": 400, **options})
        return path

    return write


@pytest.fixture
def parsers() -> ParserCache:
    return ParserCache.for_project(REPO_ROOT)


@pytest.fixture
def store(project: Path) -> Iterator[Store]:
    with Store.open(project / ".promptops" / "diagnostics.duckdb", display=".promptops/diagnostics.duckdb") as opened:
        yield opened


def relative_to(root: Path) -> Callable[[Path], str]:
    return lambda path: path.resolve().relative_to(root.resolve()).as_posix()
