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
import math
import random
import re
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import rstr

from promptops.core.contract import Contract
from promptops.core.shape import FieldRule, OutputShape
from promptops.rollout.assign import assign
from promptops.rollout.plan import Plan

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
    properties = shape.item.properties
    line_rule = properties.get(roles.line or "")
    line = _integer(rng, line_rule, 1, 400) if line_rule is not None else rng.randint(1, 400)
    for name, rule in properties.items():
        if name not in shape.item.required and rng.random() < 0.5:
            continue
        if name == roles.id:
            value: Any = _id(rng, rule, index)
        elif name == roles.path:
            value = rng.choice(changed)
        elif name == roles.line:
            value = line
        elif name == roles.end_line:
            start = line if line is not None else 1
            value = _integer(rng, rule, start, start + 8)
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
        if rule.format in _FORMATS:
            return _FORMATS[rule.format](rng)
        return _sized(text, rule)
    if "boolean" in kinds:
        return rng.random() < 0.5
    if "integer" in kinds:
        return _integer(rng, rule, 1, 51)
    if "number" in kinds:
        bottom = _first(rule.minimum, rule.exclusive_minimum, 0.0)
        top = _first(rule.maximum, rule.exclusive_maximum, bottom + 1.0)
        if rule.multiple_of:
            return _integer(rng, rule, math.ceil(bottom), math.floor(top))
        value = round(rng.uniform(bottom, top), 2)
        return value if _within(rule, value) else None
    if "array" in kinds:
        item = rule.items or FieldRule(name="item", types=frozenset({"string"}))
        return [_value(rng, item, changed, text) for _ in range(max(1, rule.min_items or 1))]
    return {}


def _id(rng: random.Random, rule: FieldRule, index: int) -> Any:
    """``F1``, ``F2``... unless the schema says otherwise: a number for an integer id, else a string its
    pattern accepts (``G7`` for ``^G[0-9]+$``), made distinct within the response by the index."""
    if "string" not in rule.types and rule.types - {"null"} <= {"integer", "number"} and rule.types:
        return _integer(rng, rule, index + 1, index + 1)
    plain = f"F{index + 1}"
    if rule.pattern is None or rule.pattern.search(plain):
        return plain
    for _ in range(20):  # a pattern-made id, then the index where the pattern lets a number stand
        made = _matching(rng, rule)
        if made is None:
            return None
        numbered = re.sub(r"[0-9]+", str(index + 1), made, count=1)
        if rule.pattern.search(numbered):
            return numbered
    return _matching(rng, rule)


def _integer(rng: random.Random, rule: FieldRule | None, low: float, high: float) -> int | None:
    """An integer in [low, high] moved inside the rule's bounds (and onto its multipleOf), else None."""
    if rule is not None:
        bottom = _first(rule.minimum, None if rule.exclusive_minimum is None else rule.exclusive_minimum + 1, None)
        top = _first(rule.maximum, None if rule.exclusive_maximum is None else rule.exclusive_maximum - 1, None)
        if bottom is not None:
            low, high = max(low, bottom), max(high, bottom)
        if top is not None:
            low, high = min(low, top), min(high, top)
    value = rng.randint(math.ceil(low), max(math.ceil(low), math.floor(high)))
    if rule is not None and rule.multiple_of:
        step = rule.multiple_of
        value = int(math.ceil(value / step) * step) if float(step).is_integer() else value
    return value if rule is None or _within(rule, value) else None


def _within(rule: FieldRule, value: float) -> bool:
    return (
        (rule.minimum is None or value >= rule.minimum)
        and (rule.maximum is None or value <= rule.maximum)
        and (rule.exclusive_minimum is None or value > rule.exclusive_minimum)
        and (rule.exclusive_maximum is None or value < rule.exclusive_maximum)
        and (not rule.multiple_of or float(value / rule.multiple_of).is_integer())
    )


def _first(*values: float | None) -> Any:
    return next((v for v in values if v is not None), None)


def _sized(text: str, rule: FieldRule) -> str:
    """Review prose cut to the rule's maxLength and padded to its minLength."""
    if rule.min_length and len(text) < rule.min_length:
        text = " ".join([text] * (rule.min_length // (len(text) + 1) + 1))
    if rule.max_length:
        text = text[: rule.max_length]
    return text.strip().ljust(len(text), ".")  # no space at either end: the parser would trim (and log) it


# Values of the common JSON Schema formats: the parser does not check them, but a rehearsal should look real.
_FORMATS: dict[str, Callable[[random.Random], str]] = {
    "uri": lambda rng: f"https://docs.example.com/{rng.choice(_NAMES)}/{rng.randrange(1000)}",
    "uri-reference": lambda rng: f"/{rng.choice(_NAMES)}/{rng.randrange(1000)}",
    "email": lambda rng: f"{rng.choice(_NAMES)}@example.com",
    "date": lambda rng: f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
    "date-time": lambda rng: f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:00:00Z",
    "uuid": lambda rng: str(uuid.UUID(int=rng.getrandbits(128), version=4)),
    "ipv4": lambda rng: f"192.0.2.{rng.randint(1, 254)}",
    "hostname": lambda rng: f"{rng.choice(_NAMES)}.example.com",
}


class _ShortRepeats(rstr.Rstr):
    """rstr's generator with ``*``, ``+`` and ``{n,}`` repeating at most 6 times past their minimum (rstr allows
    100): values a model would write, and short enough for a field's maxLength."""

    def _handle_repeat(self, start_range: int, end_range: int, value: str) -> str:
        return str(super()._handle_repeat(start_range, min(end_range, start_range + 6), value))


def _matching(rng: random.Random, rule: FieldRule) -> str | None:
    """A string the rule's pattern accepts (None when no short one turns up: the field is left out)."""
    assert rule.pattern is not None
    longest = min(rule.max_length or 40, 40)
    # rstr's own repeats first (a seed's records stay what they were), short ones when those never fit
    for generator in (rstr.Rstr(rng), _ShortRepeats(rng)):
        for _ in range(20):
            try:  # rstr reads the ECMA text with Python's parser; what it cannot read is left out like a miss
                candidate = generator.xeger(rule.pattern.source)
            except (re.error, ValueError, OverflowError):
                return None
            if rule.pattern.search(candidate) and (rule.min_length or 0) <= len(candidate) <= longest:
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
