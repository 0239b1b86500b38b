"""The compatibility policy: the two points where JSON Schema itself leaves the verdict open."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CompatPolicy:
    """How the diff engine reads ``format`` and what tolerant reading forgives.

    ``format_assertion``: treat ``format`` as a constraint (the default). JSON Schema 2019-09+ and validators
    without a format checker treat it as an annotation, but consumers of review results often do check it,
    and the prompt restates it to the model, so adding or changing a format is a narrowing (backward
    incompatible) and removing one a widening (forward incompatible). Compared as text, like ``pattern``.
    With ``False`` the engine ignores ``format`` entirely, as Confluent's registry does.

    ``tolerate_unknown_enum_values``: whether the tolerant reading (an old parser reading a
    newer minor) also accepts enum values it does not know. The promptops parser does not: an unknown enum
    value still drops the finding, so by default an added enum value is not forward compatible even under
    tolerant reading, and is a major change.
    """

    format_assertion: bool = True
    tolerate_unknown_enum_values: bool = False


DEFAULT_POLICY = CompatPolicy()
