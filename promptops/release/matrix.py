"""The compatibility matrix of a contract: which parser floors accept which released prompt/schema pairs.

Rows are parser floors: one per released schema version P, standing for a parser configured with
``schema_floor: P`` that knows the schemas released up to P. Columns are the releases (prompt version and
the schema R it targets). A cell applies version acceptance (R accepted iff R.major == P.major and
R.minor >= P.minor) and says how the parser reads the response:

- ``exact``: R is P;
- ``tolerant``: R is a newer minor the parser does not know; it reads it with P, ignoring unknown
  properties, which is safe exactly when the change P -> R is at most minor (the ``change`` column, computed
  by ``classify``);
- ``rejected``: an older minor or another major (``incompatible_version``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from promptops.compat import classify
from promptops.core.lock import Release, ReleaseLock
from promptops.core.versioning import SchemaVersion, schema_accepted


@dataclass(frozen=True)
class Cell:
    floor: SchemaVersion
    release: Release
    accepted: bool
    reading: str  # exact | tolerant | rejected
    change: str | None  # class of floor schema -> release schema (None when rejected)

    def to_dict(self) -> dict[str, Any]:
        return {
            "floor": str(self.floor),
            "prompt_version": str(self.release.version),
            "schema_version": str(self.release.schema_version),
            "accepted": self.accepted,
            "reading": self.reading,
            "change": self.change,
        }


@dataclass(frozen=True)
class Matrix:
    contract: str
    floors: tuple[SchemaVersion, ...]
    releases: tuple[Release, ...]
    cells: tuple[Cell, ...]  # floor-major order
    policy_floor: SchemaVersion  # the contract's default parser floor (contract.yaml)

    def cell(self, floor: SchemaVersion, release: Release) -> Cell:
        return next(c for c in self.cells if c.floor == floor and c.release is release)

    def to_dict(self) -> dict[str, Any]:
        return {
            "contract": self.contract,
            "policy_floor": str(self.policy_floor),
            "floors": [str(f) for f in self.floors],
            "releases": [
                {
                    "prompt_version": str(r.version),
                    "schema_version": str(r.schema_version),
                    "class": r.prompt_class,
                    "schema_class": r.schema_class,
                    "status": r.status,
                }
                for r in self.releases
            ],
            "cells": [c.to_dict() for c in self.cells],
        }


def compat_matrix(
    lock: ReleaseLock, schemas: Mapping[SchemaVersion, Mapping[str, Any]], policy_floor: SchemaVersion
) -> Matrix:
    """Build the matrix of ``lock``'s releases; ``schemas`` holds (at least) every released schema."""
    floors = tuple(sorted({r.schema_version for r in lock.releases}))
    changes: dict[tuple[SchemaVersion, SchemaVersion], str] = {}
    cells: list[Cell] = []
    for floor in floors:
        for release in lock.releases:
            target = release.schema_version
            if not schema_accepted(floor, target):
                cells.append(Cell(floor, release, False, "rejected", None))
                continue
            key = (floor, target)
            if key not in changes:
                changes[key] = "patch" if floor == target else str(classify(schemas[floor], schemas[target]).change)
            reading = "exact" if floor == target else "tolerant"
            cells.append(Cell(floor, release, True, reading, changes[key]))
    return Matrix(lock.contract, floors, lock.releases, tuple(cells), policy_floor)


def render_matrix_text(matrix: Matrix) -> str:
    """The matrix as a table: floors down, releases across."""
    if not matrix.releases:
        return f"{matrix.contract}: no releases yet (versions/{matrix.contract}/releases.yaml)\n"
    heads = [(f"prompt {r.version}", f"schema {r.schema_version}") for r in matrix.releases]
    rows = []
    for floor in matrix.floors:
        label = f"floor {floor}" + (" (policy)" if floor == matrix.policy_floor else "")
        cells = []
        for release in matrix.releases:
            cell = matrix.cell(floor, release)
            cells.append(cell.reading if cell.reading != "tolerant" else f"tolerant ({cell.change})")
        rows.append((label, cells))
    first = max(len("parser"), *(len(label) for label, _ in rows))
    widths = [max(len(a), len(b), *(len(cells[i]) for _, cells in rows)) for i, (a, b) in enumerate(heads)]
    out = [
        f"{matrix.contract}: which parser floors accept which releases (same major, minor >= floor)",
        "",
        "  " + "parser".ljust(first) + "  " + "  ".join(a.ljust(w) for (a, _), w in zip(heads, widths, strict=True)),
        "  " + "".ljust(first) + "  " + "  ".join(b.ljust(w) for (_, b), w in zip(heads, widths, strict=True)),
    ]
    for label, cells in rows:
        out.append("  " + label.ljust(first) + "  " + "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)))
    out += [
        "",
        "exact: the floor's own schema; tolerant (class): a newer minor read with the floor's schema, unknown "
        "properties ignored;",
        "rejected: incompatible_version (an older minor or another major). Release classes: "
        + ", ".join(f"{r.version} {r.prompt_class}" for r in matrix.releases),
    ]
    return "\n".join(line.rstrip() for line in out) + "\n"
