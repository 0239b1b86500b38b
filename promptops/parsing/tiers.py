"""Return tiers: named views of a contract whose finding schema leaves some fields out.

The code-review-findings contract splits its finding fields in two tiers: the *detail* tier is the full schema (the
artifact written to disk), the *merge* tier is the compact return to an orchestrator, which omits ``why_it_matters``
and ``evidence``. A contract declares its tiers in ``contract.yaml`` as derivations of its schemas::

    tiers:
      detail: {}                                  # the full schema
      merge: {omit: [why_it_matters, evidence]}   # the full schema minus these finding properties

A tier's shape is the schema's shape with each omitted finding property removed from ``properties`` and from
``required``; nothing else changes (top level, enums, bounds, ``additionalProperties``). So a compact return
that still carries an omitted field is read like any undeclared member: kept as is when the finding object is
open (code-review-findings' is), dropped as ``unknown_field`` when it is closed. Role fields (id, path, line, end_line)
cannot be omitted: the parser relies on them. ``tier(contract, name)`` is the contract seen through a tier;
``tiers(contract)`` reads and checks the section (ContractError naming the file, line and key).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

import msgspec

from promptops.core import specs
from promptops.core.contract import Contract
from promptops.core.errors import ContractError, PolicyError
from promptops.core.shape import ObjectShape, OutputShape


class Tier(NamedTuple):
    name: str
    omit: tuple[str, ...] = ()  # finding properties this tier leaves out
    description: str = ""


class _TierSpec(msgspec.Struct, forbid_unknown_fields=True):
    omit: list[str] | str = []  # one name may be written without a list
    description: str = ""


def tiers(contract: Contract) -> Mapping[str, Tier]:
    """The contract's tiers: tier name -> ``{omit: [...], description: ...}`` (none when it declares none)."""
    return contract.read(_read)


def tier(contract: Contract, name: str) -> Contract:
    """``contract`` seen through tier ``name``: same policy and roles, shapes derived by the tier."""
    spec = tiers(contract).get(name)
    if spec is None:
        known = ", ".join(tiers(contract)) or "none"
        raise PolicyError(f"contract {contract.name} has no tier {name!r} (tiers: {known})")
    base = contract.untiered or contract
    shapes = {version: derive_shape(shape, spec) for version, shape in base.shapes.items()}
    return replace(base, shapes=shapes, tier_name=name, untiered=base)


def _read(contract: Contract, document: specs.Document) -> dict[str, Tier]:
    names = document.convert(dict[str, Any], ("tiers",)) if document.data.get("tiers") else {}
    read = {str(name): document.convert(_TierSpec, ("tiers", name)) for name in names}
    found = {
        name: Tier(name, (t.omit,) if isinstance(t.omit, str) else tuple(t.omit), t.description)
        for name, t in read.items()
    }
    for version, shape in sorted(contract.shapes.items()):
        _check(found, shape, set(contract.roles.names), contract.schema_files[version])
    return found


def _check(found: Mapping[str, Tier], shape: OutputShape, role_fields: set[str], source: str) -> None:
    """Raise ContractError when a tier omits something that is not a finding property, or a role field."""
    for each in found.values():
        for name in each.omit:
            where = f"tiers.{each.name}.omit"
            if name not in shape.item.properties:
                raise ContractError(source, f"{where} names {name!r}, which is not a finding property")
            if name in role_fields:
                raise ContractError(source, f"{where} names {name!r}, a role field the parser needs")


def derive_shape(shape: OutputShape, tier: Tier) -> OutputShape:
    """``shape`` seen through ``tier``: the omitted finding properties removed (the raw schema likewise)."""
    if not tier.omit:
        return shape
    omitted = set(tier.omit)
    item = ObjectShape(
        properties={k: v for k, v in shape.item.properties.items() if k not in omitted},
        required=tuple(k for k in shape.item.required if k not in omitted),
        additional=shape.item.additional,
    )
    return replace(shape, item=item, schema=_derive_schema(shape.schema, shape.items_field, omitted))


def _derive_schema(schema: Mapping[str, Any], items_field: str, omitted: set[str]) -> Mapping[str, Any]:
    """The raw schema with the omitted properties removed from the inline finding schema.

    A finding schema behind ``$ref`` is left as written: the compiled shape (what the parser, renderer and
    linter read) is derived either way, and only tools reading the raw document would see the difference.
    """
    derived = copy.deepcopy(dict(schema))
    item = derived.get("properties", {}).get(items_field, {}).get("items")
    if isinstance(item, dict) and "$ref" not in item:
        item["properties"] = {k: v for k, v in item.get("properties", {}).items() if k not in omitted}
        if "required" in item:
            item["required"] = [k for k in item["required"] if k not in omitted]
    return derived
