"""The rule that holds a prompt's pinned versions to its contract and release lock (PO001); the field rules
(PO002-PO004) are in ``fields.py``."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TypeVar

from promptops.core.errors import VersionError
from promptops.core.findings import FILE_START, Finding, Span
from promptops.core.versioning import PromptVersion, SchemaVersion, prompt_accepted, schema_accepted
from promptops.lint.model import LintContext, Rule
from promptops.lint.subject import CONTRACT_KINDS, Kind, Subject, snapshot_version
from promptops.render.reading import contains_token
from promptops.render.renderer import PIN_NAMES, PinDeclaration, pin_declarations
from promptops.render.snapshots import snapshot_difference

_EXAMPLE = {"prompt_version": "1.0.0", "schema_version": "1.0"}
_V = TypeVar("_V", PromptVersion, SchemaVersion)


def _literal_span(subject: Subject, pin: PinDeclaration) -> Span:
    return subject.find_in_line(pin.line, rf"\b{pin.name}\s*=\s*(\"[^\"]*\"|'[^']*')", group=1)


class PinnedVersions(Rule):
    """The prompt_version and schema_version pins are missing, malformed, or do not match the contract.

    A template pins both versions once, at the top level, as string literals; the rendered prompt must
    contain each literal the model has to write back (as the ReviewResult contract's prompt rules require),
    that is, each version the contract's output declares (``versions.schema_field``,
    ``versions.prompt_field``). A contract whose output declares no versions gets them from the request
    (the caller passes the pins to the parser), so its prompt need not show them. The schema version needs a schema file
    (``versions/<contract>/schemas/X.Y.json``), and the contract's default parser must accept what the
    prompt makes the model write: the prompt version exactly as ``policy.prompt_version`` (any patch of it
    with ``allow_prompt_patch_drift``), the schema version in the major line of ``policy.schema_floor`` and
    not older than it. A snapshot ``versions/<contract>/prompts/X.Y.Z.j2`` must pin X.Y.Z, and, once a release
    lock exists, the schema it was released with.

    Once the contract has releases (``versions/<contract>/releases.yaml``), the head must pin the latest
    release or a newer version; a head pinning a released version must match that release byte for byte
    (the template and every partial it imports, against the snapshot and the partials frozen with it), so an
    unreleased edit cannot hide behind a released number; and ``policy.prompt_version`` may pin the head's
    version or any released one (the release the default parser serves while the head is ahead of it), as
    ``policy.schema_floor`` may stay at a released schema while the head targets a newer major.

    Fails (the contract pins prompt 1.0.0)::

        {% set prompt_version = "1.0.1" %}
        {% set schema_version = "1.0" %}
        prompt_version {{ prompt_version }}, schema_version {{ schema_version }}

    Passes::

        {% set prompt_version = "1.0.0" %}
        {% set schema_version = "1.0" %}
        prompt_version {{ prompt_version }}, schema_version {{ schema_version }}
    """

    code = "PO001"
    name = "pinned-versions"
    kinds = CONTRACT_KINDS

    def check(self, subject: Subject, context: LintContext) -> Iterator[Finding]:
        if subject.tree is None or subject.contract is None:
            return
        pins: dict[str, PinDeclaration] = {}
        declared = pin_declarations(subject.tree)
        for name in PIN_NAMES:
            found = [p for p in declared if p.name == name]
            if not found:
                # beside the other pin when there is one: the pins are declared together
                yield self.finding(
                    subject,
                    subject.line_span(declared[0].line) if declared else FILE_START,
                    f'no {name} pin: declare {{% set {name} = "{self._expected(subject, name)}" %}} at the top level',
                )
                continue
            for extra in found[1:]:
                yield self.finding(
                    subject,
                    subject.line_span(extra.line),
                    f"{name} is pinned twice (first on line {found[0].line})",
                )
            if found[0].value is None:
                yield self.finding(
                    subject,
                    subject.line_span(found[0].line),
                    f"{name} must be pinned to a quoted string literal",
                )
                continue
            pins[name] = found[0]
        problems: list[Finding] = []
        prompt = self._parse(subject, pins.get("prompt_version"), PromptVersion.parse, problems)
        schema = self._parse(subject, pins.get("schema_version"), SchemaVersion.parse, problems)
        yield from problems
        if prompt is not None and schema is not None:
            yield from self._against_contract(subject, context, pins, prompt, schema)
        if subject.render is not None:
            for name, pin in pins.items():
                if not _declared_in_output(subject, name):
                    continue
                if pin.value and not contains_token(subject.render.text, pin.value, words=True):
                    yield self.finding(
                        subject,
                        _literal_span(subject, pin),
                        f"{name} {pin.value} does not appear in the rendered prompt (render it with {{{{ {name} }}}})",
                    )

    def _expected(self, subject: Subject, name: str) -> str:
        assert subject.contract is not None
        policy = subject.contract.default_policy
        if name == "prompt_version":
            version = snapshot_version(subject) if subject.kind is Kind.SNAPSHOT else policy.prompt_version
            return str(version or _EXAMPLE[name])
        return str(policy.schema_floor)

    def _parse(
        self,
        subject: Subject,
        pin: PinDeclaration | None,
        parse: Callable[[str], _V],
        problems: list[Finding],
    ) -> _V | None:
        if pin is None or pin.value is None:
            return None
        try:
            return parse(pin.value)
        except VersionError as exc:
            problems.append(self.finding(subject, _literal_span(subject, pin), str(exc)))
            return None

    def _against_contract(
        self,
        subject: Subject,
        context: LintContext,
        pins: dict[str, PinDeclaration],
        prompt: PromptVersion,
        schema: SchemaVersion,
    ) -> Iterator[Finding]:
        contract = subject.contract
        assert contract is not None
        prompt_span = _literal_span(subject, pins["prompt_version"])
        schema_span = _literal_span(subject, pins["schema_version"])
        if schema not in contract.shapes:
            yield self.finding(
                subject,
                schema_span,
                f"schema_version {pins['schema_version'].value} has no "
                f"schema file {contract.directory}/schemas/{schema}.json",
            )
        released = context.released.get(contract.name, {})
        if subject.kind is Kind.SNAPSHOT:
            version = snapshot_version(subject)
            if version is not None and prompt != version:
                yield self.finding(
                    subject, prompt_span, f"the snapshot of release {version} pins prompt_version {prompt}"
                )
            lock_schema = released.get(version) if version is not None else None
            if lock_schema is not None and lock_schema != schema:
                yield self.finding(
                    subject,
                    schema_span,
                    f"release {version} was cut with schema_version {lock_schema}, not {schema}",
                )
            return
        policy = contract.default_policy
        source = f"{contract.directory}/contract.yaml"

        def accepts(version: PromptVersion) -> bool:
            return prompt_accepted(policy.prompt_version, version, allow_patch_drift=policy.allow_prompt_patch_drift)

        # With releases, the policy pins the release the default parser serves, which the head may be ahead of.
        if not accepts(prompt) and not any(accepts(v) for v in released):
            accepted = (
                f"any {policy.prompt_version.major}.{policy.prompt_version.minor}.x"
                if policy.allow_prompt_patch_drift
                else str(policy.prompt_version)
            )
            either = ", nor a released prompt" if released else ""
            yield self.finding(
                subject,
                prompt_span,
                f"prompt_version {pins['prompt_version'].value} is not what the contract's parser "
                f"accepts ({accepted}, policy.prompt_version in {source}{either})",
            )
        yield from self._against_lock(subject, context, prompt, prompt_span)
        # Likewise a released floor may still be served while the head prepares a newer schema major.
        served_floor = policy.schema_floor in set(released.values()) and schema > policy.schema_floor
        if not schema_accepted(policy.schema_floor, schema) and not served_floor:
            yield self.finding(
                subject,
                schema_span,
                f"schema_version {pins['schema_version'].value} is not accepted by the contract's "
                f"schema floor {policy.schema_floor} (policy.schema_floor in {source}: same major, "
                f"minor >= {policy.schema_floor.minor})",
            )
        lock_schema = released.get(prompt)
        if lock_schema is not None and lock_schema != schema:
            yield self.finding(
                subject,
                schema_span,
                f"prompt {prompt} was released with schema_version "
                f"{lock_schema}; retargeting the schema needs a new prompt_version",
            )

    def _against_lock(
        self, subject: Subject, context: LintContext, prompt: PromptVersion, span: Span
    ) -> Iterator[Finding]:
        """The head pins the latest release or a newer version, and a released version exactly as released."""
        assert subject.contract is not None
        released = context.released.get(subject.contract.name, {})
        lock = context.locks.get(subject.contract.name)
        where = f" ({lock.source})" if lock is not None and lock.exists else ""
        latest = max(released, default=None)
        if latest is not None and prompt < latest:
            yield self.finding(
                subject,
                span,
                f"prompt_version {prompt} is older than the latest release {latest}{where}: pin {latest} or a "
                "newer version",
            )
            return
        if lock is None or lock.get(prompt) is None or subject.root is None:
            return
        difference = snapshot_difference(subject.path, subject.root, lock, prompt)
        if difference is not None:
            yield self.finding(
                subject,
                span,
                f"prompt {prompt} is released, but {difference}: pin a new prompt_version to release the change",
            )


def _declared_in_output(subject: Subject, pin_name: str) -> bool:
    """Whether the contract's output carries this pinned version (so the model must be told to write it)."""
    assert subject.contract is not None
    fields = subject.contract.versions
    return (fields.prompt if pin_name == "prompt_version" else fields.schema) is not None
