"""Files: writing them so that a crash never leaves half of one (temp file in the same directory, fsync,
rename), and reading a user's input with a bound (regular files or standard input only, a size limit, UTF-8
errors named by line and column)."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, BinaryIO

from promptops.errors import PromptopsError


def write_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new one, never a mix.

    The file is created owner-only (0600, as ``mkstemp`` makes it) unless ``mode`` says otherwise, e.g. 0o644
    for a file another user's process reads (a node_exporter textfile).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        if mode is not None:
            os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # the rename itself survives a power cut
    finally:
        os.close(directory)


class OutputError(PromptopsError):
    """A command was told to write to something that is not a regular file (a symlink, a FIFO, a device)."""


def write_output(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """``write_atomic`` for a file a command was told to write (``--output``, ``--out``, a report, a SARIF log).

    The name must be a regular file or not exist: a symlink is refused, not followed (a pull request can commit
    ``promptops-lint.sarif`` as a link to any file the job may write), and so are a FIFO (opening one for
    writing waits for a reader forever), a device, a socket and a directory. The check reads the name itself
    (``lstat``), and the write renames a new file over the name, so even a link or FIFO put there after the
    check is replaced, never written through.
    """
    try:
        found = os.lstat(path)
    except FileNotFoundError:
        pass
    except OSError as problem:
        raise OutputError(f"{path}: {problem.strerror or type(problem).__name__}") from None
    else:
        if stat.S_ISLNK(found.st_mode):
            raise OutputError(f"{path}: is a symbolic link; refusing to write through it (remove it first)")
        if not stat.S_ISREG(found.st_mode):
            raise OutputError(f"{path}: not a regular file ({_kind(found.st_mode)}); refusing to write to it")
    write_atomic(path, data, mode=mode)


# ---- bounded reading of user input -----------------------------------------------------------------------

# What one input (a response, a diff, a list of changed files, a line of a batch) may hold: far above real
# inputs, and a bound on the memory an endless or mistaken one (/dev/zero, a disk image) can take.
MAX_INPUT_BYTES = 64 << 20
STDIN = "-"


class InputError(PromptopsError):
    """A user's input cannot be read: missing, not a regular file, too large, or not UTF-8 text."""


def open_input(name: str, *, stdin: BinaryIO | None = None) -> BinaryIO:
    """A binary stream of the regular file ``name`` (``-``: ``stdin``, standard input by default).

    A pipe is read too (standard input is one, and so is ``<(git diff --name-only)``), within the caller's
    bound; devices (``/dev/zero``), directories and sockets are refused. The file is opened without
    blocking, so a FIFO with no writer reads as empty instead of hanging; a symlink is followed.
    """
    if name == STDIN:
        return stdin if stdin is not None else sys.stdin.buffer
    try:
        handle = os.open(name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as problem:
        raise InputError(f"{name}: {problem.strerror or type(problem).__name__}") from None
    try:
        mode = os.fstat(handle).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
            raise InputError(f"{name}: not a regular file ({_kind(mode)})")
        os.set_blocking(handle, True)
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise


def read_input(name: str, *, limit: int = MAX_INPUT_BYTES, stdin: BinaryIO | None = None) -> bytes:
    """The bytes of ``name`` (see ``open_input``), refused with one line when there are more than ``limit``."""
    stream = open_input(name, stdin=stdin)
    try:
        data = stream.read(limit + 1)
    except OSError as problem:
        raise InputError(f"{name}: {problem.strerror or type(problem).__name__}") from None
    finally:
        if name != STDIN:
            stream.close()
    if len(data) > limit:
        raise InputError(f"{name}: larger than the {_size(limit)} an input may hold")
    return data


def read_text(name: str, *, limit: int = MAX_INPUT_BYTES, stdin: BinaryIO | None = None) -> str:
    """``read_input`` decoded as UTF-8; undecodable bytes are refused naming their line and column."""
    return decode_text(read_input(name, limit=limit, stdin=stdin), name)


def decode_text(data: bytes, name: str, first_line: int = 1) -> str:
    """``data`` as UTF-8 text, or InputError naming ``name``, the line (counted from ``first_line``) and
    the column (in bytes, from 1) of the first undecodable byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as problem:
        line = data.count(b"\n", 0, problem.start)
        column = problem.start - (data.rfind(b"\n", 0, problem.start) + 1) + 1
        raise InputError(f"{name}:{first_line + line}:{column}: not valid UTF-8 text") from None


def iter_lines(stream: IO[bytes], name: str, *, limit: int = MAX_INPUT_BYTES) -> Iterator[tuple[int, bytes | None]]:
    """The lines of ``stream`` as (number from 1, bytes without the newline). A line longer than ``limit``
    bytes comes as (number, None), its bytes read past and never held, so a caller can report it and go on."""
    number = 0
    while True:
        line = _read_line(stream, name, limit)
        if not line:
            return
        number += 1
        if len(line) <= limit or (len(line) == limit + 1 and line.endswith(b"\n")):
            yield number, line.removesuffix(b"\n")
            continue
        while line and not line.endswith(b"\n"):  # skip the rest of the long line
            line = _read_line(stream, name, limit)
        yield number, None


def _read_line(stream: IO[bytes], name: str, limit: int) -> bytes:
    try:
        return stream.readline(limit + 1)
    except OSError as problem:
        raise InputError(f"{name}: {problem.strerror or type(problem).__name__}") from None


def line_limit_problem(limit: int = MAX_INPUT_BYTES) -> str:
    """What a caller of ``iter_lines`` says of a line it got as None."""
    return f"line longer than the {_size(limit)} a line may hold"


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket" if stat.S_ISSOCK(mode) else "not a file"


def _size(limit: int) -> str:
    return f"{limit >> 20} MiB" if limit >= 1 << 20 and not limit % (1 << 20) else f"{limit:,} bytes"
