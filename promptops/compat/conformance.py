"""Score the engine against peer registries' verdicts (a ``compat-vectors.json`` file).

Each vector pairs an ``original`` (older) and ``updated`` (newer) schema with the backward verdict its source
states and, for some, the forward verdict. Agreement is scored separately for each direction. ``DISPUTED``
vectors (the source contradicts what a validator does) are reported but not scored. ``POLICY-DEPENDENT`` ones
are scored against promptops' policy: a ``default`` never excuses a new required property (docs/compat.md), so
such a vector expects "backward incompatible"; ``format`` follows ``CompatPolicy.format_assertion`` (asserted:
the source's verdict stands; ignored: no change either way). The vectors are read where they live, never
copied; this module only takes them already decoded.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from promptops.compat.classify import classify
from promptops.compat.errors import SchemaInputError
from promptops.compat.policy import DEFAULT_POLICY, CompatPolicy


@dataclass(frozen=True)
class VectorResult:
    name: str
    expected_backward: bool
    expected_forward: bool | None
    backward: bool | None  # None: the engine refused the schema (counts as a disagreement)
    forward: bool | None
    disputed: bool
    note: str  # how the expectation was set, when our policy set it

    @property
    def backward_agrees(self) -> bool:
        return self.backward == self.expected_backward

    @property
    def forward_agrees(self) -> bool:
        return self.expected_forward is None or self.forward == self.expected_forward


@dataclass(frozen=True)
class ConformanceReport:
    results: tuple[VectorResult, ...]

    @property
    def scored(self) -> tuple[VectorResult, ...]:
        return tuple(r for r in self.results if not r.disputed)

    @property
    def backward(self) -> tuple[int, int]:
        """(agreeing, scored) for the backward verdicts."""
        return sum(r.backward_agrees for r in self.scored), len(self.scored)

    @property
    def forward(self) -> tuple[int, int]:
        """(agreeing, scored) over the vectors that state a forward verdict."""
        stated = [r for r in self.scored if r.expected_forward is not None]
        return sum(r.forward_agrees for r in stated), len(stated)

    @property
    def disagreements(self) -> tuple[VectorResult, ...]:
        return tuple(r for r in self.scored if not (r.backward_agrees and r.forward_agrees))

    @property
    def disputed(self) -> tuple[VectorResult, ...]:
        return tuple(r for r in self.results if r.disputed)


def score(vectors: Iterable[Mapping[str, Any]], policy: CompatPolicy = DEFAULT_POLICY) -> ConformanceReport:
    results = []
    for vector in vectors:
        notes = str(vector.get("notes", ""))
        expected_backward = bool(vector["backward_compatible"])
        expected_forward = vector.get("forward_compatible")
        note = ""
        if "POLICY-DEPENDENT" in notes and "`default`" in notes and "required" in notes:
            expected_backward, note = False, "policy: a default never excuses a new required property"
        elif "POLICY-DEPENDENT" in notes and "`format`" in notes:
            if policy.format_assertion:
                note = "policy: format is asserted, so the source's verdict stands"
            else:
                expected_backward, expected_forward, note = True, True, "policy: format ignored"
        backward: bool | None = None
        forward: bool | None = None
        try:
            comparison = classify(vector["original"], vector["updated"], policy=policy)
            backward, forward = comparison.backward_compatible, comparison.forward_compatible
        except SchemaInputError:
            pass  # scored as a disagreement: the engine refused a schema its peers accept
        results.append(
            VectorResult(
                name=str(vector["name"]),
                expected_backward=expected_backward,
                expected_forward=None if expected_forward is None else bool(expected_forward),
                backward=backward,
                forward=forward,
                disputed="DISPUTED" in notes,
                note=note,
            )
        )
    return ConformanceReport(tuple(results))
