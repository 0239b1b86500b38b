"""``release check``: would the head template's pins pass ``release cut``? Computed as the cut computes them.

Lint checks a head template on its own; only the release lock knows whether its pins are honest. This runs
the cut's own class computations (``schema_check``, ``prompt_check`` and their refusals in
``promptops.release.cut``) without running lint or writing anything, so a pull request that would be refused
at release time fails in pre-commit or CI instead. Each problem is a ``Finding`` (as lint's) with a ``PR`` code,
placed on the pin at fault, so the lint formatters (text, json, github, sarif) show it.

A head that pins a version already released is fine when it is that release byte for byte (nothing to cut
yet); with any difference it reuses a released number for new content.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from promptops.core.artifacts import check_artifacts
from promptops.core.contract import CONTRACT_FILE, Contract, load_contract
from promptops.core.findings import FILE_START, Check, Finding, Span
from promptops.core.lock import ReleaseLock, load_lock
from promptops.core.versioning import PromptVersion
from promptops.release.cut import (
    PromptCheck,
    SchemaCheck,
    prompt_check,
    prompt_comparison,
    prompt_refusals,
    schema_check,
    schema_refusals,
    smallest_passing,
)
from promptops.render.renderer import Pins, Renderer, RenderError
from promptops.render.snapshots import snapshot_difference


class SchemaBumpUnderstated(Check):
    """The head pins a new schema version whose number claims a smaller change than the schema makes.

    A new schema is compared with every released schema of its major line; adding an enum value, removing
    a field or tightening a bound is major and needs a new major (``2.0``), a new optional field is minor.

    Fails (schema 1.2 adds `blocker` to the `severity` enum of released 1.1)::

        {% set schema_version = "1.2" %}

    Passes::

        {% set schema_version = "2.0" %}
    """

    code = "PR001"
    name = "schema-bump-understated"


class PromptBumpUnderstated(Check):
    """The head's prompt_version claims a smaller change than its rendered contract makes.

    The head and the latest release are rendered with lint's sample context and compared (field statuses,
    type-and-bounds texts, enum sets, the schema targeted); wording alone is a patch.

    Fails (the latest release is 1.1.0; the head newly states `cwe` as required)::

        {% set prompt_version = "1.1.1" %}

    Passes::

        {% set prompt_version = "2.0.0" %}
    """

    code = "PR002"
    name = "prompt-bump-understated"


class ReleasedVersionReused(Check):
    """The head pins a released prompt_version but differs from that release.

    A released version is immutable: the head may pin it only while it is that release byte for byte (the
    template, every partial it imports, and the schema version it was released with).

    Fails (1.1.0 is released; the head was reworded since)::

        {% set prompt_version = "1.1.0" %}

    Passes::

        {% set prompt_version = "1.1.1" %}
    """

    code = "PR003"
    name = "released-version-reused"


class ReleasedArtifactChanged(Check):
    """A released artifact (a schema, a snapshot or a frozen partial) was modified or removed.

    The lock records each released file's sha256; a released schema edited in place (an enum value
    removed without a new schema version) changes what a released prompt promises.

    Fails::

        versions/review-result/schemas/1.1.json edited after release 1.1.0

    Passes (the edit goes into a new schema file)::

        versions/review-result/schemas/2.0.json
    """

    code = "PR004"
    name = "released-artifact-changed"


class VersionBehind(Check):
    """The head pins a prompt_version older than the latest release.

    Releases only move forward; a head behind the lock can never be cut.

    Fails (the latest release is 1.1.0)::

        {% set prompt_version = "1.0.2" %}

    Passes::

        {% set prompt_version = "1.1.1" %}
    """

    code = "PR005"
    name = "version-behind"


class HeadUnclassifiable(Check):
    """The head's class cannot be computed: its pins are unreadable, its schema has no file, or it does not
    render.

    ``release check`` fails closed: a head it cannot classify cannot be shown to be releasable.

    Fails::

        {% set schema_version = "1.9" %}   (no versions/<contract>/schemas/1.9.json)

    Passes::

        {% set schema_version = "1.1" %}
    """

    code = "PR006"
    name = "head-unclassifiable"


class PolicyCannotRead(Check):
    """The contract's parser policy can never read the head's schema: the head targets a major line older
    than ``policy.schema_floor`` (a retired line), or a minor below the floor in the floor's line.

    A newer major line is fine: during its rollout the candidate arm is read under a policy of its own, and
    ``rollout retire`` raises the floor once it serves every unit (docs/breaking-changes.md).

    Fails (``policy.schema_floor: '2.0'``)::

        {% set schema_version = "1.1" %}

    Passes::

        {% set schema_version = "2.0" %}
    """

    code = "PR007"
    name = "policy-cannot-read-head"


CHECK_RULES: tuple[Check, ...] = (
    SchemaBumpUnderstated(),
    PromptBumpUnderstated(),
    ReleasedVersionReused(),
    ReleasedArtifactChanged(),
    VersionBehind(),
    HeadUnclassifiable(),
    PolicyCannotRead(),
)
_BY_CODE = {rule.code: rule for rule in CHECK_RULES}


class ReleaseCheck(NamedTuple):
    """The outcome for one contract's head template."""

    contract: str
    head: str  # repo-relative
    pins: Pins | None
    prompt: PromptCheck | None
    schema: SchemaCheck | None
    findings: tuple[Finding, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "head": self.head,
            "ok": not self.findings,
            "prompt_version": None if self.pins is None else self.pins.prompt_text,
            "schema_version": None if self.pins is None else self.pins.schema_text,
            "prompt": None if self.prompt is None else self.prompt.to_dict(),
            "schema": None if self.schema is None else self.schema.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
        }


def check_release(root: Path, contract_name: str, variables: Mapping[str, Any]) -> ReleaseCheck | None:
    """Check the head template of ``contract_name`` against its lock; None when it has no head template.

    ``variables`` are the lint render context's extra variables (the cut renders with them too).
    Raises ContractError/LockError (tool failures) when the contract or its lock cannot be read.
    """
    contract = load_contract(root, contract_name)
    lock = load_lock(root, contract_name)
    renderer = Renderer(root)
    head = renderer.head_template(contract_name)
    if head is None:
        return None
    rel = head.relative_to(root).as_posix()
    lines = head.read_text(encoding="utf-8", errors="replace").split("\n")
    problems = check_artifacts(root, lock)
    found = [_artifact_finding(lock, p.kind, p.file, p.message) for p in problems]
    findings = [f for f in found if f is not None]
    strays = [p for p in problems if p.kind == "unlocked"]
    if not lock.releases and strays:  # the lock was deleted or emptied: its releases are not gone
        state = "is missing" if not lock.exists else "lists no releases"
        message = f"{lock.source} {state}, but {len(strays)} released files remain under {lock.directory}/prompts/"
        findings.append(_at("PR004", lock.source if lock.exists else strays[0].file, FILE_START, message))
    try:
        pins = renderer.pins(head)
    except RenderError as exc:
        line = exc.line if exc.line is not None and 0 < exc.line <= len(lines) else None
        span = _line_span(lines, line) if line is not None else FILE_START
        return ReleaseCheck(contract.name, rel, None, None, None, (*findings, _at("PR006", rel, span, exc.problem)))
    prompt_at = _pin_span(lines, "prompt_version")
    schema_at = _pin_span(lines, "schema_version")
    if pins.schema_version not in contract.shapes:
        problem = f"schema_version {pins.schema_text} has no schema file {contract.directory}/schemas/"
        findings.append(_at("PR006", rel, schema_at, f"{problem}{pins.schema_version}.json"))
        return ReleaseCheck(contract.name, rel, pins, None, None, tuple(findings))
    unreadable = _policy_cannot_read(root, contract, pins)
    if unreadable is not None:
        findings.append(unreadable)
    released = lock.get(pins.prompt_version)
    latest = lock.latest
    try:
        if released is not None or (latest is not None and pins.prompt_version < latest.version):
            findings += _reused_or_behind(renderer, contract, lock, head, pins, variables, rel, prompt_at, schema_at)
            return ReleaseCheck(contract.name, rel, pins, None, None, tuple(findings))
        schema = schema_check(contract, lock, pins.schema_version)
        prompt = prompt_check(renderer, contract, lock, pins.prompt_version, pins.schema_version, variables)
    except RenderError as exc:
        findings.append(_at("PR006", rel, prompt_at, f"the head cannot be classified: {exc}"))
        return ReleaseCheck(contract.name, rel, pins, None, None, tuple(findings))
    prompt_problems = prompt_refusals(prompt)
    for refusal in schema_refusals(schema):
        message = refusal.split("\n", 1)[0]
        code = "PR005" if schema.previous is not None and schema.version < schema.previous else "PR001"
        major_needed = code == "PR001" and schema.computed == "major" and prompt.declared != "major"
        if major_needed and latest is not None and not prompt_problems:
            use = smallest_passing(latest.version, "major")
            message += f"; retargeting a new schema major makes the prompt change major: use prompt {use}"
        findings.append(_at(code, rel, schema_at, message + _forcing(refusal)))
    for refusal in prompt_problems:
        findings.append(_at("PR002", rel, prompt_at, refusal.split("\n", 1)[0] + _forcing(refusal)))
    return ReleaseCheck(contract.name, rel, pins, prompt, schema, tuple(findings))


def _reused_or_behind(
    renderer: Renderer,
    contract: Contract,
    lock: ReleaseLock,
    head: Path,
    pins: Pins,
    variables: Mapping[str, Any],
    rel: str,
    prompt_at: Span,
    schema_at: Span,
) -> list[Finding]:
    """A head pinning a released version (fine if it is that release) or one older than the latest."""
    latest = lock.latest
    assert latest is not None
    released = lock.get(pins.prompt_version)
    problems: list[tuple[str, Span, str]] = []
    if released is None:
        problems.append(
            ("PR005", prompt_at, f"prompt {pins.prompt_version} is older than the latest release {latest.version}")
        )
    else:
        if released.schema_version != pins.schema_version:
            problems.append(
                (
                    "PR003",
                    schema_at,
                    f"prompt {released.version} was released with schema {released.schema_version}, "
                    f"the head pins {pins.schema_text}",
                )
            )
        difference = snapshot_difference(head, renderer.root, lock, released.version)
        if difference is not None:
            problems.append(("PR003", prompt_at, f"prompt {released.version} is released, but {difference}"))
    if not problems:
        return []
    use = _smallest(renderer, contract, lock, pins, variables)
    return [_at(code, rel, span, f"{message}: use {use}") for code, span, message in problems]


def _smallest(
    renderer: Renderer, contract: Contract, lock: ReleaseLock, pins: Pins, variables: Mapping[str, Any]
) -> PromptVersion:
    """The smallest new prompt version the head's change against the latest release allows."""
    latest = lock.latest
    assert latest is not None
    comparison = prompt_comparison(renderer, contract, lock, pins.schema_version, variables)
    change = "patch" if comparison is None else comparison.change
    return smallest_passing(latest.version, change)


def _policy_cannot_read(root: Path, contract: Contract, pins: Pins) -> Finding | None:
    """PR007 on the contract's schema_floor when no parser built from the project can read the head's schema."""
    floor = contract.default_policy.schema_floor
    schema = pins.schema_version
    if schema.major > floor.major or (schema.major == floor.major and schema.minor >= floor.minor):
        return None
    source = f"{contract.directory}/{CONTRACT_FILE}"
    why = (
        f"major line {schema.major} is retired (older than the floor's line {floor.major})"
        if schema.major < floor.major
        else f"minor {schema.minor} is below the floor's"
    )
    try:
        config = (root / source).read_text(encoding="utf-8", errors="replace").split("\n")
    except OSError:
        config = []
    found = next((n for n, text in enumerate(config, start=1) if text.strip().startswith("schema_floor:")), None)
    span = FILE_START if found is None else _line_span(config, found)
    message = (
        f"policy.schema_floor {floor} cannot read the head's schema {pins.schema_text}: {why}; every answer "
        f"to this prompt would be rejected (incompatible_version)"
    )
    return _at("PR007", source, span, message)


def _artifact_finding(lock: ReleaseLock, kind: str, file: str, message: str) -> Finding | None:
    if kind == "unlocked":
        return None  # not a released artifact: ``release verify`` reports strays
    if kind == "missing":
        path = file.removeprefix(f"{lock.directory}/")
        return _at("PR004", lock.source, Span.point(lock.lines.get(path, 1)), f"{file}: {message}")
    return _at("PR004", file, FILE_START, f"released artifact modified in place: {message}")


def _at(code: str, file: str, span: Span, message: str) -> Finding:
    check = _BY_CODE[code]
    return Finding(check.code, check.name, check.level, file, span, message)


def _forcing(refusal: str) -> str:
    """The refusal's detail lines, folded into the one-line message."""
    details = [line.strip() for line in refusal.split("\n")[1:] if line.strip()]
    return f" ({'; '.join(details)})" if details else ""


def _pin_span(lines: list[str], name: str) -> Span:
    pattern = re.compile(rf"\bset\s+{name}\s*=\s*(\"[^\"]*\"|'[^']*')")
    for number, text in enumerate(lines, start=1):
        match = pattern.search(text)
        if match is not None:
            return Span(number, match.start(1) + 1, number, match.end(1) + 1)
    return FILE_START


def _line_span(lines: list[str], line: int) -> Span:
    text = lines[line - 1]
    start = len(text) - len(text.lstrip()) + 1
    return Span(line, start, line, max(len(text) + 1, start + 1))


__all__ = ["CHECK_RULES", "ReleaseCheck", "check_release"]
