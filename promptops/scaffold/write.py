"""Applying what ``promptops.scaffold.plan`` planned, so that a crash never leaves half of a file or of a contract.

- ``apply_writes`` (``init``): each file is written whole or not at all (``write_atomic``/``create_atomic``:
  temp file in the same directory, fsync, rename or link); an append rewrites the file with the lines added,
  keeping its mode. A kill between two files leaves some written and the others as they were; ``init`` skips
  what it finds done, so running it again completes the project.
- ``commit_contract`` (``contract new``): the contract directory is built and synced in a private staging
  directory under ``versions/``, the head template is linked into ``templates/`` (never replacing a file), and
  the directory is renamed into place: that rename is the commit point. A run killed between the link and the
  rename leaves a head template with no contract; the next ``contract new`` removes it (it is still the staged
  file, the same inode) with the dead run's staging directory.

Writers hold a lock on the directory they write in: the project root (``init``) or ``versions/`` (``contract
new``), so two runs never interleave and a second one stops at once (``Busy``).
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path

from promptops.core.contract import VERSIONS_DIR
from promptops.core.errors import PromptopsError
from promptops.core.files import (
    WriteError,
    create_atomic,
    dead_stagings,
    fsync_directory,
    private_staging,
    write_atomic,
    write_synced,
)
from promptops.scaffold.plan import ScaffoldError, Write

STAGING_PREFIX = ".contract-new-"
_CONTRACT = "contract"  # in the staging directory: what becomes versions/<name>/
_HEAD = "head.j2"  # in the staging directory: the head template, linked into templates/
_HEAD_PATH = "head-path"  # in the staging directory: where the head was linked (repo-relative)


def apply_writes(root: Path, writes: Sequence[Write]) -> None:
    """Write each file atomically: new files exclusively (an existing one is never replaced), updates and
    appends by replacing the file whole with the same mode."""
    for write in writes:
        if write.skipped:
            continue
        path = root / write.path
        if write.mode == "mkdir":
            try:
                path.mkdir(parents=True)
            except OSError as problem:
                raise WriteError(f"{write.path}/: cannot create: {problem.strerror or problem}") from None
            continue
        data = write.content.encode("utf-8")
        if write.mode in ("append", "update") and os.path.lexists(path):
            target = Path(os.path.realpath(path))  # a linked file is updated where it lives, the link kept
            try:
                old = target.read_bytes() if write.mode == "append" else b""
                mode = stat.S_IMODE(target.stat().st_mode)
            except OSError as problem:
                raise WriteError(f"{write.path}: cannot read: {problem.strerror or problem}") from None
            write_atomic(target, old + data, mode=mode, shown=write.path)
        else:
            create_atomic(path, data, shown=write.path)


def roll_back_dead_contracts(root: Path) -> None:
    """Remove what killed ``contract new`` runs left: their staging directories and a head template linked
    but never committed (the contract directory was still in the staging directory)."""
    versions = root / VERSIONS_DIR
    for stage in dead_stagings(versions, STAGING_PREFIX):
        head_path = stage / _HEAD_PATH
        if (stage / _CONTRACT).is_dir() and head_path.is_file() and (stage / _HEAD).is_file():
            linked = root / head_path.read_text(encoding="utf-8")
            if linked.is_file() and not linked.is_symlink() and os.path.samefile(linked, stage / _HEAD):
                linked.unlink()
                fsync_directory(linked.parent)
        shutil.rmtree(stage, ignore_errors=True)


def pending_heads(root: Path) -> set[tuple[int, int]]:
    """The files (device, inode) of head templates a ``contract new`` linked into ``templates/`` but has not
    committed yet (its contract directory is still staged): readers treat them as not there, so a run killed
    between its two renames leaves a project that reads as before it."""
    versions = root / VERSIONS_DIR
    try:
        stages = [entry for entry in os.scandir(versions) if entry.name.startswith(STAGING_PREFIX)]
    except OSError:
        return set()
    found = set()
    for stage in stages:
        try:
            head = os.stat(Path(stage.path) / _HEAD)
        except OSError:
            continue
        found.add((head.st_dev, head.st_ino))
    return found


def commit_contract(root: Path, contract_dir: str, writes: Sequence[Write]) -> None:
    """Write a new contract (``writes`` under ``contract_dir``, plus its head template elsewhere) all or
    nothing. The caller holds the lock of ``versions/`` and has called ``roll_back_dead_contracts``."""
    versions = root / VERSIONS_DIR
    inside = [w for w in writes if w.path.startswith(f"{contract_dir}/")]
    heads = [w for w in writes if not w.path.startswith(f"{contract_dir}/")]
    if len(heads) != 1 or os.path.lexists(root / contract_dir):
        raise PromptopsError(f"{contract_dir}/ exists already: pick another name (nothing is ever overwritten)")
    head = heads[0]
    with private_staging(versions, STAGING_PREFIX, f"{VERSIONS_DIR}/") as stage:
        for write in inside:
            write_synced(
                stage / _CONTRACT / write.path[len(contract_dir) + 1 :], write.content.encode("utf-8"), write.path
            )
        write_synced(stage / _HEAD, head.content.encode("utf-8"), head.path)
        write_synced(stage / _HEAD_PATH, head.path.encode("utf-8"), head.path)
        for directory in [stage, *(p for p in stage.rglob("*") if p.is_dir())]:
            fsync_directory(directory)
        final_head = root / head.path
        try:
            final_head.parent.mkdir(parents=True, exist_ok=True)
            os.link(stage / _HEAD, final_head)  # fails if the name exists: never replaces a file
            fsync_directory(final_head.parent)
        except FileExistsError:
            raise ScaffoldError(f"{head.path} exists already: move it away or pick another name") from None
        except OSError as problem:
            raise WriteError(f"{head.path}: cannot write: {problem.strerror or problem}") from None
        try:
            os.rename(stage / _CONTRACT, root / contract_dir)  # the commit point
            fsync_directory(versions)
        except OSError as problem:
            final_head.unlink(missing_ok=True)  # ours: linked above, the contract never committed
            raise WriteError(f"{contract_dir}/: cannot write: {problem.strerror or problem}") from None
