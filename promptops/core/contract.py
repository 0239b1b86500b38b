"""Contracts: the versioned agreement between a prompt and the parser that reads its answers.

A contract lives in ``versions/<name>/``: ``contract.yaml`` (which field holds the findings, which fields play
the id/path/line roles, where the versions are declared, coercions, limits and the default parser policy) and
``schemas/X.Y.json``, one JSON Schema per schema version. ``load_contract`` reads and checks all of it; any
problem raises ContractError naming the file and the key.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, cast

import msgspec

from promptops import defaults
from promptops.core import specs, strict_yaml
from promptops.core.errors import ContractError, VersionError
from promptops.core.policy import Limits, ParserPolicy
from promptops.core.shape import OutputShape, check_nesting, check_patterns, compile_shape
from promptops.core.versioning import SchemaVersion

if TYPE_CHECKING:
    from promptops.core.schema_verdicts import SchemaVerdicts

VERSIONS_DIR = "versions"
CONTRACT_FILE = "contract.yaml"


_Name = Annotated[str, msgspec.Meta(min_length=1)]
T = TypeVar("T")


class FieldRoles(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Which finding fields carry the id, the repository path and the line range (``fields:``)."""

    id: _Name | None = None
    path: _Name | None = None
    line: _Name | None = None
    end_line: _Name | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The fields given a role."""
        return tuple(name for name in msgspec.structs.astuple(self) if name is not None)


class VersionFields(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Top-level fields where the output declares its versions; None when the request states them."""

    schema: _Name | None = msgspec.field(default=None, name="schema_field")
    prompt: _Name | None = msgspec.field(default=None, name="prompt_field")


class Coercions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """The safe scalar normalizations of the ReviewResult contract's coercion rules; each is logged when applied."""

    trim_strings: bool = True
    path_separators: bool = True
    numeric_lines: bool = True


@dataclass(frozen=True)
class Contract:
    name: str
    description: str
    items: str
    roles: FieldRoles
    versions: VersionFields
    null_means_absent: bool
    coercions: Coercions
    default_policy: ParserPolicy
    shapes: Mapping[SchemaVersion, OutputShape]
    schema_files: Mapping[SchemaVersion, str]  # repo-relative paths
    directory: str  # repo-relative; <promptops>/versions/<name> for a packaged contract
    extra: Mapping[str, Any] = field(default_factory=dict)  # contract-specific settings
    config_text: str = ""  # contract.yaml as written: the features read their sections from it (``read``)
    tier_name: str | None = None  # set on a tier of a contract (promptops.parsing.tiers)
    untiered: Contract | None = field(default=None, compare=False, repr=False)  # what a tier was made from
    _read: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def read(self, reader: Callable[[Contract, specs.Document], T]) -> T:
        """What ``reader`` makes of contract.yaml, once per contract and its tiers: how a feature reads and checks
        its own section (tiers, report_filter, merge) against the full schemas. A SpecError it raises becomes
        ContractError naming the file, line and key, as when the contract loaded."""
        base, source = self.untiered or self, f"{self.directory}/{CONTRACT_FILE}"
        if reader not in base._read:
            try:
                if CONTRACT_FILE not in base._read:  # parsed once for all the features
                    base._read[CONTRACT_FILE] = specs.parse_yaml(base.config_text, source, quoted_keys=True)
                base._read[reader] = reader(base, base._read[CONTRACT_FILE])
            except specs.SpecError as problem:
                raise ContractError(problem.source, problem.detail) from None
        return cast(T, base._read[reader])

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_read": {}}  # what was read is read again on demand (a Document holds a closure)

    @property
    def schema_versions(self) -> tuple[SchemaVersion, ...]:
        return tuple(sorted(self.shapes))

    @property
    def latest_schema(self) -> SchemaVersion:
        return max(self.shapes)

    def shape(self, version: SchemaVersion) -> OutputShape:
        return self.shapes[version]


class _PolicySpec(msgspec.Struct, forbid_unknown_fields=True):
    schema_floor: specs.SchemaText
    prompt_version: specs.PromptText
    allow_prompt_patch_drift: bool = False


class _ContractSpec(msgspec.Struct, forbid_unknown_fields=True):
    """contract.yaml; tiers, report_filter and merge are read by their features (``Contract.read``)."""

    contract: _Name
    items: _Name
    policy: _PolicySpec
    description: str = ""
    fields: FieldRoles = FieldRoles()
    versions: VersionFields = VersionFields()
    coercions: Coercions = Coercions()
    limits: Limits = Limits()
    null_means_absent: bool = False
    extra: dict[str, Any] = {}
    tiers: Any = None
    report_filter: Any = None
    merge: Any = None


def contracts_dir(root: Path) -> Path:
    return root / VERSIONS_DIR


# A contract name is one directory name: no separators, no "..", nothing hidden.
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def check_contract_name(name: str) -> str:
    """``name`` if it can name a contract directory, else ContractError (so ``../x`` never leaves versions/)."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise ContractError(
            f"{VERSIONS_DIR}/", f"{name!r} is not a contract name (letters, digits, '.', '_' and '-'; no paths)"
        )
    return name


def project_contracts(root: Path) -> list[str]:
    """Names of the contracts the project itself holds under ``root/versions``."""
    base = contracts_dir(root)
    if not base.is_dir():
        return []
    return sorted(p.name for p in base.iterdir() if _NAME.fullmatch(p.name) and os.path.lexists(p / CONTRACT_FILE))


def list_contracts(root: Path) -> list[str]:
    """Names of every contract a project can use: its own under ``root/versions`` and the packaged ones."""
    return sorted({*project_contracts(root), *defaults.builtin_contracts()})


def locate_contract(root: Path, name: str) -> tuple[Path, str]:
    """The directory of contract ``name`` and how outputs name it: the project's ``versions/<name>/`` when it
    holds a contract.yaml (the project's wins, even an unreadable one), else the packaged contract of that name.
    ContractError when neither exists, or when the project's directory leads outside ``versions/`` (a link)."""
    check_contract_name(name)
    own = contracts_dir(root) / name
    rel_dir = f"{VERSIONS_DIR}/{name}"
    if os.path.lexists(own / CONTRACT_FILE):  # the project's, even when broken: never silently the packaged one
        if not own.resolve().is_relative_to(contracts_dir(root).resolve()):
            raise ContractError(rel_dir, "leads outside versions/ (a link): refused")
        return own, rel_dir
    packaged = defaults.contracts_dir() / name
    if (packaged / CONTRACT_FILE).is_file():
        return packaged, defaults.display(packaged)
    known = ", ".join(list_contracts(root)) or "none"
    raise ContractError(f"{rel_dir}/{CONTRACT_FILE}", f"no such contract {name!r} (known: {known})")


def load_contract(
    root: Path, name: str, *, check_schemas: bool = True, verdicts: SchemaVerdicts | None = None
) -> Contract:
    """Load contract ``name`` of the project at ``root`` (its own, else the packaged one: locate_contract).

    ``check_schemas`` validates every schema against its JSON Schema metaschema (draft 7 unless ``$schema``
    says otherwise). Callers that only read field rules, such as the linter, may skip it to stay light.
    ``verdicts`` skips the check for a schema already found valid, and remembers new valid ones.
    """
    directory, rel_dir = locate_contract(root, name)
    config_path = directory / CONTRACT_FILE
    config_rel = f"{rel_dir}/{CONTRACT_FILE}"
    try:
        text = strict_yaml.read_text(config_path)
        document = specs.parse_yaml(text, config_rel, quoted_keys=True)
        if not isinstance(document.data, Mapping):
            raise specs.SpecError(config_rel, "must be a YAML mapping")
        spec = document.convert(_ContractSpec, parsers=specs.VERSIONS)
    except strict_yaml.YamlProblem as problem:
        raise ContractError(config_rel, str(problem)) from None
    except specs.SpecError as problem:
        raise ContractError(config_rel, problem.detail) from None
    if spec.contract != name:
        line = document.line(("contract",))
        raise ContractError(
            config_rel, f"line {line}: key 'contract' is {spec.contract!r} but the directory is {name!r}"
        )
    items, roles, versions = spec.items, spec.fields, spec.versions
    policy = ParserPolicy(
        schema_floor=spec.policy.schema_floor.version,
        prompt_version=spec.policy.prompt_version.version,
        allow_prompt_patch_drift=spec.policy.allow_prompt_patch_drift,
        limits=spec.limits,
    )

    shapes: dict[SchemaVersion, OutputShape] = {}
    files: dict[SchemaVersion, str] = {}
    schema_dir = directory / "schemas"
    for path in sorted(schema_dir.glob("*.json")) if schema_dir.is_dir() else []:
        rel = f"{rel_dir}/schemas/{path.name}"
        try:
            version = SchemaVersion.parse(path.stem)
        except VersionError:
            raise ContractError(rel, "schema files must be named X.Y.json after their schema version") from None
        schema = _read_json(path, rel)
        if check_schemas and (verdicts is None or not verdicts.known_valid(schema)):
            check_metaschema(schema, rel)
            if verdicts is not None:
                verdicts.remember_valid(schema)
        shape = compile_shape(schema, version, items, rel)
        _check_roles(shape, roles, versions, rel)
        shapes[version] = shape
        files[version] = rel
    if not shapes:
        raise ContractError(f"{rel_dir}/schemas", "no schema files (expected schemas/X.Y.json)")
    if policy.schema_floor not in shapes:
        raise ContractError(config_rel, f"policy.schema_floor {policy.schema_floor} has no schema file")
    return Contract(
        name=name,
        description=spec.description,
        items=items,
        roles=roles,
        versions=versions,
        null_means_absent=spec.null_means_absent,
        coercions=spec.coercions,
        default_policy=policy,
        shapes=shapes,
        schema_files=files,
        directory=rel_dir,
        extra=spec.extra,
        config_text=text,
    )


def check_metaschema(schema: Any, source: str) -> None:
    """Raise ContractError unless ``schema`` is valid under its metaschema."""
    if not isinstance(schema, Mapping):
        raise ContractError(source, "a schema must be a JSON object")
    check_nesting(schema, source)  # before the validator, which recurses once per level
    check_patterns(schema, source)
    from jsonschema import Draft7Validator, exceptions, validators

    cls = validators.validator_for(schema, default=Draft7Validator)
    errors = list(cls(cls.META_SCHEMA).iter_errors(schema))
    if errors:
        worst = exceptions.best_match(errors)
        where = "/".join(str(p) for p in worst.absolute_path) or "top level"
        raise ContractError(source, f"not a valid JSON Schema at {where}: {worst.message}")


def _check_roles(shape: OutputShape, roles: FieldRoles, versions: VersionFields, source: str) -> None:
    expected = {"id": {"string"}, "path": {"string"}, "line": {"integer", "number"}, "end_line": {"integer", "number"}}
    for role, allowed in expected.items():
        name = getattr(roles, role)
        if name is None:
            continue
        rule = shape.item.properties.get(name)
        if rule is None:
            raise ContractError(source, f"fields.{role} names {name!r}, which is not a finding property")
        if rule.types and not rule.types & allowed:
            raise ContractError(source, f"fields.{role} field {name!r} must allow type {' or '.join(sorted(allowed))}")
    for role, name in (("schema_field", versions.schema), ("prompt_field", versions.prompt)):
        if name is None:
            continue
        rule = shape.top.properties.get(name)
        if rule is None or name not in shape.top.required or rule.types != frozenset({"string"}):
            raise ContractError(source, f"versions.{role} {name!r} must be a required top-level string property")


def _read_json(path: Path, rel: str) -> Any:
    try:
        return json.loads(strict_yaml.read_text(path))
    except strict_yaml.YamlProblem as exc:
        raise ContractError(rel, str(exc)) from None
    except RecursionError:
        raise ContractError(rel, "invalid JSON: nested too deeply") from None
    except json.JSONDecodeError as exc:
        raise ContractError(rel, f"line {exc.lineno} column {exc.colno}: invalid JSON: {exc.msg}") from None
    except ValueError:  # what json raises besides: an integer past Python's 4,300-digit conversion limit
        raise ContractError(rel, "invalid JSON: a number of more than 4,300 digits") from None
