"""Committing a release: every file staged and synced first, moved into place, the lock replaced last.

The lock is the commit point: a file under ``prompts/`` that no lock entry names is not released (``release
verify`` reports it, the next cut of that version replaces it). So a cut interrupted at any moment leaves
``releases.yaml`` and every released artifact exactly as they were:

1. everything (the snapshot, its frozen partials and the new lock text) is written into
   ``versions/<contract>/.release-staging/`` and fsynced; a full disk, a file-size limit or a kill here
   touches nothing outside the staging directory;
2. the staged artifacts are renamed into place (``os.replace``; same filesystem, so each rename is atomic);
   they are new paths of an unreleased version, so no released file is ever overwritten;
3. the lock is renamed over ``releases.yaml`` (atomic) and the directory fsynced: the release exists.

A failure in step 2 removes the files it moved before re-raising; the staging directory is removed at the
end, and a leftover one (from a killed cut) is removed by the next cut before it stages anything.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from promptops.contract import VERSIONS_DIR
from promptops.errors import PromptopsError
from promptops.release.artifacts import sha256_file
from promptops.release.cut import CutPlan
from promptops.release.lock import LOCK_FILE, dump_lock, frozen_dir

STAGING_DIR = ".release-staging"


def write_release(root: Path, plan: CutPlan) -> tuple[str, ...]:
    """Commit ``plan`` (not refused) under ``root``; returns the repo-relative paths written, the lock last."""
    if plan.refused or plan.release is None:
        raise PromptopsError(f"release cut of {plan.contract} was refused; nothing to write")
    if plan.lock.get(plan.release.version) is not None:  # never touch the files of a released version
        raise PromptopsError(f"prompt {plan.release.version} of {plan.contract} is already released")
    base = root / VERSIONS_DIR / plan.contract
    staging = base / STAGING_DIR
    lock_file = base / LOCK_FILE
    shutil.rmtree(staging, ignore_errors=True)  # left by a cut that was killed
    staging.mkdir(parents=True)
    try:
        for path, data in plan.files.items():
            _write_synced(staging / path, data)
        _write_synced(staging / LOCK_FILE, dump_lock(plan.lock.with_release(plan.release)).encode("utf-8"))
        _fsync_tree(staging)
        current = sha256_file(lock_file) if lock_file.is_file() else None
        if current != plan.lock_digest:
            raise PromptopsError(f"{plan.directory}/{LOCK_FILE}: changed while the cut was planned; cut again")
        # Files of this (unreleased) version left by an interrupted cut go first, so none outlives the commit.
        shutil.rmtree(base / frozen_dir(plan.release.version), ignore_errors=True)
        _commit(staging, base, list(plan.files))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return (*(f"{plan.directory}/{p}" for p in plan.files), f"{plan.directory}/{LOCK_FILE}")


def _commit(staging: Path, base: Path, paths: list[str]) -> None:
    moved: list[Path] = []
    try:
        for path in paths:
            final = base / path
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / path, final)
            moved.append(final)
        for directory in {p.parent for p in moved}:
            _fsync_dir(directory)
    except BaseException:
        for final in moved:  # unreleased new paths: removing them restores the previous state
            final.unlink(missing_ok=True)
        raise
    os.replace(staging / LOCK_FILE, base / LOCK_FILE)  # the commit point
    _fsync_dir(base)


def _write_synced(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def _fsync_tree(top: Path) -> None:
    for directory in [top, *(p for p in top.rglob("*") if p.is_dir())]:
        _fsync_dir(directory)


def _fsync_dir(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
