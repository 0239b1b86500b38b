"""Committing a release: every file staged and synced first, moved into place, the lock replaced last.

The lock is the commit point: a file under ``prompts/`` that no lock entry names is not released (``release
verify`` reports it, the next cut of that version replaces it). So a cut interrupted at any moment leaves
``releases.yaml`` and every released artifact exactly as they were:

0. the cut holds the contract's lock (``contract_lock``: an exclusive flock on ``versions/<contract>/``) from
   before it plans until it has committed, so two cuts never interleave: a second one finds the lock held
   and stops (``Busy``, exit 3) or, once the first is done, plans against the new lock (and is refused
   when its version was just released);
1. everything (the snapshot, its frozen partials and the new lock text) is written into a private staging
   directory ``versions/<contract>/.release-staging-XXXXXXXX/`` (mkdtemp, flocked for the run's life) and
   fsynced; a full disk, a file-size limit or a kill here touches nothing outside it;
2. the staged artifacts are renamed into place (``os.replace``; same filesystem, so each rename is atomic);
   they are new paths of an unreleased version, so no released file is ever overwritten;
3. the lock is renamed over ``releases.yaml`` (atomic) and the directory fsynced: the release exists.

A failure in step 2 removes the files it moved before re-raising; the run's staging directory is removed at
the end, and the staging directories of dead runs (their flock is free) are removed by the next cut.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from promptops.core.artifacts import PROMPTS_DIR, STAGING_PREFIX, in_flight, sha256_file
from promptops.core.contract import VERSIONS_DIR, check_contract_name
from promptops.core.errors import PromptopsError
from promptops.core.files import (
    WriteError,
    dead_stagings,
    directory_lock,
    fsync_directory,
    private_staging,
    write_synced,
)
from promptops.core.lock import LOCK_FILE, dump_lock, frozen_dir, load_lock
from promptops.release.cut import CutPlan

LEGACY_STAGING_DIR = ".release-staging"  # the shared directory of earlier versions, removed when found


@contextmanager
def contract_lock(root: Path, contract: str) -> Iterator[None]:
    """Hold the lock of contract ``contract``'s release files (Busy when another run holds it) and remove
    what dead cuts left (their staging directories) before the block runs."""
    base = root / VERSIONS_DIR / check_contract_name(contract)
    if not base.is_dir():
        yield  # no such contract: planning says so
        return
    with directory_lock(base, f"{VERSIONS_DIR}/{contract}/", wait=False):
        _roll_back_dead_cuts(root, contract, base)
        yield


def _roll_back_dead_cuts(root: Path, contract: str, base: Path) -> None:
    """Remove what killed cuts left: the files they moved into ``prompts/`` without committing (unchanged
    since, and released by no entry), then their staging directories."""
    dead = dead_stagings(base, STAGING_PREFIX)
    try:
        lock = load_lock(root, contract)
    except PromptopsError:
        return  # a broken lock: touch nothing, planning reports it
    locked = lock.artifacts()
    prompts = base / PROMPTS_DIR
    for path, digest in in_flight(lock, dead).items():
        file = base / path
        if path in locked or not path.startswith(f"{PROMPTS_DIR}/"):
            continue
        if file.is_file() and not file.is_symlink() and sha256_file(file) == digest:
            file.unlink()
        for parent in file.parents:  # the directories the dead cut made for the version, once empty
            if parent == prompts or not parent.is_relative_to(prompts):
                break
            try:
                parent.rmdir()
            except OSError:
                break
    for directory in [*dead, base / LEGACY_STAGING_DIR]:
        shutil.rmtree(directory, ignore_errors=True)


def write_release(root: Path, plan: CutPlan) -> tuple[str, ...]:
    """Commit ``plan`` (not refused) under ``root``; returns the repo-relative paths written, the lock last.

    The caller holds ``contract_lock`` from before planning."""
    if plan.refused or plan.release is None:
        raise PromptopsError(f"release cut of {plan.contract} was refused; nothing to write")
    if plan.lock.get(plan.release.version) is not None:  # never touch the files of a released version
        raise PromptopsError(f"prompt {plan.release.version} of {plan.contract} is already released")
    base = root / VERSIONS_DIR / plan.contract
    lock_file = base / LOCK_FILE
    with private_staging(base, STAGING_PREFIX, f"{plan.directory}/") as staging:
        for path, data in plan.files.items():
            write_synced(staging / path, data, f"{plan.directory}/{path}")
        text = dump_lock(plan.lock.with_release(plan.release)).encode("utf-8")
        write_synced(staging / LOCK_FILE, text, f"{plan.directory}/{LOCK_FILE}")
        _fsync_tree(staging)
        current = sha256_file(lock_file) if lock_file.is_file() else None
        if current != plan.lock_digest:
            raise PromptopsError(f"{plan.directory}/{LOCK_FILE}: changed while the cut was planned; cut again")
        # Files of this (unreleased) version left by an interrupted cut go first, so none outlives the commit.
        shutil.rmtree(base / frozen_dir(plan.release.version), ignore_errors=True)
        try:
            _commit(staging, base, list(plan.files))
        except OSError as problem:
            raise WriteError(f"{plan.directory}/: cannot commit: {problem.strerror or problem}") from None
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
            fsync_directory(directory)
    except BaseException:
        for final in moved:  # unreleased new paths: removing them restores the previous state
            final.unlink(missing_ok=True)
        raise
    os.replace(staging / LOCK_FILE, base / LOCK_FILE)  # the commit point
    fsync_directory(base)


def _fsync_tree(top: Path) -> None:
    for directory in [top, *(p for p in top.rglob("*") if p.is_dir())]:
        fsync_directory(directory)
