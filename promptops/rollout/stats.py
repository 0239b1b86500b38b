"""The statistics behind rollout gates (docs/rollouts.md, The statistics).

Gates judge per-response Bernoulli indicators (a response had a dropped finding, was rejected for its version,
had a coercion). Everything here is closed-form with the standard library: Wilson score bounds for one arm,
Newcombe's hybrid score interval for the candidate-minus-baseline difference, the zero-failure sample size,
the per-arm size to show non-inferiority, and a chi-square test for sample-ratio mismatch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

_NORMAL = NormalDist()


@dataclass(frozen=True)
class Interval:
    """An estimate with its lower and upper bounds."""

    estimate: float
    low: float
    high: float


def z_one_sided(alpha: float) -> float:
    """z of a one-sided bound at level ``alpha`` (1.645 for 0.05)."""
    _check_alpha(alpha)
    return _NORMAL.inv_cdf(1 - alpha)


def wilson(successes: int, n: int, z: float) -> Interval:
    """Wilson score interval for ``successes`` of ``n`` (each bound at the level ``z`` stands for).

    With n = 0 nothing is known: the interval is [0, 1].
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    if n == 0:
        return Interval(0.0, 0.0, 1.0)
    p = successes / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # Clamp the rounding noise at x = 0 and x = n, where the exact bound is 0 or 1.
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return Interval(p, low, high)


def newcombe(candidate: tuple[int, int], baseline: tuple[int, int], z: float) -> Interval:
    """Newcombe's hybrid score interval for the difference candidate rate minus baseline rate.

    Built from the two Wilson intervals (Newcombe 1998, method 10); each argument is (successes, n).
    """
    c, b = wilson(*candidate, z), wilson(*baseline, z)
    difference = c.estimate - b.estimate
    low = difference - math.sqrt((c.estimate - c.low) ** 2 + (b.high - b.estimate) ** 2)
    high = difference + math.sqrt((c.high - c.estimate) ** 2 + (b.estimate - b.low) ** 2)
    return Interval(difference, max(-1.0, low), min(1.0, high))


def zero_failure_sample(slo: float, alpha: float) -> int:
    """Responses needed to show a rate below ``slo`` when none fails: ceil(ln(alpha) / ln(1 - slo))."""
    _check_alpha(alpha)
    if not 0 < slo < 1:
        raise ValueError(f"an SLO must be in (0, 1), got {slo}")
    return math.ceil(math.log(alpha) / math.log(1 - slo))


def non_inferiority_sample(rate: float, margin: float, alpha: float, power: float = 0.8) -> int:
    """Responses per arm to show candidate - baseline <= ``margin`` when both arms run at ``rate``.

    n = (z_(1-alpha) + z_power)^2 * 2 rate (1 - rate) / margin^2 (one-sided test, normal approximation).
    """
    _check_alpha(alpha)
    if not 0 < margin < 1 or not 0 <= rate < 1 or not 0 < power < 1:
        raise ValueError("need 0 < margin < 1, 0 <= rate < 1 and 0 < power < 1")
    z = _NORMAL.inv_cdf(1 - alpha) + _NORMAL.inv_cdf(power)
    variance = 2 * max(rate, 1e-9) * (1 - rate)
    return math.ceil(z * z * variance / (margin * margin))


def sample_ratio_p_value(candidate: int, baseline: int, weight: float) -> float:
    """p-value of the chi-square test (1 degree of freedom) that traffic splits as ``weight`` says.

    A tiny p-value means assignment or logging is broken: the gate escalates instead of comparing rates.
    """
    total = candidate + baseline
    if total == 0 or weight <= 0 or weight >= 1:
        return 1.0
    expected = (total * weight, total * (1 - weight))
    statistic = sum((observed - e) ** 2 / e for observed, e in zip((candidate, baseline), expected, strict=True))
    return math.erfc(math.sqrt(statistic / 2))  # the chi-square(1) survival function


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
