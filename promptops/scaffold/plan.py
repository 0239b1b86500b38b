"""Starting a project, a contract and a rollout: what ``init``, ``contract new`` and ``rollout new`` write.

Each planner returns the files it would write (``Write``) and writes nothing; the CLI applies them, never
replacing a file (an existing one is skipped, or appended to when the write says so). ``plan_contract``
proves its result before anyone writes it: the caller builds the files in a scratch copy and loads, renders
and lints them there (``check_contract``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from string import Template
from typing import Any

import yaml

from promptops import defaults
from promptops.core import strict_yaml
from promptops.core.contract import CONTRACT_FILE, VERSIONS_DIR, check_contract_name, check_metaschema, locate_contract
from promptops.core.errors import PromptopsError
from promptops.core.versioning import PromptVersion, SchemaVersion
from promptops.parsing.semantics import merge_semantics, propose_section
from promptops.render.renderer import TEMPLATES_DIR

ROLLOUT_DIR = "rollout"
GITATTRIBUTES_LINE = "versions/** -text"  # released files are compared byte for byte: no line-ending rewrites
GITIGNORE_LINE = ".promptops/"  # the diagnostics store and local state
PRE_COMMIT_SNIPPET = """repos:
  - repo: https://example.com/your-org/promptops  # where your team gets promptops
    rev: v{version}
    hooks:
      - id: promptops-lint
      - id: promptops-release-check
"""
# Names that make a field's role obvious, by role (compared case-insensitively, '_' and '-' ignored).
ROLE_NAMES: Mapping[str, tuple[str, ...]] = {
    "id": ("id", "findingid", "uid"),
    "path": ("file", "path", "filepath", "filename", "file_path"),
    "line": ("line", "linenumber", "startline", "linestart", "lineno"),
    "end_line": ("endline", "lineend", "endlinenumber"),
}
ROLE_TYPES: Mapping[str, frozenset[str]] = {
    "id": frozenset({"string"}),
    "path": frozenset({"string"}),
    "line": frozenset({"integer", "number"}),
    "end_line": frozenset({"integer", "number"}),
}
ROLE_FLAGS = {"items": "--items", "id": "--id", "path": "--path", "line": "--line", "end_line": "--end-line"}


_PIN = re.compile(r'({%-?\s*set\s+)(prompt_version|schema_version)(\s*=\s*)"[^"]*"')


class ScaffoldError(PromptopsError):
    """A scaffold that cannot be written as asked; says which flag or file to change."""


class NeedsChoice(ScaffoldError):
    """A role the schema leaves ambiguous: the caller asks, or names ``flag`` in its error."""

    def __init__(self, role: str, candidates: Sequence[str], message: str) -> None:
        self.role = role
        self.flag = ROLE_FLAGS[role]
        self.candidates = tuple(candidates)
        super().__init__(message)


@dataclass(frozen=True)
class Write:
    path: str  # repo-relative
    content: str
    mode: str = "create"  # create: a new file; append: add to the file's end; mkdir: a directory
    skipped: str | None = None  # why nothing is written (it exists already)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "action": "skip" if self.skipped else self.mode, "reason": self.skipped}


def _missing(root: Path, rel: str, content: str, mode: str = "create") -> Write:
    exists = (root / rel).exists() or (root / rel).is_symlink()
    return Write(rel, content, mode, "exists already" if exists else None)


def plan_init(root: Path, version: str) -> list[Write]:
    """The directories, the ``[tool.promptops]`` table and the git settings of a new promptops project."""
    writes = [_missing(root, d, "", "mkdir") for d in (VERSIONS_DIR, TEMPLATES_DIR, ROLLOUT_DIR)]
    writes.append(_pyproject(root))
    writes.append(_line_in(root, ".gitattributes", GITATTRIBUTES_LINE, "# promptops: released prompts and schemas"))
    writes.append(_line_in(root, ".gitignore", GITIGNORE_LINE, "# promptops: the local diagnostics store"))
    return writes


def _pyproject(root: Path) -> Write:
    import tomlkit  # only init edits TOML

    path = root / "pyproject.toml"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        document = tomlkit.parse(text)
    except tomlkit.exceptions.ParseError as exc:
        raise ScaffoldError(f"pyproject.toml: not valid TOML: {exc}") from None
    tool = document.get("tool")
    if tool is not None and "promptops" in tool:
        return Write("pyproject.toml", text, "update", "has a [tool.promptops] table already")
    table = tomlkit.table(is_super_table=False)
    table.add(tomlkit.comment("promptops settings; [tool.promptops.lint] configures `promptops lint`."))
    lint = tomlkit.table()
    lint.add(tomlkit.comment('select = ["PO001", ...] and per-file-ignores go here; the defaults apply as is.'))
    table.add("lint", lint)
    if tool is None:
        tool = tomlkit.table(is_super_table=True)
        document.add("tool", tool)
    tool.add("promptops", table)
    return Write("pyproject.toml", tomlkit.dumps(document), "update" if path.exists() else "create")


def _line_in(root: Path, rel: str, line: str, comment: str) -> Write:
    path = root / rel
    if not path.exists():
        return Write(rel, f"{comment}\n{line}\n")
    text = path.read_text(encoding="utf-8", errors="replace")
    if line in (row.strip() for row in text.splitlines()):
        return Write(rel, "", "append", f"holds {line!r} already")
    return Write(rel, ("" if text.endswith("\n") or not text else "\n") + f"{comment}\n{line}\n", "append")


@dataclass(frozen=True)
class ContractRequest:
    name: str
    schema: Mapping[str, Any] | None  # None with ``start_from``: the built-in contract's own schema
    schema_version: str | None = None  # default: 1.0, or the built-in's latest with ``start_from``
    prompt_version: str = "1.0.0"
    items: str | None = None
    roles: Mapping[str, str | None] = ()  # type: ignore[assignment]  # role -> field given by a flag
    start_from: str | None = None  # a built-in contract to start from
    description: str = ""


def plan_contract(root: Path, request: ContractRequest) -> list[Write]:
    """``versions/NAME/contract.yaml``, ``versions/NAME/schemas/X.Y.json`` and ``templates/NAME.j2``.

    Raises NeedsChoice when a role is ambiguous (several fields could play it), ScaffoldError when the
    contract exists or the schema cannot be a contract's.
    """
    name = check_contract_name(request.name)
    try:
        version = SchemaVersion.parse(request.schema_version or _builtin_version(request.start_from))
        PromptVersion.parse(request.prompt_version)
    except PromptopsError as exc:
        raise ScaffoldError(str(exc)) from None
    rel_dir = f"{VERSIONS_DIR}/{name}"
    if (root / rel_dir).exists():
        raise ScaffoldError(f"{rel_dir}/ exists already: pick another name (nothing is ever overwritten)")
    head = f"{TEMPLATES_DIR}/{name}.j2"
    if (root / head).exists():
        raise ScaffoldError(f"{head} exists already: move it away or pick another name")
    if request.start_from is not None:
        config, schema = _builtin(request.start_from)
        config["contract"] = name
    else:
        if request.schema is None:
            raise ScaffoldError("--schema FILE.json is required (or --from a built-in contract)")
        schema = dict(request.schema)
        config = _config(name, schema, request)
    check_metaschema(schema, f"{rel_dir}/schemas/{version}.json")
    policy = dict(config.get("policy") or {})
    config["policy"] = {
        "schema_floor": str(version),
        "prompt_version": request.prompt_version,
        **{k: v for k, v in policy.items() if k not in ("schema_floor", "prompt_version")},
    }
    if request.start_from is not None:  # the built-in's own head, pinned to the new versions
        head_source = (defaults.heads_dir() / f"{request.start_from}.j2").read_text(encoding="utf-8")
        head_source = _PIN.sub(lambda m: f'{m[1]}{m[2]}{m[3]}"${m[2]}"', head_source.replace("$", "$$"))
    else:
        head_source = (defaults.location() / "scaffold" / "head.j2.in").read_text(encoding="utf-8")
    head_text = Template(head_source)
    return [
        Write(f"{rel_dir}/{CONTRACT_FILE}", _contract_yaml(config)),
        Write(f"{rel_dir}/schemas/{version}.json", json.dumps(schema, indent=2, ensure_ascii=False) + "\n"),
        Write(
            head,
            head_text.substitute(name=name, prompt_version=request.prompt_version, schema_version=str(version)),
        ),
    ]


def _builtin_version(start_from: str | None) -> str:
    directory = defaults.contracts_dir() / (start_from or "")
    if start_from is None or not (directory / "schemas").is_dir():
        return "1.0"
    return str(max(SchemaVersion.parse(p.stem) for p in (directory / "schemas").glob("*.json")))


def _builtin(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    if name not in defaults.builtin_contracts():
        known = ", ".join(defaults.builtin_contracts())
        raise ScaffoldError(f"--from: no built-in contract {name!r} (built in: {known})")
    directory = defaults.contracts_dir() / name
    config = strict_yaml.load(directory / CONTRACT_FILE)  # read as a project's own contract.yaml is
    latest = max((directory / "schemas").glob("*.json"), key=lambda p: SchemaVersion.parse(p.stem))
    return dict(config), json.loads(latest.read_text(encoding="utf-8"))


def _config(name: str, schema: Mapping[str, Any], request: ContractRequest) -> dict[str, Any]:
    """contract.yaml for ``schema``: the findings array and the roles, inferred or as the flags give them."""
    if schema.get("type", "object") != "object" or not isinstance(schema.get("properties"), Mapping):
        raise ScaffoldError("--schema: the schema must describe a JSON object with properties (the response)")
    props: Mapping[str, Any] = schema["properties"]
    arrays = [
        key
        for key, value in props.items()
        if isinstance(value, Mapping) and value.get("type") == "array" and _is_object(value.get("items"))
    ]
    items = request.items
    if items is None:
        if len(arrays) != 1:
            listed = ", ".join(arrays) or "none"
            raise NeedsChoice(
                "items", arrays, f"--items: name the array that holds the findings (arrays of objects: {listed})"
            )
        items = arrays[0]
    elif items not in arrays:
        raise ScaffoldError(
            f"--items: {items!r} is not a top-level array of objects (arrays of objects: {', '.join(arrays) or 'none'})"
        )
    item = props[items]["items"]
    item_props: Mapping[str, Any] = item.get("properties") or {}
    given = dict(request.roles or {})
    fields: dict[str, str] = {}
    for role in ("id", "path", "line", "end_line"):
        field = given.get(role)
        if field is not None:
            if field not in item_props:
                raise ScaffoldError(f"{ROLE_FLAGS[role]}: {field!r} is not a property of each {items} item")
            fields[role] = field
            continue
        candidates = _candidates(role, item_props)
        if len(candidates) > 1:
            what = f"several fields could be the finding's {role.replace('_', ' ')} ({', '.join(candidates)})"
            raise NeedsChoice(role, candidates, f"{ROLE_FLAGS[role]}: {what}: name one")
        if candidates:
            fields[role] = candidates[0]
    top_required = set(schema.get("required") or ())
    versions = {
        key: field
        for key, field in (("schema_field", "schema_version"), ("prompt_field", "prompt_version"))
        if field in top_required and isinstance(props.get(field), Mapping) and props[field].get("type") == "string"
    }
    config: dict[str, Any] = {
        "contract": name,
        "description": request.description or f"Findings in {items} (written by promptops contract new).",
        "items": items,
        "fields": fields,
        "versions": versions,
        "null_means_absent": False,
    }
    merge = propose_section(item_props, roles=fields.values())
    if merge:
        config["merge"] = merge
    config["policy"] = {"allow_prompt_patch_drift": False}
    return config


def _is_object(value: Any) -> bool:
    return isinstance(value, Mapping) and (value.get("type") == "object" or "properties" in value)


def _candidates(role: str, props: Mapping[str, Any]) -> list[str]:
    wanted = {n.replace("_", "") for n in ROLE_NAMES[role]}
    out = []
    for key, value in props.items():
        named = key.lower().replace("_", "").replace("-", "") in wanted
        if role == "id":  # vuln_id, findingId: an id by its suffix
            named = named or key.lower().endswith(("_id", "-id")) or key.endswith("Id")
        if not named or not isinstance(value, Mapping):
            continue
        types = value.get("type")
        types = {types} if isinstance(types, str) else set(types or ())
        if not types or types & ROLE_TYPES[role]:
            out.append(key)
    return out


def _contract_yaml(config: Mapping[str, Any]) -> str:
    head = "# Written by `promptops contract new`; the keys are documented in docs/getting-started.md.\n"
    return head + yaml.safe_dump(dict(config), sort_keys=False, allow_unicode=True, width=110)


def check_contract(
    scratch: Path, name: str, lint: Callable[[Path, Sequence[Path]], Sequence[str]], render: Callable[[Path, str], str]
) -> None:
    """Prove a scaffolded contract in ``scratch`` (a copy holding only what ``plan_contract`` wrote): it loads
    with its schemas checked, its head lints clean and renders. ``lint`` returns error lines."""
    from promptops.core.contract import load_contract

    merge_semantics(load_contract(scratch, name))  # the section plan_contract proposed reads clean
    problems = lint(scratch, [scratch / TEMPLATES_DIR / f"{name}.j2"])
    if problems:
        raise ScaffoldError(f"the scaffolded head does not lint clean: {problems[0]}")
    render(scratch, name)


def latest_release(root: Path, contract: str) -> tuple[str, str] | None:
    """(prompt_version, schema_version) of the latest release in the contract's lock, if any."""
    from promptops.core.lock import load_lock

    lock = load_lock(root, contract)
    latest = lock.latest if lock.exists else None
    return None if latest is None else (str(latest.version), str(latest.schema_version))


def plan_rollout(root: Path, contract: str, head: tuple[str, str] | None, rollout_id: str | None) -> Write:
    """A staged rollout plan: the candidate is the head's pins ``head`` (released), the baseline the latest
    release before it. Refuses, saying what to cut first, when either is missing."""
    locate_contract(root, contract)
    if latest_release(root, contract) is None:
        raise ScaffoldError(
            f"{contract}: no release yet: cut the first one (`promptops release cut --contract {contract}`); a "
            f"rollout needs a released baseline"
        )
    if head is None:
        raise ScaffoldError(f"{TEMPLATES_DIR}/{contract}.j2: no head template: the candidate is the head's pins")
    from promptops.core.lock import load_lock

    prompt, schema = head
    lock = load_lock(root, contract)
    version = PromptVersion.parse(prompt)
    if lock.get(version) is None:
        raise ScaffoldError(
            f"{contract}: the head's prompt {prompt} is not released: cut it first "
            f"(`promptops release cut --contract {contract}`); the gate serves released prompts only"
        )
    older = [r for r in lock.releases if r.version < version]
    if not older:
        raise ScaffoldError(
            f"{contract}: prompt {prompt} is the first release: a rollout compares a newer release with it; "
            f"change the head, pin a newer prompt_version and cut that"
        )
    base = max(older, key=lambda r: r.version)
    base_prompt, base_schema = str(base.version), str(base.schema_version)
    rid = rollout_id or f"{contract}-{prompt}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}", rid):
        raise ScaffoldError(f"--id: {rid!r} is not a rollout id (letters, digits, '.', '_' and '-')")
    rel = f"{ROLLOUT_DIR}/{contract}/{rid}.yaml"
    # A new schema must be readable before any unit gets it: the parser stage (weight 0) checks the lock and
    # the candidate's policy first. A prompt-only change keeps the schema the parser already reads.
    parser_step = PARSER_STEP.substitute(schema=schema) if schema != base_schema else ""
    text = ROLLOUT_TEMPLATE.substitute(
        parser_step=parser_step,
        rid=rid,
        contract=contract,
        base_prompt=base_prompt,
        base_schema=base_schema,
        cand_prompt=prompt,
        cand_schema=schema,
    )
    return _missing(root, rel, text)


PARSER_STEP = Template("  - {name: parser, weight: 0}      # no traffic until the parser reads schema $schema\n")
ROLLOUT_TEMPLATE = Template(
    """# Staged rollout of $contract prompt $cand_prompt (schema $cand_schema),
# replacing $base_prompt (schema $base_schema). Written by `promptops rollout new`; drive it with
# `promptops rollout gate|promote|status`. Every transition is appended
# to `history`, so each promotion is reviewed in git.
rollout: $rid
contract: $contract
baseline: {prompt_version: "$base_prompt", schema_version: "$base_schema"}
candidate: {prompt_version: "$cand_prompt", schema_version: "$cand_schema"}
unit: pr          # a pull request keeps its arm across re-reviews
salt: $rid
alpha: 0.05
legacy_window: 14d
steps:
${parser_step}  - {name: canary, weight: 0.05, min_responses: 500, min_duration: 24h}
  - {name: ramp, weight: 0.25, min_responses: 2000, min_duration: 24h}
  - {name: full, weight: 1.0}
slos:
  dropped_finding: {slo: 0.03, margin: 0.02, severity: critical}
  incompatible_version: {slo: 0.01, severity: critical}
  coercion: {slo: 0.08, severity: warning}
  rejected: {slo: 0.02, severity: critical}              # answers the parser rejects keep no finding
  all_findings_dropped: {slo: 0.02, severity: critical}  # answers that lose every finding
"""
)
