"""Schema compatibility: normalize two JSON Schemas, diff them, and classify the change as patch/minor/major.

>>> from promptops.compat import classify
>>> old = {"type": "object", "additionalProperties": False, "properties": {"a": {"type": "string"}}}
>>> new = {**old, "properties": {**old["properties"], "b": {"type": "integer"}}}
>>> str(classify(old, new).change)
'minor'
"""

from promptops.compat.classify import Comparison, SchemaLike, TransitiveComparison, classify, classify_against
from promptops.compat.diff import diff
from promptops.compat.difference import Change, Difference, Kind
from promptops.compat.errors import SchemaInputError
from promptops.compat.normalize import Schema, normalize
from promptops.compat.policy import DEFAULT_POLICY, CompatPolicy

__all__ = [
    "DEFAULT_POLICY",
    "Change",
    "Comparison",
    "CompatPolicy",
    "Difference",
    "Kind",
    "Schema",
    "SchemaInputError",
    "SchemaLike",
    "TransitiveComparison",
    "classify",
    "classify_against",
    "diff",
    "normalize",
]
