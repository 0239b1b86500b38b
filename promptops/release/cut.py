"""Planning a release cut: read the head's pins, compute the classes, and refuse what the lock forbids.

``plan_cut`` never writes; ``promptops.release.write.write_release`` commits a plan that was not refused.
The checks, in order (every refusal found is reported, not just the first):

1. the lock verifies: no locked artifact modified or missing, no stray file in ``prompts/`` other than the
   leftovers of an interrupted cut of this very version (which the cut replaces);
2. the head's prompt version is new and newer than the latest release (releases only move forward);
3. ``promptops lint`` passes on the head (no error findings), so the frozen snapshot passes too;
4. a schema the lock does not know yet is newer than every released one, and its class, computed against
   every released schema of its major line (``classify_against``), is not larger than its declared bump
   (a new minor declares minor, a new major declares major);
5. the prompt's class against the latest release (``classify_prompt``) is not larger than its declared bump.

A refused bump names the smallest version that would pass: "declared 1.0.1 (patch) but the change is minor:
use 1.1.0".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promptops.compat import TransitiveComparison, classify_against
from promptops.core.artifacts import (
    check_artifacts,
    frozen_files,
    sha256_bytes,
    sha256_file,
    template_sources,
)
from promptops.core.contract import Contract, load_contract
from promptops.core.errors import PromptopsError
from promptops.core.findings import Finding, Level
from promptops.core.lock import (
    LOCK_FILE,
    Release,
    ReleaseLock,
    frozen_dir,
    is_timestamp,
    load_lock,
    schema_path,
    snapshot_path,
)
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.release.prompt_class import PromptComparison, classify_prompt, rank, rendered_contract
from promptops.render.renderer import (
    SAMPLE_CHANGED_FILES,
    SAMPLE_DIFF,
    TEMPLATES_DIR,
    Renderer,
    new_environment,
    template_search_path,
)


@dataclass(frozen=True)
class CutRequest:
    """What to cut. ``date`` is the UTC timestamp to record (the caller reads the clock, the library never does)."""

    contract: str
    date: str
    note: str = ""
    # Check 2, lint on the head: (root, head) -> findings. The caller passes promptops.lint.head_lint(config).
    lint: Callable[[Path, Path], Sequence[Finding]] = field(kw_only=True)
    render_context: Mapping[str, Any] = field(default_factory=dict, kw_only=True)  # lint's render-context


@dataclass(frozen=True)
class SchemaCheck:
    version: SchemaVersion
    previous: SchemaVersion | None  # the latest released schema
    declared: str  # initial | unchanged | minor | major (from the version numbers)
    computed: str  # initial | unchanged | patch | minor | major (from the schemas)
    comparison: TransitiveComparison | None = None

    def to_dict(self) -> dict[str, Any]:
        forcing = self.comparison.forcing if self.comparison is not None else ()
        return {
            "version": str(self.version),
            "previous": None if self.previous is None else str(self.previous),
            "declared": self.declared,
            "computed": self.computed,
            "against": [str(v) for v, _ in self.comparison.comparisons] if self.comparison is not None else [],
            "forcing": [{"against": str(v), **d.to_dict()} for v, d in forcing],
        }


@dataclass(frozen=True)
class PromptCheck:
    version: PromptVersion
    previous: PromptVersion | None  # the latest release
    declared: str  # initial | patch | minor | major (from the version numbers)
    computed: str  # initial | patch | minor | major (from the rendered contracts)
    comparison: PromptComparison | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": str(self.version),
            "previous": None if self.previous is None else str(self.previous),
            "declared": self.declared,
            "computed": self.computed,
            "differences": [] if self.comparison is None else [d.to_dict() for d in self.comparison.differences],
        }


@dataclass(frozen=True)
class CutPlan:
    """The outcome of planning: the entry and files to write, or why the cut is refused."""

    contract: str
    head: str  # repo-relative path of the head template
    lock: ReleaseLock
    lock_digest: str | None  # sha256 of releases.yaml when planned (None: no lock yet); checked at commit
    prompt: PromptCheck | None = None
    schema: SchemaCheck | None = None
    release: Release | None = None
    files: Mapping[str, bytes] = field(default_factory=dict)  # to write, path under versions/<contract>/
    refusals: tuple[str, ...] = ()
    lint_findings: tuple[Finding, ...] = ()

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    @property
    def directory(self) -> str:
        return self.lock.directory

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "head": self.head,
            "refused": self.refused,
            "refusals": list(self.refusals),
            "prompt": None if self.prompt is None else self.prompt.to_dict(),
            "schema": None if self.schema is None else self.schema.to_dict(),
            "release": None if self.release is None else self.release.to_dict(self.directory),
            "writes": [*sorted(f"{self.directory}/{p}" for p in self.files), f"{self.directory}/{LOCK_FILE}"],
            "lint": [f.to_dict() for f in self.lint_findings],
        }


def plan_cut(root: Path, request: CutRequest) -> CutPlan:
    """Plan cutting the head template of ``request.contract`` as a release; writes nothing."""
    if not is_timestamp(request.date):
        raise PromptopsError(f"release date {request.date!r} is not a UTC timestamp YYYY-MM-DDTHH:MM:SSZ that exists")
    contract = load_contract(root, request.contract)
    lock = load_lock(root, request.contract)
    lock_file = root / lock.source
    digest = sha256_file(lock_file) if lock.exists else None
    renderer = Renderer(root)
    head = renderer.head_template(contract.name)
    if head is None:
        raise PromptopsError(f"{TEMPLATES_DIR}/{contract.name}.j2: no head template for contract {contract.name}")
    head_rel = head.relative_to(root).as_posix()
    pins = renderer.pins(head)
    base = CutPlan(contract.name, head_rel, lock, digest)

    refusals = _lock_refusals(root, lock, pins.prompt_version)
    versions = _version_refusals(lock, pins.prompt_version, head_rel)
    if versions:  # nothing to classify against: the version itself is wrong
        return _refused(base, [*refusals, *versions], ())
    findings = tuple(request.lint(root, head))
    errors = [f for f in findings if f.level is Level.ERROR]
    refusals += [f"lint: {f.file}:{f.span.line}:{f.span.column}: {f.code} {f.message}" for f in errors]
    if errors or pins.schema_version not in contract.shapes:
        return _refused(base, refusals, findings)

    schema = schema_check(contract, lock, pins.schema_version)
    refusals += schema_refusals(schema)
    variables = dict(request.render_context)
    prompt = prompt_check(renderer, contract, lock, pins.prompt_version, pins.schema_version, variables)
    refusals += prompt_refusals(prompt)

    env = new_environment(template_search_path(root), root=root)
    head_name = head.relative_to(root / TEMPLATES_DIR).as_posix()
    files = frozen_files(pins.prompt_version, template_sources(env, head_name), head_name)
    schema_file = root / contract.schema_files[pins.schema_version]
    artifacts = {path: sha256_bytes(data) for path, data in files.items()}
    artifacts[schema_path(pins.schema_version)] = sha256_file(schema_file)
    release = Release(
        pins.prompt_version,
        pins.schema_version,
        prompt.computed,
        schema.computed,
        request.date,
        request.note,
        "released",
        dict(sorted(artifacts.items())),
    )
    if refusals:
        return CutPlan(contract.name, head_rel, lock, digest, prompt, schema, None, {}, tuple(refusals), findings)
    return CutPlan(contract.name, head_rel, lock, digest, prompt, schema, release, files, (), findings)


def smallest_passing(previous: PromptVersion, change: str) -> PromptVersion:
    """The smallest prompt version after ``previous`` whose bump is at least ``change``."""
    if change == "major":
        return PromptVersion(previous.major + 1, 0, 0)
    if change == "minor":
        return PromptVersion(previous.major, previous.minor + 1, 0)
    return PromptVersion(previous.major, previous.minor, previous.patch + 1)


def declared_bump(previous: PromptVersion, new: PromptVersion) -> str:
    """The class a version number claims: which component grew (``new`` is newer than ``previous``)."""
    if new.major != previous.major:
        return "major"
    return "minor" if new.minor != previous.minor else "patch"


def _refused(base: CutPlan, refusals: Sequence[str], findings: tuple[Finding, ...]) -> CutPlan:
    return CutPlan(
        base.contract, base.head, base.lock, base.lock_digest, refusals=tuple(refusals), lint_findings=findings
    )


def _lock_refusals(root: Path, lock: ReleaseLock, version: PromptVersion) -> list[str]:
    own = (f"{lock.directory}/{snapshot_path(version)}", f"{lock.directory}/{frozen_dir(version)}/")
    out = []
    for problem in check_artifacts(root, lock):
        if problem.kind == "unlocked" and problem.file.startswith(own) and lock.get(version) is None:
            continue  # a leftover of an interrupted cut of this very version: this cut replaces it
        out.append(f"{problem.file}: {problem.message} (release verify)")
    return out


def _version_refusals(lock: ReleaseLock, version: PromptVersion, head: str) -> list[str]:
    existing = lock.get(version)
    if existing is not None:
        return [
            f"prompt {version} is already released ({existing.date}): pin a new prompt_version in {head} "
            f"(released versions are immutable)"
        ]
    latest = lock.latest
    if latest is not None and version < latest.version:
        return [f"prompt {version} is older than the latest release {latest.version}: releases only move forward"]
    return []


def schema_check(contract: Contract, lock: ReleaseLock, version: SchemaVersion) -> SchemaCheck:
    released = lock.released_schemas()
    latest = lock.latest
    if latest is None:
        return SchemaCheck(version, None, "initial", "initial")
    previous = max(released)
    if version in released:
        return SchemaCheck(version, previous, "unchanged", "unchanged")
    declared = "major" if version.major != previous.major else "minor"
    line = {v: contract.shape(v).schema for v in released if v.major == version.major}
    if version < previous or not line:
        return SchemaCheck(version, previous, declared, "major")
    comparison = classify_against(line, contract.shape(version).schema, major=version.major)
    return SchemaCheck(version, previous, declared, str(comparison.change), comparison)


def schema_refusals(check: SchemaCheck) -> list[str]:
    if check.previous is None or check.declared == "unchanged":
        return []
    if check.version < check.previous:
        return [
            f"schema {check.version} is older than the latest released schema {check.previous}: a new schema "
            f"version must be newer than every released one"
        ]
    if rank(check.computed) <= rank(check.declared):
        return []
    use = f"{check.previous.major + 1}.0"
    lines = [f"declared schema {check.version} ({check.declared}) but the change is {check.computed}: use {use}"]
    assert check.comparison is not None
    lines += [f"  against {v}: {d.path} {d.kind}: {d.message}" for v, d in check.comparison.forcing]
    return ["\n".join(lines)]


def prompt_comparison(
    renderer: Renderer,
    contract: Contract,
    lock: ReleaseLock,
    schema: SchemaVersion,
    variables: Mapping[str, Any],
) -> PromptComparison | None:
    """The head's rendered contract against the latest release's (None before the first release)."""
    latest = lock.latest
    if latest is None:
        return None
    # Both sides render with lint's sample context, so only the templates (and their targets) differ.
    old_text = renderer.render(
        contract, version=latest.version, changed_files=SAMPLE_CHANGED_FILES, diff=SAMPLE_DIFF, variables=variables
    ).text
    new_text = renderer.render(contract, changed_files=SAMPLE_CHANGED_FILES, diff=SAMPLE_DIFF, variables=variables).text
    return classify_prompt(
        rendered_contract(old_text, contract.shape(latest.schema_version)),
        rendered_contract(new_text, contract.shape(schema)),
    )


def prompt_check(
    renderer: Renderer,
    contract: Contract,
    lock: ReleaseLock,
    version: PromptVersion,
    schema: SchemaVersion,
    variables: Mapping[str, Any],
) -> PromptCheck:
    latest = lock.latest
    comparison = prompt_comparison(renderer, contract, lock, schema, variables)
    if latest is None or comparison is None:
        return PromptCheck(version, None, "initial", "initial")
    return PromptCheck(version, latest.version, declared_bump(latest.version, version), comparison.change, comparison)


def prompt_refusals(check: PromptCheck) -> list[str]:
    if check.previous is None or check.declared == "initial" or rank(check.computed) <= rank(check.declared):
        return []
    use = smallest_passing(check.previous, check.computed)
    lines = [f"declared {check.version} ({check.declared}) but the change is {check.computed}: use {use}"]
    assert check.comparison is not None
    lines += [f"  {d.kind}: {d.message}" for d in check.comparison.forcing]
    return ["\n".join(lines)]


__all__ = [
    "CutPlan",
    "CutRequest",
    "PromptCheck",
    "SchemaCheck",
    "declared_bump",
    "plan_cut",
    "prompt_check",
    "prompt_comparison",
    "prompt_refusals",
    "schema_check",
    "schema_refusals",
    "smallest_passing",
]
