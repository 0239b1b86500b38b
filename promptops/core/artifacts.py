"""Release artifacts: what a prompt release freezes, their hashes, and checking them against the lock.

A prompt release freezes the head template and every template it imports, includes or extends (partials,
transitively), under the names the template uses for them: ``templates/_partials/fields.j2`` imported as
``"_partials/fields.j2"`` becomes ``versions/<contract>/prompts/X.Y.Z/_partials/fields.j2``, which is where
the snapshot's loader looks first (``promptops.render.renderer.snapshot_search_path``). A template imported by a
computed name cannot be frozen and is refused.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from jinja2 import Environment, TemplateError, meta

from promptops.core.contract import VERSIONS_DIR
from promptops.core.errors import PromptopsError
from promptops.core.lock import LOCK_FILE, ReleaseLock, frozen_dir, parse_lock
from promptops.core.versioning import PromptVersion

PROMPTS_DIR = "prompts"


class FreezeError(PromptopsError):
    """A template cannot be frozen (unreadable, or it imports a template by a computed name)."""


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    return sha256_bytes(path.read_bytes())


def template_sources(env: Environment, name: str) -> dict[str, bytes]:
    """``name`` and every template it references, transitively: loader name -> source bytes (``name`` first).

    Raises FreezeError for a reference by a computed name (``{% import partial_name %}``) or an unreadable
    template, naming the template that holds it.
    """
    assert env.loader is not None
    out: dict[str, bytes] = {}
    pending = [name]
    while pending:
        current = pending.pop(0)
        if current in out:
            continue
        try:
            source, filename, _ = env.loader.get_source(env, current)
            tree = env.parse(source, current, filename)
        except TemplateError as exc:
            raise FreezeError(f"{current}: cannot be frozen: {exc.message or type(exc).__name__}") from None
        out[current] = Path(filename).read_bytes() if filename else source.encode("utf-8")
        for referenced in meta.find_referenced_templates(tree):
            if referenced is None:
                raise FreezeError(f"{current}: imports a template by a computed name, which a release cannot freeze")
            pending.append(referenced)
    return out


def frozen_files(version: PromptVersion, sources: Mapping[str, bytes], head_name: str) -> dict[str, bytes]:
    """The files a release of ``sources`` writes, as paths under versions/<contract>/ -> bytes."""
    out = {f"{PROMPTS_DIR}/{version}.j2": sources[head_name]}
    for name, data in sources.items():
        if name != head_name:
            out[f"{frozen_dir(version)}/{name}"] = data
    return out


STAGING_PREFIX = ".release-staging-"  # versions/<contract>/.release-staging-XXXXXXXX/: one cut's private staging
_MAX_PENDING_LOCK = 16 << 20


class ArtifactProblem(NamedTuple):
    """A locked artifact that no longer matches the lock, or a release file the lock does not know."""

    kind: str  # modified | missing | unlocked
    file: str  # repo-relative
    message: str
    locked: str | None = None  # the sha256 in the lock
    actual: str | None = None  # the sha256 on disk

    def to_dict(self) -> dict[str, str | None]:
        return self._asdict()


def check_artifacts(root: Path, lock: ReleaseLock) -> list[ArtifactProblem]:
    """Every locked artifact whose bytes changed or that is gone, and every file under ``prompts/`` that no
    release locks (left by an interrupted cut, or written by hand), in path order."""
    problems: list[ArtifactProblem] = []
    locked = lock.artifacts()
    owner = {path: str(r.version) for r in reversed(lock.releases) for path in r.artifacts}
    base = root / VERSIONS_DIR / lock.contract
    pending = in_flight(lock, staging_dirs(base))
    for path, digest in sorted(locked.items()):
        rel = f"{lock.directory}/{path}"
        file = base / path
        if not file.is_file():
            problems.append(
                ArtifactProblem("missing", rel, f"locked by release {owner[path]} but missing", digest, None)
            )
            continue
        actual = sha256_file(file)
        if actual != digest:
            message = f"modified after release {owner[path]}: sha256 {actual[:12]}... but the lock has {digest[:12]}..."
            problems.append(ArtifactProblem("modified", rel, message, digest, actual))
    for path in _release_files(base):  # with no lock, or an emptied one, every release file is a stray
        if path in pending and pending[path] == sha256_file(base / path):
            continue  # moved in by a cut not committed yet: released by no entry, removed if that cut died
        if path not in locked:
            message = (
                "in prompts/ but locked by no release (left by an interrupted cut? run release cut again, or remove it)"
            )
            problems.append(ArtifactProblem("unlocked", f"{lock.directory}/{path}", message))
    return sorted(problems, key=lambda p: p.file)


def staging_dirs(base: Path) -> list[Path]:
    """The private staging directories of cuts under ``base`` (``versions/<contract>/``), live or dead."""
    return sorted(p for p in base.glob(f"{STAGING_PREFIX}*") if p.is_dir() and not p.is_symlink())


def in_flight(lock: ReleaseLock, stagings: list[Path]) -> dict[str, str]:
    """What cuts staged in ``stagings`` may have moved into ``prompts/`` before committing: the artifacts
    (path -> sha256) of the pending lock each staged, for the releases ``lock`` does not hold. After the
    commit the pending lock is gone from the staging directory (it was renamed over ``releases.yaml``)."""
    released = {r.version for r in lock.releases}
    out: dict[str, str] = {}
    for staging in stagings:
        pending = staging / LOCK_FILE
        try:
            if pending.is_symlink() or not pending.is_file() or pending.stat().st_size > _MAX_PENDING_LOCK:
                continue
            staged = parse_lock(pending.read_text(encoding="utf-8"), lock.contract, pending.name)
        except (OSError, UnicodeDecodeError, PromptopsError):
            continue  # not a whole pending lock: the cut never moved anything in
        for release in staged.releases:
            if release.version not in released:
                out.update(release.artifacts)
    return out


def _release_files(base: Path) -> Iterator[str]:
    prompts = base / PROMPTS_DIR
    if not prompts.is_dir():
        return
    for path in sorted(prompts.rglob("*")):
        relative = path.relative_to(base)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            yield relative.as_posix()
