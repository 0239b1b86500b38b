"""Files: writing them so that a crash never leaves half of one (temp file in the same directory, fsync,
rename), and reading a user's input with a bound (regular files or standard input only, a size limit, UTF-8
errors named by line and column)."""

from __future__ import annotations

import fcntl
import glob
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, BinaryIO

from promptops.core.errors import PromptopsError


class WriteError(PromptopsError):
    """A project file could not be written (a full disk, a file-size limit, no permission); names the file."""


class Busy(PromptopsError):
    """Another promptops run holds the lock of what this one would write."""


def write_atomic(path: Path, data: bytes, *, mode: int | None = None, shown: str | None = None) -> None:
    """Replace ``path`` with ``data`` atomically: readers see the old file or the new one, never a mix.

    The file is created owner-only (0600, as ``mkstemp`` makes it) unless ``mode`` says otherwise, e.g. 0o644
    for a file another user's process reads (a node_exporter textfile). An OSError becomes a one-line
    WriteError naming ``shown`` (default: the path), with the file as it was.
    """
    _publish(path, data, mode, shown, replace=True)


def write_synced(path: Path, data: bytes, shown: str) -> None:
    """Write ``data`` to a new ``path`` inside a private staging directory and fsync it (the caller renames or
    links it into place, and fsyncs the directories); an OSError names ``shown`` in one line."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
    except OSError as problem:
        raise WriteError(f"{shown}: cannot write: {problem.strerror or type(problem).__name__}") from None


def create_atomic(path: Path, data: bytes, *, mode: int | None = None, shown: str | None = None) -> None:
    """Create ``path`` holding ``data``, whole or not at all, and never replace an existing file.

    The data is written and synced under a temporary name, then hard-linked to ``path`` (``link`` fails when
    the name exists, atomically). ``mode`` defaults to what ``open`` would give (0666 less the umask).
    """
    _publish(path, data, default_mode() if mode is None else mode, shown, replace=False)


def _publish(path: Path, data: bytes | Iterable[bytes], mode: int | None, shown: str | None, *, replace: bool) -> None:
    import tempfile  # imports shutil, random and the compressors: only for commands that write

    name = shown if shown is not None else str(path)
    temporary: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=TEMP_SUFFIX)
        if mode is not None:
            os.fchmod(handle, mode)
        with os.fdopen(handle, "wb") as stream:
            for part in (data,) if isinstance(data, bytes) else data:
                stream.write(part)
            stream.flush()
            os.fsync(stream.fileno())
        if replace:
            os.replace(temporary, path)
            temporary = None
        else:
            os.link(temporary, path)
        fsync_directory(path.parent)  # the rename itself survives a power cut
    except FileExistsError:
        raise WriteError(f"{name}: exists already (nothing is ever overwritten)") from None
    except OSError as problem:
        raise WriteError(f"{name}: cannot write: {problem.strerror or type(problem).__name__}") from None
    finally:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)


def default_mode() -> int:
    """The mode ``open`` gives a new file: 0666 less the process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def fsync_directory(directory: Path) -> None:
    """Make the names just created, renamed or removed in ``directory`` survive a power cut."""
    descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


# ---- locks, private staging and what dead runs left ------------------------------------------------------
#
# A writer takes an exclusive flock on the directory it writes in (no lock file to commit, ignore or clean;
# the kernel drops the lock when the process dies, even by SIGKILL). A run that stages several files first
# does so in a private directory made by mkdtemp and flocked for the run's life, so a later run can tell a
# dead run's leftovers (lock free: removed) from a live run's (lock held: left alone).

TEMP_SUFFIX = ".tmp"
_TEMP_RANDOM = 8  # the characters mkstemp puts between prefix and suffix


@contextmanager
def directory_lock(directory: Path, shown: str, *, wait: bool) -> Iterator[None]:
    """Hold the exclusive lock of ``directory`` until the block ends; Busy at once when another run holds it
    and ``wait`` is false."""
    try:
        descriptor = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as problem:
        raise WriteError(f"{shown}: cannot lock: {problem.strerror or type(problem).__name__}") from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            message = "another promptops run is writing here; nothing was written: run again when it ends"
            raise Busy(f"{shown}: {message}") from None
        yield
    finally:
        os.close(descriptor)


@contextmanager
def private_staging(parent: Path, prefix: str, shown: str) -> Iterator[Path]:
    """A new directory under ``parent`` that only this run uses, locked while it lives and removed at the end."""
    import shutil
    import tempfile

    try:
        staging = Path(tempfile.mkdtemp(dir=parent, prefix=prefix))
        descriptor = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as problem:
        raise WriteError(f"{shown}: cannot stage: {problem.strerror or type(problem).__name__}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield staging
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        os.close(descriptor)


def dead_stagings(parent: Path, prefix: str) -> list[Path]:
    """The staging directories under ``parent`` named ``prefix*`` whose run is gone (their lock is free)."""
    dead = []
    for entry in sorted(parent.glob(f"{glob.escape(prefix)}*")) if parent.is_dir() else ():
        try:
            descriptor = os.open(entry, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            continue  # not a directory of ours
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue  # a live run's
        finally:
            os.close(descriptor)
        dead.append(entry)
    return dead


def remove_stray_temps(directory: Path, names: Iterable[str]) -> list[Path]:
    """Remove the temporary files ``write_atomic``/``create_atomic`` left in ``directory`` when killed while
    writing a file named by one of ``names`` (glob patterns such as ``*.yaml``). The caller holds the lock
    every writer of those files takes, so none of them is a live run's."""
    removed = []
    for name in names:
        for stray in directory.glob(f".{name}.{'?' * _TEMP_RANDOM}{TEMP_SUFFIX}") if directory.is_dir() else ():
            if stray.is_file() and not stray.is_symlink():
                stray.unlink(missing_ok=True)
                removed.append(stray)
    return removed


class OutputError(PromptopsError):
    """A command was told to write to something that is not a regular file (a symlink, a FIFO, a device)."""


def write_output(path: Path, data: bytes | Iterable[bytes], *, mode: int = 0o644) -> None:
    """``write_atomic`` for a file a command was told to write (``--output``, ``--out``, a report, a SARIF log).

    The name must be a regular file or not exist: a symlink is refused, not followed (a pull request can commit
    ``promptops-lint.sarif`` as a link to any file the job may write), and so are a FIFO (opening one for
    writing waits for a reader forever), a device, a socket and a directory. The check reads the name itself
    (``lstat``), and the write renames a new file over the name, so even a link or FIFO put there after the
    check is replaced, never written through. ``data`` may be an iterable of byte strings, written as they
    come (a long output need not be held whole); the name is replaced only once the last one is written.
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
    _publish(path, data, mode, None, replace=True)


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
