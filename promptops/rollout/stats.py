"""The statistics behind rollout gates (docs/rollouts.md, The statistics).

Gates judge per-response Bernoulli indicators (a response had a dropped finding, was rejected for its version,
had a coercion). Everything here is closed-form with the standard library, in two methods:

- always-valid (the default): bounds that hold at every look at once, however often the gate is run. One arm
  gets the beta-binomial mixture confidence sequence (Robbins 1970; Howard, Ramdas, McAuliffe & Sekhon 2021),
  candidate minus baseline the asymptotic confidence sequence of Waudby-Smith et al. (2023).
- fixed: Wilson score bounds for one arm and Newcombe's hybrid score interval for the difference, valid when the
  gate is looked at once.

Besides: the sample each arm needs under either method, and a chi-square test for sample-ratio mismatch.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

FIXED = "fixed"
ALWAYS_VALID = "always-valid"
METHODS = (ALWAYS_VALID, FIXED)
# The always-valid bounds are tightest at this many responses per arm: a step of a few hundred to a few thousand
# responses is what plans ask for. Looser far from it (about 10% wider than at the tuning point at a tenth or ten
# times as many), valid everywhere.
TUNED_N = 1000


class Interval(NamedTuple):  # not a dataclass: defined at every gate's start-up
    """An estimate with its lower and upper bounds."""

    estimate: float
    low: float
    high: float


def z_one_sided(alpha: float) -> float:
    """z of a one-sided bound at level ``alpha`` (1.645 for 0.05)."""
    _check_alpha(alpha)
    return _normal_quantile(1 - alpha)


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
    z = _normal_quantile(1 - alpha) + _normal_quantile(power)
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


def _mixture_log_level(alpha: float) -> float:
    """-2 ln(alpha) + ln(1 - 2 ln(alpha)): scales a normal mixture so its boundary is tightest at a chosen time
    (Howard et al. 2021, eq. 3.3's approximation; the same rule as Waudby-Smith et al.'s best_rho2_approx)."""
    return -2 * math.log(alpha) + math.log(1 - 2 * math.log(alpha))


def _beta_prior(centre: float, alpha: float, tuned_n: int) -> tuple[float, float]:
    """Beta(a, b) mixing distribution centred on ``centre`` (the SLO) whose weight, a + b responses, makes the
    boundary tightest near ``tuned_n`` responses."""
    centre = min(max(centre, 1e-6), 1 - 1e-6)
    size = tuned_n / _mixture_log_level(alpha)
    return centre * size, (1 - centre) * size


@functools.lru_cache(maxsize=64)
def _mixing(centre: float, alpha: float, tuned_n: int) -> tuple[tuple[float, float, float, float, float], ...]:
    """confidence_sequence's two mixing distributions Beta(a, b), each as (a, b, ln G(a), ln G(b), ln G(a + b)):
    the same for every count of one SLO, so worked out once for the hundreds of bounds a gate asks of it."""
    priors = (_beta_prior(centre, alpha, tuned_n), (1.0, 1.0))
    return tuple((a, b, math.lgamma(a), math.lgamma(b), math.lgamma(a + b)) for a, b in priors)


@functools.lru_cache(maxsize=4096)  # the bound path repeats earlier looks' counts at every gate
def confidence_sequence(successes: int, n: int, alpha: float, centre: float, tuned_n: int = TUNED_N) -> Interval:
    """The beta-binomial mixture confidence sequence for a proportion: every p whose mixture likelihood ratio
    stays below 1/alpha.

    Against a rate p, M_n(p) = B(a + x, b + n - x) / (B(a, b) p^x (1 - p)^(n - x)) is the likelihood ratio of a
    Beta(a, b) mixture of rates to p, a nonnegative martingale with mean 1 when p is the true rate; so is the
    average of two such ratios (one centred on ``centre``, one uniform), which is what is used here; so by
    Ville's inequality it ever reaches 1/alpha with probability at most alpha: the interval covers the true
    rate at every n at once, without approximation. Each bound is therefore also a one-sided bound at
    ``alpha`` (conservatively: the two sides share alpha). ``centre`` places half the mixture (the SLO judged).
    """
    if n < 0 or not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    _check_alpha(alpha)
    if n == 0:
        return Interval(0.0, 0.0, 1.0)
    failures = n - successes
    # ln of the mixture's marginal likelihood over B(a, b), per mixing distribution, computed once: only the
    # likelihood term below moves with p. Half the weight is centred on the SLO (tight where decisions are
    # close), half is uniform, Beta(1, 1), so a rate far from the SLO still gets a bound near its estimate
    # (every answer rejected: a lower bound near 100%, not one dragged towards the SLO).
    mixtures = [
        math.lgamma(a + successes) + math.lgamma(b + failures) - math.lgamma(a + b + n) - ln_a - ln_b + ln_ab
        for a, b, ln_a, ln_b, ln_ab in _mixing(centre, alpha, tuned_n)
    ]
    top = max(mixtures)
    mixture = top + math.log(sum(math.exp(m - top) for m in mixtures) / len(mixtures))
    threshold = -math.log(alpha)

    def outside(p: float) -> bool:  # ln M_n(p) >= ln(1/alpha): p is excluded
        likelihood = successes * math.log(p) if successes else 0.0
        likelihood += failures * math.log1p(-p) if failures else 0.0
        return mixture - likelihood >= threshold

    estimate = successes / n
    # ln M_n is convex in p with its minimum at the estimate, where it is below the threshold (the mixture
    # never beats the best single rate), so each bound is one crossing. The upper bound is the lower bound of
    # 1 - p with successes and failures swapped.
    gap = mixture - threshold
    low = 0.0
    if successes and outside(1e-300):
        low = _crossing(gap, successes, failures, estimate, outside)
    high = 1.0
    if failures and outside(1 - 1e-16):
        high = 1 - _crossing(gap, failures, successes, 1 - estimate, lambda q: outside(1 - q))
    return Interval(estimate, low, high)


def _crossing(gap: float, k: int, m: int, included: float, outside: Callable[[float], bool]) -> float:
    """The smallest t with gap - k ln t - m ln(1 - t) < 0, to 1e-12 and on that (included) side.

    As a function of u = ln t the left side is convex and falls towards the root, so Newton's method started
    from an excluded t (1e-300) climbs to the root without overshooting: six or seven steps where bisection
    to 1e-12 takes about 40. The result is checked on both sides with ``outside`` (excluded at t, in the
    caller's terms); where that fails (a bound below 5e-13, or rounding at counts near 10^9), bisection does it.
    """
    t = 1e-300
    u = math.log(t)
    for _ in range(100):
        value = gap - k * u - (m * math.log1p(-t) if m else 0.0)
        step = value / (k - m * t / (1 - t))  # -value / slope; the slope is negative left of the root
        u += step
        t = math.exp(u)
        if step * t < 1e-14:
            break
    # As bisection would: an included t within 1e-12 of an excluded one (rounding can put t on either side).
    excluded, inside = t - 5e-13, t + 5e-13
    if excluded > 0 and inside < included and outside(excluded) and not outside(inside):
        return inside
    return _bisection(outside, 1e-300, included)


def _bisection(outside: Callable[[float], bool], excluded: float, included: float) -> float:
    """The boundary between an excluded and an included rate, returned on the included side."""
    for _ in range(200):
        if abs(excluded - included) <= 1e-12:
            break
        middle = (excluded + included) / 2
        if outside(middle):
            excluded = middle
        else:
            included = middle
    return included


def difference_sequence(
    candidate: tuple[int, int], baseline: tuple[int, int], alpha: float, tuned_n: int = TUNED_N
) -> Interval:
    """The asymptotic confidence sequence (Waudby-Smith et al. 2023, as GrowthBook uses) for candidate rate minus
    baseline rate; each argument is (successes, n).

    With N = n_c + n_b responses and sigma^2 = N Var(d), the half-width is sigma sqrt(2 (N rho^2 + 1) / (N^2
    rho^2) ln(sqrt(N rho^2 + 1) / alpha)), with rho^2 tuned for N = 2 ``tuned_n``. Asymptotic: the variance uses
    (x + 1) / (n + 2) per arm so that a few events early on (or none) cannot make it collapse. Each bound is
    also a one-sided bound at ``alpha`` (the two sides share it).
    """
    (xc, nc), (xb, nb) = candidate, baseline
    for x, n in (candidate, baseline):
        if n < 0 or not 0 <= x <= n:
            raise ValueError(f"need 0 <= successes <= n, got {x} of {n}")
    _check_alpha(alpha)
    if nc == 0 or nb == 0:
        return Interval(0.0, -1.0, 1.0)
    difference = xc / nc - xb / nb
    smooth_c, smooth_b = (xc + 1) / (nc + 2), (xb + 1) / (nb + 2)
    total = nc + nb
    sigma2 = total * (smooth_c * (1 - smooth_c) / nc + smooth_b * (1 - smooth_b) / nb)
    rho2 = _mixture_log_level(alpha) / (2 * tuned_n)
    half = math.sqrt(
        sigma2 * 2 * (total * rho2 + 1) / (total * total * rho2) * math.log(math.sqrt(total * rho2 + 1) / alpha)
    )
    return Interval(difference, max(-1.0, difference - half), min(1.0, difference + half))


def bounds(method: str, successes: int, n: int, alpha: float, slo: float) -> Interval:
    """One arm's bounds, each one-sided at ``alpha``, under ``method``."""
    if method == FIXED:
        return wilson(successes, n, z_one_sided(alpha))
    return confidence_sequence(successes, n, alpha, slo)


def difference_bounds(method: str, candidate: tuple[int, int], baseline: tuple[int, int], alpha: float) -> Interval:
    """Candidate minus baseline, each bound one-sided at ``alpha``, under ``method``."""
    if method == FIXED:
        return newcombe(candidate, baseline, z_one_sided(alpha))
    return difference_sequence(candidate, baseline, alpha)


@functools.lru_cache(maxsize=256)  # a gate asks it per metric at every look; the answer depends on three numbers
def zero_failure_need(method: str, slo: float, alpha: float) -> int:
    """Responses needed to show a rate within ``slo`` when none fails, under ``method``: the smallest n whose
    upper bound with no failure is at most the SLO."""
    if method == FIXED:
        return zero_failure_sample(slo, alpha)
    if not 0 < slo < 1:
        raise ValueError(f"an SLO must be in (0, 1), got {slo}")
    return _smallest(lambda n: confidence_sequence(0, n, alpha, slo).high <= slo, zero_failure_sample(slo, alpha))


@functools.lru_cache(maxsize=256)
def non_inferiority_need(method: str, rate: float, margin: float, alpha: float, power: float = 0.8) -> int:
    """Responses per arm to show candidate - baseline <= ``margin`` with probability ``power`` when both arms run
    at ``rate``, under ``method``: the smallest n with half-width(n) + z_power sd(n) <= margin."""
    fixed = non_inferiority_sample(rate, margin, alpha, power)
    if method == FIXED:
        return fixed
    z_power = _normal_quantile(power)
    successes = max(rate, 1e-9)

    def enough(n: int) -> bool:
        x = round(successes * n)
        interval = difference_sequence((x, n), (x, n), alpha)
        sd = math.sqrt(2 * successes * (1 - rate) / n)
        return interval.high + z_power * sd <= margin

    return _smallest(enough, fixed)


def _smallest(enough: Callable[[int], bool], start: int) -> int:
    """The smallest n >= 1 with ``enough(n)``, for a condition that stays true once it holds (from ``start``
    up by doubling, then bisection)."""
    low, high = 0, max(1, start)
    while not enough(high):
        low, high = high, high * 2
        if high > 10**12:
            raise ValueError("no sample size up to 10^12 responses is enough")
    while high - low > 1:
        middle = (low + high) // 2
        if enough(middle):
            high = middle
        else:
            low = middle
    return high


def _normal_quantile(q: float) -> float:
    from statistics import NormalDist  # imports fractions: only the fixed method and sample sizes need it

    return NormalDist().inv_cdf(q)


def _check_alpha(alpha: float) -> None:
    if not 0 < alpha < 0.5:
        raise ValueError(f"alpha must be in (0, 0.5), got {alpha}")
