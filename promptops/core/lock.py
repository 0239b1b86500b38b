"""The release lock ``versions/<contract>/releases.yaml``: what was released, when, and the hash of every artifact.

Written only by ``release cut`` (never by hand) and read by ``release verify``, ``release list``,
``compat matrix`` and lint (PO001, PO009). One entry per released prompt version, oldest first::

    contract: review-result
    lock_version: 1
    releases:
    - version: 1.0.0              # the prompt version (MAJOR.MINOR.PATCH)
      schema_version: '1.0'       # the schema it targets
      class: initial              # prompt class against the previous release: initial|patch|minor|major
      schema_class: initial       # initial|unchanged (same schema as before)|patch|minor|major (new schema)
      date: '2025-06-02T09:30:00Z'
      note: First release.
      status: released            # released|deprecated|withdrawn
      artifacts:                  # path under versions/<contract>/ -> sha256 of its bytes
        prompts/1.0.0.j2: 9f2c...
        prompts/1.0.0/_partials/fields.j2: 41d0...
        schemas/1.0.json: 0b7e...

Any problem reading it raises LockError naming the file, the entry and the key.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal, NamedTuple

import msgspec

from promptops.core import specs, strict_yaml
from promptops.core.contract import VERSIONS_DIR
from promptops.core.errors import PromptopsError
from promptops.core.versioning import PromptVersion, SchemaVersion

LOCK_FILE = "releases.yaml"
LOCK_VERSION = 1
_SHA256 = re.compile(r"[0-9a-f]{64}\Z")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z\Z")
_HEADER = (
    "# Release lock of the {contract} contract: written by `promptops release cut`, checked by\n"
    "# `promptops release verify` and lint rule PO009. Do not edit by hand.\n"
)


class LockError(PromptopsError):
    """The release lock is malformed; the message names the file and the key."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        super().__init__(f"{source}: {problem}")


class Release(NamedTuple):
    """One released prompt version and the artifacts frozen with it."""

    version: PromptVersion
    schema_version: SchemaVersion
    prompt_class: str
    schema_class: str
    date: str  # ISO 8601 UTC, seconds: 2025-06-02T09:30:00Z
    note: str
    status: str
    artifacts: Mapping[str, str]  # path under versions/<contract>/ -> sha256 hex

    @property
    def snapshot(self) -> str:
        """The snapshot's path under versions/<contract>/."""
        return snapshot_path(self.version)

    def entry(self) -> dict[str, Any]:
        """The entry as the lock file holds it, keys in the lock's order."""
        return {
            "version": str(self.version),
            "schema_version": str(self.schema_version),
            "class": self.prompt_class,
            "schema_class": self.schema_class,
            "date": self.date,
            "note": self.note,
            "status": self.status,
            "artifacts": dict(self.artifacts),
        }

    def to_dict(self, directory: str) -> dict[str, Any]:
        """The entry as JSON, artifact paths repo-relative (``directory`` is the contract's, e.g. versions/x)."""
        return {**self.entry(), "artifacts": {f"{directory}/{path}": digest for path, digest in self.artifacts.items()}}


class ReleaseLock(NamedTuple):
    """A contract's release history, oldest first; empty when the contract has no releases.yaml yet."""

    contract: str
    releases: tuple[Release, ...] = ()
    exists: bool = False
    source: str = ""  # repo-relative path of the lock file
    lines: Mapping[str, int] = MappingProxyType({})  # artifact path -> line of its first mention

    @property
    def directory(self) -> str:
        return f"{VERSIONS_DIR}/{self.contract}"

    @property
    def latest(self) -> Release | None:
        return self.releases[-1] if self.releases else None

    def get(self, version: PromptVersion) -> Release | None:
        return next((r for r in self.releases if r.version == version), None)

    def released_schemas(self) -> dict[SchemaVersion, str]:
        """Every released schema version and the path of its file (under versions/<contract>/)."""
        return {r.schema_version: schema_path(r.schema_version) for r in self.releases}

    def artifacts(self) -> dict[str, str]:
        """Every locked artifact (path under versions/<contract>/) and its sha256, across all releases."""
        out: dict[str, str] = {}
        for release in self.releases:
            out.update(release.artifacts)
        return out

    def with_release(self, release: Release) -> ReleaseLock:
        return ReleaseLock(self.contract, (*self.releases, release), True, self.source, self.lines)


def snapshot_path(version: PromptVersion) -> str:
    return f"prompts/{version}.j2"


def frozen_dir(version: PromptVersion) -> str:
    """Where the templates a snapshot imports are frozen, under versions/<contract>/."""
    return f"prompts/{version}"


def schema_path(version: SchemaVersion) -> str:
    return f"schemas/{version}.json"


def lock_path(root: Path, contract: str) -> Path:
    return root / VERSIONS_DIR / contract / LOCK_FILE


def is_timestamp(text: object) -> bool:
    """Whether ``text`` is a real UTC timestamp written YYYY-MM-DDTHH:MM:SSZ (no 2026-02-30, no 25:61:61)."""
    if not isinstance(text, str) or not _DATE.match(text):
        return False
    try:  # the pattern fixed the layout; fromisoformat checks the ranges without importing _strptime
        datetime.fromisoformat(text[:-1])
    except ValueError:
        return False
    return True


def load_lock(root: Path, contract: str) -> ReleaseLock:
    """Read ``versions/<contract>/releases.yaml``; an absent file is an empty history.

    Anything else at that path that is not a regular file of bounded size (a directory, a symlink to a
    device) is a LockError, never an empty history: ``release verify`` must not pass on a lock it cannot read.
    """
    path = lock_path(root, contract)
    source = f"{VERSIONS_DIR}/{contract}/{LOCK_FILE}"
    if not os.path.lexists(path):
        return ReleaseLock(contract, source=source)
    try:
        text = strict_yaml.read_text(path)
    except strict_yaml.YamlProblem as exc:
        raise LockError(source, str(exc)) from None
    return parse_lock(text, contract, source)


class _EntrySpec(msgspec.Struct, forbid_unknown_fields=True):
    version: specs.PromptText
    schema_version: specs.SchemaText
    prompt_class: Literal["initial", "patch", "minor", "major"] = msgspec.field(name="class")
    schema_class: Literal["initial", "unchanged", "patch", "minor", "major"]
    date: Any
    note: str
    status: Literal["released", "deprecated", "withdrawn"]
    artifacts: Any


class _LockSpec(msgspec.Struct, forbid_unknown_fields=True):
    contract: Any
    lock_version: Any
    releases: list[Any]


def parse_lock(text: str, contract: str, source: str) -> ReleaseLock:
    """Parse lock text; every problem is a LockError naming the line, entry and key (duplicate keys refused)."""
    try:
        doc = specs.parse_yaml(text, source, quoted_keys=True)
        if not isinstance(doc.data, dict):
            raise specs.SpecError(source, "must be a YAML mapping with 'contract', 'lock_version' and 'releases'")
        lock = doc.convert(_LockSpec)
        if lock.contract != contract:
            problem = f"key 'contract' is {lock.contract!r} but the directory is {contract!r}"
            raise specs.SpecError(source, problem, doc.line(("contract",)))
        if lock.lock_version != LOCK_VERSION:
            problem = f"key 'lock_version' must be {LOCK_VERSION} (this promptops reads version 1)"
            raise specs.SpecError(source, problem, doc.line(("lock_version",)))
        releases = tuple(_release(doc, index) for index in range(len(lock.releases)))
        _check_history(doc, releases)
    except specs.SpecError as problem:
        raise LockError(source, problem.detail) from None
    lines: dict[str, int] = {}
    for index, release in enumerate(releases):
        for path in release.artifacts:
            lines.setdefault(path, doc.line(("releases", index, "artifacts", path)) or 1)
    return ReleaseLock(contract, releases, True, source, lines)


def dump_lock(lock: ReleaseLock) -> str:
    """The lock as YAML text, deterministic (entries oldest first, keys in a fixed order)."""
    import yaml  # only writing a lock needs PyYAML's dumper

    entries = [release.entry() for release in lock.releases]
    body = {"contract": lock.contract, "lock_version": LOCK_VERSION, "releases": entries}
    text = yaml.safe_dump(body, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)
    return _HEADER.format(contract=lock.contract) + text


def _release(doc: specs.Document, index: int) -> Release:
    where: specs.Key = ("releases", index)
    entry = doc.convert(_EntrySpec, where, specs.VERSIONS)
    version = entry.version.version
    if doc.data["releases"][index]["version"] != str(version):
        written = doc.data["releases"][index]["version"]
        raise doc.fail((*where, "version"), f"prompt version {written!r} must be written MAJOR.MINOR.PATCH")
    if not is_timestamp(entry.date):
        raise doc.fail(
            (*where, "date"), f"must be a UTC timestamp YYYY-MM-DDTHH:MM:SSZ that exists, not {entry.date!r}"
        )
    artifacts = entry.artifacts
    if not isinstance(artifacts, dict) or not artifacts:
        raise doc.fail((*where, "artifacts"), "must map artifact paths to sha256 digests")
    for path, digest in artifacts.items():
        if not isinstance(path, str) or path.startswith("/") or ".." in path.split("/") or "\\" in path:
            raise doc.fail((*where, "artifacts"), f"{path!r} is not a relative path under the contract directory")
        if not isinstance(digest, str) or not _SHA256.match(digest):
            raise doc.fail((*where, "artifacts", path), "must be a sha256 digest (64 lowercase hex digits)")
    schema = entry.schema_version.version
    for needed in (snapshot_path(version), schema_path(schema)):
        if needed not in artifacts:
            raise doc.fail((*where, "artifacts"), f"must include {needed}")
    return Release(
        version, schema, entry.prompt_class, entry.schema_class, entry.date, entry.note, entry.status, dict(artifacts)
    )


def _check_history(doc: specs.Document, releases: tuple[Release, ...]) -> None:
    seen: dict[str, tuple[str, str]] = {}
    for index, release in enumerate(releases):
        if index and release.version <= releases[index - 1].version:
            previous = releases[index - 1].version
            raise doc.fail(("releases", index, "version"), f"{release.version} does not follow {previous}")
        for path, digest in release.artifacts.items():
            first = seen.setdefault(path, (digest, str(release.version)))
            if first[0] != digest:
                where = ("releases", index, "artifacts", path)
                raise doc.fail(where, f"digest differs from the one release {first[1]} locked")
