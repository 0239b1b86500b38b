"""Number flags that refuse NaN and infinity: click's FloatRange lets ``nan`` through (every comparison with
NaN is false), so ``--weight nan`` would be accepted and poison every computation after it."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloat(click.FloatRange):
    """A float within ``[min, max]`` (bounds open as FloatRange's flags say) that is a real, finite number."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return number
