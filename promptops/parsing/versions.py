"""Version acceptance for one parser and the choice of schema to read a response with."""

from __future__ import annotations

from dataclasses import dataclass

from promptops.core.contract import Contract
from promptops.core.errors import PolicyError
from promptops.core.policy import ParserPolicy
from promptops.core.shape import OutputShape
from promptops.core.versioning import PromptVersion, SchemaVersion, prompt_accepted, schema_accepted


@dataclass(frozen=True)
class VersionVerdict:
    accepted: bool
    message: str = ""
    field: str | None = None  # which declaration was refused (schema or prompt field name)
    shape: OutputShape | None = None  # the schema to validate with
    tolerant: bool = False  # newer minor than any known schema: unknown properties are ignored


class VersionGate:
    """Decides whether declared versions are acceptable, and which known schema reads the response."""

    def __init__(self, contract: Contract, policy: ParserPolicy) -> None:
        if policy.schema_floor not in contract.shapes:
            known = ", ".join(str(v) for v in contract.schema_versions)
            raise PolicyError(
                f"contract {contract.name}: schema floor {policy.schema_floor} has no schema (known: {known})"
            )
        self._policy = policy
        self._line = sorted(v for v in contract.shapes if v.major == policy.schema_floor.major)
        self._shapes = contract.shapes
        self._schema_field = contract.versions.schema or "schema_version"
        self._prompt_field = contract.versions.prompt or "prompt_version"
        self._verdicts: dict[tuple[SchemaVersion, PromptVersion], VersionVerdict] = {}

    def judge(self, schema: SchemaVersion, prompt: PromptVersion) -> VersionVerdict:
        """The verdict on these declared versions (remembered: traffic repeats a handful of pairs)."""
        verdict = self._verdicts.get((schema, prompt))
        if verdict is None:
            if len(self._verdicts) > 4096:
                self._verdicts.clear()
            verdict = self._verdicts[(schema, prompt)] = self._judge(schema, prompt)
        return verdict

    def _judge(self, schema: SchemaVersion, prompt: PromptVersion) -> VersionVerdict:
        policy = self._policy
        if not schema_accepted(policy.schema_floor, schema):
            floor = policy.schema_floor
            why = (
                f"older than the parser's floor {floor}"
                if schema.major == floor.major
                else f"outside the parser's major line {floor.major} (floor {floor})"
            )
            return VersionVerdict(False, f"{self._schema_field} {schema} is {why}", self._schema_field)
        if not prompt_accepted(policy.prompt_version, prompt, allow_patch_drift=policy.allow_prompt_patch_drift):
            pinned = policy.prompt_version
            why = (
                f"is not a {pinned.major}.{pinned.minor}.x patch of the pinned {pinned}"
                if policy.allow_prompt_patch_drift
                else f"does not match the pinned {pinned} (patch drift not allowed)"
            )
            return VersionVerdict(False, f"{self._prompt_field} {prompt} {why}", self._prompt_field)
        readable = [v for v in self._line if v <= schema]
        version = readable[-1]  # the floor is known and <= schema, so this is never empty
        return VersionVerdict(True, shape=self._shapes[version], tolerant=version != schema)
