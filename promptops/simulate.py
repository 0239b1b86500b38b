"""A simulator of reviewer traffic for a rollout: response log records (docs/store.md) as a model would produce them.

Findings are generated from the contract's schema, so any contract works: enum fields get one of their values,
the path field one of the changed files, line fields plausible lines, other strings short review prose. Each
response belongs to a unit (``org/repo#PR``); its arm comes from the plan's real assignment, and it declares the
versions of that arm. Every arm has an ``ArmProfile`` of defect rates, each the share of responses with that
defect (a response has at most one):

- ``drop``: one finding the parser must drop (an enum value in the wrong case, a file outside the diff, line 0,
  a missing required field, an unknown field);
- ``coercion``: one value the parser coerces and logs (a line as a string, padded text, a backslash path);
- ``wrapper``: the JSON inside a markdown fence with prose, or after a ``<think>`` block;
- ``truncation``: the text cut off inside the last finding (max_tokens);
- ``incompatible``: a schema version from another major line;
- ``malformed``: not JSON at all (a trailing comma).

Everything is drawn from one seeded ``random.Random``: the same arguments give the same records.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import rstr

from promptops.contract import Contract
from promptops.rollout.assign import assign
from promptops.rollout.plan import Plan
from promptops.shape import FieldRule, OutputShape

_DIRS = ("src/api", "src/auth", "src/db", "lib/util", "services/billing", "web/components")
_NAMES = ("users", "login", "session", "pool", "cache", "handlers", "models", "routes", "invoice", "retry")
_EXTS = (".py", ".ts", ".go")
_WORDS = (
    "The value may be None when the cache misses and is dereferenced below",
    "User input reaches the query string without a bound parameter",
    "The retry loop has no upper bound and hides a persistent failure",
    "A token is logged at info level and can be replayed",
    "Pagination skips the first row of every page after the first",
    "Two requests can both miss the cache and write stale data",
)


@dataclass(frozen=True)
class ArmProfile:
    """Shares of responses with each kind of defect (see the module docstring)."""

    drop: float = 0.01
    coercion: float = 0.04
    wrapper: float = 0.03
    truncation: float = 0.005
    incompatible: float = 0.0
    malformed: float = 0.002
    findings_mean: float = 4.0  # findings per response, 0 to 12


BASELINE = ArmProfile()
CANDIDATE = ArmProfile(drop=0.008, coercion=0.03)
REGRESSION = ArmProfile(drop=0.12, coercion=0.10, wrapper=0.06)


def simulate(
    plan: Plan,
    contract: Contract,
    *,
    responses: int,
    start: datetime,
    end: datetime,
    seed: int,
    profiles: dict[str, ArmProfile] | None = None,
    weight: float | None = None,
    units: int | None = None,
    id_prefix: str = "sim",
) -> Iterator[dict[str, Any]]:
    """``responses`` log records with times in [start, end), for the plan's current weight (or ``weight``)."""
    rng = random.Random(seed)
    profiles = profiles or {"baseline": BASELINE, "candidate": CANDIDATE}
    pool = max(1, units if units is not None else responses // 3)
    span = (end - start).total_seconds()
    for index in range(responses):
        unit = f"acme/{rng.choice(_NAMES)}#{rng.randrange(pool)}"
        chosen = assign(plan, unit, weight)
        versions = chosen.versions
        changed = sorted(
            {f"{rng.choice(_DIRS)}/{rng.choice(_NAMES)}{rng.choice(_EXTS)}" for _ in range(rng.randint(2, 6))}
        )
        shape = (
            contract.shape(versions.schema_version)
            if versions.schema_version in contract.shapes
            else contract.shape(contract.latest_schema)
        )
        raw = _response(
            rng,
            contract,
            shape,
            str(versions.schema_version),
            str(versions.prompt_version),
            changed,
            profiles.get(chosen.arm, BASELINE),
        )
        record: dict[str, Any] = {
            "response_id": f"{id_prefix}-{seed}-{index}",
            "ts": (start + timedelta(seconds=rng.random() * span)).isoformat(),
            "contract": contract.name,
            "rollout_id": plan.rollout_id,
            "arm": chosen.arm,
            "unit": unit,
            "changed_files": changed,
            "raw": raw,
            "model": rng.choice(("model-a", "model-b")),
            "latency_ms": round(rng.uniform(400, 4000), 1),
            "tokens": rng.randint(300, 3000),
        }
        yield record


def _response(
    rng: random.Random,
    contract: Contract,
    shape: OutputShape,
    schema_version: str,
    prompt_version: str,
    changed: list[str],
    profile: ArmProfile,
) -> str:
    count = min(12, max(0, round(rng.gauss(profile.findings_mean, 2))))
    findings = [_finding(rng, contract, shape, changed, i) for i in range(count)]
    body: dict[str, Any] = {}
    for name, rule in shape.top.properties.items():
        if name == contract.items:
            body[name] = findings
        elif name == contract.versions.schema:
            body[name] = schema_version
        elif name == contract.versions.prompt:
            body[name] = prompt_version
        elif name in shape.top.required or rng.random() < 0.7:
            value = _value(rng, rule, changed, f"{len(findings)} findings in {len(changed)} files")
            if value is not None:
                body[name] = value
    roll = rng.random()
    kind = None
    for name in ("drop", "coercion", "wrapper", "truncation", "incompatible", "malformed"):
        share = getattr(profile, name)
        if roll < share:
            kind = name
            break
        roll -= share
    if kind in ("drop", "coercion", "truncation") and not findings:
        findings.append(_finding(rng, contract, shape, changed, 0))
    if kind == "drop":
        _break(rng, contract, shape, findings[-1])
    elif kind == "coercion":
        _blur(rng, contract, shape, findings[-1])
    elif kind == "incompatible" and contract.versions.schema in body:
        body[contract.versions.schema] = "9.0"
    text = json.dumps(body, indent=2 if rng.random() < 0.5 else None)
    if kind == "wrapper":
        text = rng.choice(("Here is my review:\n```json\n{}\n```\n", "<think>Checking the diff.</think>\n{}")).format(
            text
        )
    elif kind == "truncation":
        text = text[: max(1, len(text) - rng.randint(20, 60))]
    elif kind == "malformed":
        text = text.rstrip()[:-1] + ",}"
    return text


def _finding(
    rng: random.Random, contract: Contract, shape: OutputShape, changed: list[str], index: int
) -> dict[str, Any]:
    roles = contract.roles
    finding: dict[str, Any] = {}
    line = rng.randint(1, 400)
    for name, rule in shape.item.properties.items():
        if name not in shape.item.required and rng.random() < 0.5:
            continue
        if name == roles.id:
            finding[name] = f"F{index + 1}"
        elif name == roles.path:
            finding[name] = rng.choice(changed)
        elif name == roles.line:
            finding[name] = line
        elif name == roles.end_line:
            finding[name] = line + rng.randint(0, 8)
        else:
            value = _value(rng, rule, changed, rng.choice(_WORDS))
            if value is not None:
                finding[name] = value
    return finding


def _value(rng: random.Random, rule: FieldRule, changed: list[str], text: str) -> Any:
    """A value the rule accepts; None when the simulator cannot make one (the field is left out)."""
    if rule.enum:
        return rng.choice(rule.enum)
    kinds = rule.types - {"null"}
    if "string" in kinds or not kinds:
        if rule.pattern is not None:
            return _matching(rng, rule)
        return text[: rule.max_length] if rule.max_length else text
    if "boolean" in kinds:
        return rng.random() < 0.5
    if "integer" in kinds:
        low = int(rule.minimum) if rule.minimum is not None else 1
        return rng.randint(low, low + 50)
    if "number" in kinds:
        bottom = float(rule.minimum) if rule.minimum is not None else 0.0
        top = float(rule.maximum) if rule.maximum is not None else bottom + 1.0
        return round(rng.uniform(bottom, top), 2)
    if "array" in kinds:
        item = rule.items or FieldRule(name="item", types=frozenset({"string"}))
        return [_value(rng, item, changed, text) for _ in range(max(1, rule.min_items or 1))]
    return {}


def _matching(rng: random.Random, rule: FieldRule) -> str | None:
    """A string the rule's pattern accepts (None when no short one turns up: the field is left out)."""
    assert rule.pattern is not None
    generator = rstr.Rstr(rng)
    for _ in range(20):
        try:  # rstr reads the ECMA text with Python's parser; what it cannot read is left out like a miss
            candidate = generator.xeger(rule.pattern.source)
        except (re.error, ValueError, OverflowError):
            return None
        if rule.pattern.search(candidate) and len(candidate) <= min(rule.max_length or 40, 40):
            return candidate
    return None


def _break(rng: random.Random, contract: Contract, shape: OutputShape, finding: dict[str, Any]) -> None:
    """One defect that makes the parser drop the finding."""
    roles = contract.roles
    options = [] if shape.item.additional else ["unknown"]
    if roles.path in finding:
        options.append("outside")
    if roles.line in finding:
        options.append("line")
    enums = [
        n
        for n, r in shape.item.properties.items()
        if r.enum and isinstance(finding.get(n), str) and finding[n].swapcase() not in r.enum
    ]
    if enums:
        options.append("enum")
    optional_required = [n for n in shape.item.required if n in finding and n not in (roles.id, roles.path)]
    if optional_required:
        options.append("missing")
    if not options:
        return
    choice = rng.choice(options)
    if choice == "outside":
        finding[roles.path or ""] = "docs/unrelated.md"
    elif choice == "line":
        finding[roles.line or ""] = 0
    elif choice == "enum":
        name = rng.choice(enums)
        finding[name] = finding[name].swapcase()
    elif choice == "missing":
        del finding[rng.choice(optional_required)]
    else:
        finding["fix_hint"] = "use a guard clause"


def _blur(rng: random.Random, contract: Contract, shape: OutputShape, finding: dict[str, Any]) -> None:
    """One safe, logged coercion."""
    roles = contract.roles
    if roles.line in finding and rng.random() < 0.5:
        finding[roles.line or ""] = str(finding[roles.line or ""])
    elif roles.path in finding and rng.random() < 0.5:
        finding[roles.path or ""] = str(finding[roles.path or ""]).replace("/", "\\")
    else:
        text_fields = [
            n for n, r in shape.item.properties.items() if "string" in r.types and not r.enum and n in finding
        ]
        if text_fields:
            name = rng.choice(text_fields)
            finding[name] = f"  {finding[name]} "
