"""Keep pandas out of a process that only builds Arrow arrays from Python values (ingest, its workers).

``pa.array`` asks pyarrow's pandas shim whether its argument is a pandas object, and the shim's first question
imports pandas when it is installed (the ``test`` and ``spark`` extras install it): about 0.2 s in every
ingest process, for nothing. pyarrow has no switch for this, so ``skip_pandas_probe`` lets the shim's one probe
find no pandas; the shim remembers that answer for the process. Explicit pandas conversions
(``Table.to_pandas``) still work: they import pandas themselves. Only ``pa.array(<pandas object>)`` then
treats the object as a plain sequence, which nothing on the ingest path passes.
"""

from __future__ import annotations

import importlib.abc
import sys
from collections.abc import Sequence
from types import ModuleType

import pyarrow as pa


class _NoPandas(importlib.abc.MetaPathFinder):
    def find_spec(self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None) -> None:
        if name == "pandas":
            raise ModuleNotFoundError("pandas is hidden from pyarrow's probe", name=name)


def skip_pandas_probe() -> None:
    """Answer pyarrow's pandas probe with "not installed", unless pandas is imported already. Call it before
    other threads start importing: it hides pandas from ``import`` for the length of one empty ``pa.array``."""
    if "pandas" in sys.modules:
        return
    finder = _NoPandas()
    sys.meta_path.insert(0, finder)
    try:
        pa.array([], type=pa.null())  # the probe runs once per process, here
    finally:
        sys.meta_path.remove(finder)
