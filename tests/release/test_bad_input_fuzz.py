"""Generated bad inputs through the real command line: release locks, contract.yaml files, schemas, and the
flags of ``lint`` and ``release``.

Every input is derived from a real project (this repository's contracts with review-result's history cut)
by seeded mutations: lines deleted, duplicated or re-indented, bytes flipped or inserted (invalid UTF-8,
NUL, control characters), values replaced with wrong types, impossible dates, huge numbers, deep nesting,
anchors and aliases, duplicate keys, and the file replaced by a directory, a symlink to a device, or an
empty file. Each run must end with a documented exit code (0, 1, 2 or 3) and, for 3, exactly one line on
stderr naming the problem; never a traceback or "internal error".

The default slice (3,200 inputs) keeps CI under a minute; ``PROMPTOPS_FUZZ_SCALE=N`` multiplies it, and
``PROMPTOPS_FUZZ_SEED`` picks another seed (the failing seed and input index are in the assertion).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import promptops.cli
from tests.release.conftest import LOCK, history, unreleased_copy

pytestmark = pytest.mark.slow  # generated inputs through the CLI

CONTRACT = "versions/review-result/contract.yaml"
SCHEMA = "versions/review-result/schemas/1.1.json"
SCALE = int(os.environ.get("PROMPTOPS_FUZZ_SCALE", "1"))
SEED = int(os.environ.get("PROMPTOPS_FUZZ_SEED", "20261125"))
DOCUMENTED = {0, 1, 2, 3}
Counter_ = dict[int, int]

_VALUES = [
    "",
    "~",
    "null",
    "[]",
    "{}",
    "-1",
    "1e309",
    "99999999999999999999999999999999",
    "'2026-02-30T25:61:61Z'",
    "2026-02-30T23:00:00Z",
    "2026-13-01",
    "'1.0'",
    "1.0.0.0",
    "'x'",
    "!!binary aGVsbG8=",
    "!!python/object:os.system ['true']",
    "&a [*a]",
    "*undefined",
    "[" * 200 + "]" * 200,
    "{a: " * 60 + "1" + "}" * 60,
    "'\\u0000'",
    '"\\ud800"',
    "yes",
    ".nan",
    "0x1F",
    "|\n  block",
    "'" + "x" * 5000 + "'",
]
_BYTES = [b"\xe9", b"\x00", b"\xff\xfe", b"\r", b"\t", b"\x1b[31m", b"\xed\xa0\x80", b"\xc3", "\u2028".encode()]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    kind = rng.randrange(9)
    index = rng.randrange(len(lines))
    if kind == 0:
        del lines[index]
    elif kind == 1:
        lines.insert(index, lines[index])  # a duplicated line: usually a duplicate key
    elif kind == 2:
        lines[index] = b" " * rng.randrange(1, 5) + lines[index]
    elif kind == 3:
        line = lines[index]
        key, sep, _ = line.partition(b":")
        value = rng.choice(_VALUES).encode()
        lines[index] = key + b": " + value if sep else value
    elif kind == 4:
        position = rng.randrange(len(data) + 1)
        return data[:position] + rng.choice(_BYTES) + data[position:]
    elif kind == 5:
        return data[: rng.randrange(len(data) + 1)]
    elif kind == 6:
        position = rng.randrange(max(len(data), 1))
        return data[:position] + bytes([rng.randrange(256)]) + data[position + 1 :]
    elif kind == 7:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]
    else:
        lines.insert(index, rng.choice(_VALUES).encode())
    return b"\n".join(lines)


def _replace_file(path: Path, rng: random.Random) -> None:
    path.unlink()
    choice = rng.randrange(4)
    if choice == 0:
        path.mkdir()
    elif choice == 1:
        path.symlink_to(rng.choice(["/dev/null", "/dev/zero", "/nonexistent", "."]))
    elif choice == 2:
        path.write_bytes(b"")
    else:
        path.write_bytes(b"\x00" * rng.randrange(1, 64))


def _run(root: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = promptops.cli.run(["--root", str(root), *args])
    return code, out.getvalue(), err.getvalue()


def _check(code: int, err: str, what: str) -> None:
    assert code in DOCUMENTED, f"{what}: exit {code}"
    assert "internal error" not in err and "Traceback" not in err, f"{what}: {err}"
    if code == 3:
        assert err.count("\n") == 1 and err.startswith("promptops: error: "), f"{what}: {err!r}"


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = unreleased_copy(tmp_path_factory.mktemp("fuzz") / "project")
    os.environ["PROMPTOPS_NO_TEMPLATE_CACHE"] = "1"

    def cli(project: Path, *args: str) -> tuple[int, str, str]:
        return _run(project, *args)

    history(cli, root)  # type: ignore[arg-type]
    return root


@pytest.fixture
def work(pristine: Path, tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(pristine, root, symlinks=True)
    return root


def _file_cases(
    work: Path, rel: str, count: int, commands: list[tuple[str, ...]], salt: int
) -> Iterator[tuple[int, str]]:
    """Mutate ``rel`` ``count`` times; run each command on each mutation; yield (index, what) per run."""
    rng = random.Random(SEED + salt)
    path = work / rel
    original = path.read_bytes()
    for index in range(count):
        if path.is_symlink() or path.is_dir():
            path.unlink() if path.is_symlink() else path.rmdir()
        path.write_bytes(original)
        if rng.random() < 0.05:
            _replace_file(path, rng)
        else:
            data = original
            for _ in range(rng.randrange(1, 4)):
                data = _mutate(data, rng)
            path.write_bytes(data)
        command = commands[index % len(commands)]
        yield index, " ".join(command)


def _drive(work: Path, rel: str, count: int, commands: list[tuple[str, ...]], salt: int) -> Counter_:
    seen: Counter_ = {}
    for index, what in _file_cases(work, rel, count, commands, salt):
        code, _, err = _run(work, *what.split(" "))
        _check(code, err, f"{rel} mutation {index} (seed {SEED + salt}), {what}")
        seen[code] = seen.get(code, 0) + 1
    return seen


def test_bad_release_locks(work: Path) -> None:
    commands = [
        ("release", "verify"),
        ("release", "list", "--format", "json"),
        ("release", "verify", "--format", "json"),
        ("release", "list"),
        ("release", "verify"),
        ("release", "list", "--format", "json"),
        ("release", "verify", "--format", "json"),
        ("release", "check"),  # renders every head: one input in eight
    ]
    seen = _drive(work, LOCK, 1300 * SCALE, commands, salt=1)
    assert seen.get(3, 0) > 500 and seen.get(0, 0) + seen.get(2, 0) > 10, seen  # both refused and still-valid locks


def test_bad_contract_files(work: Path) -> None:
    seen = _drive(work, CONTRACT, 1000 * SCALE, [("release", "check", "--contract", "review-result")], salt=2)
    assert seen.get(3, 0) > 500 and seen.get(0, 0) + seen.get(2, 0) > 10, seen


def test_bad_schemas(work: Path) -> None:
    seen = _drive(work, SCHEMA, 300 * SCALE, [("release", "check", "--contract", "review-result")], salt=4)
    assert seen.get(3, 0) + seen.get(2, 0) > 100, seen


_FLAG_VALUES = [
    "",
    "review-result",
    "nope",
    "../../etc",
    "versions/review-result",
    "\x00",
    "x" * 300,
    "-",
    "--",
    "PO004",
    "po999",
    "2026-02-30T25:61:61Z",
    "json",
    "sarif",
    "xml",
    "/dev/zero",
    "/nonexistent/file.j2",
    ".",
    "templates",
    "\udcff",
]
_COMMANDS: list[tuple[tuple[str, ...], list[str]]] = [
    (("lint",), ["--format", "--output", "--config", "--explain", "--strict-warnings", "--list-rules", "--bogus"]),
    (("release", "check"), ["--contract", "--format", "--bogus"]),
    (("release", "verify"), ["--contract", "--format", "--bogus"]),
    (("release", "list"), ["--contract", "--format"]),
    (("release", "cut"), ["--contract", "--date", "--note", "--dry-run", "--format"]),
]


def _argv(rng: random.Random, work: Path) -> list[str]:
    command, options = rng.choice(_COMMANDS)
    argv = list(command)
    for _ in range(rng.randrange(0, 4)):
        option = rng.choice(options)
        argv.append(option)
        if option not in ("--strict-warnings", "--list-rules", "--dry-run", "--bogus") and rng.random() < 0.9:
            value = rng.choice(_FLAG_VALUES)
            argv.append(str(work / "out.txt") if option == "--output" and rng.random() < 0.5 else value)
    if command == ("release", "cut") and "--dry-run" not in argv:
        argv.append("--dry-run")  # the lock stays as generated for the next input
    if rng.random() < 0.2:
        argv.append(rng.choice(_FLAG_VALUES))  # a stray positional argument
    return argv


def test_bad_flags(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(work)  # a relative --output ("-", "json") is written where the command runs, not in the checkout
    rng = random.Random(SEED + 5)
    seen: Counter_ = {}
    for index in range(600 * SCALE):
        argv = _argv(rng, work)
        code, out, err = _run(work, *argv)
        _check(code, err, f"flags {index} (seed {SEED + 5}): {argv!r}")
        if code == 0 and "--format" in argv and argv[argv.index("--format") + 1 :][:1] == ["json"]:
            json.loads(out)  # JSON output is JSON whenever it is produced
        seen[code] = seen.get(code, 0) + 1
    assert seen.get(3, 0) > 50 and seen.get(0, 0) > 20, seen
