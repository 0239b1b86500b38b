"""Intervals for usefulness metrics, clustered by pull request (docs/usefulness.md, Why clustering).

A rollout assigns pull requests, not findings, to arms, and the findings of one pull request share its code, its
reviewer and its prompt's mood: their outcomes correlate. So the unit of analysis is the pull request and every
interval here takes one (acted_on, decided) pair per pull request of an arm.

- The acted-on rate is the ratio sum(acted_on) / sum(decided): weighted by findings, so a finding counts the same
  wherever it sits. Its variance is the cluster-robust (linearised, "CR0") one, sum((a_i - R n_i)^2) / N^2.
- Acted-on findings per pull request is a plain mean over pull requests, so a prompt cannot look better by
  saying less.

Both in the two methods of stats.py: "fixed" (valid at one look) and "always-valid" (valid at every look at
once, the asymptotic confidence sequence of Waudby-Smith et al. 2023 with the pull request as the unit). Each
bound is one-sided at ``alpha``, as in stats.py. No decided finding (or no pull request) gives ``None``: there is
nothing to judge and a gate reports NO_DATA.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from promptops.rollout.stats import FIXED, METHODS, Interval, _check_alpha, _mixture_log_level, z_one_sided

# The always-valid boundary is tightest at this many pull requests in total (a step of a few hundred pull
# requests is what a usefulness gate needs); valid at every count.
TUNED_PRS = 200

PullRequests = Sequence[tuple[int, int]]


def acted_on_rate(prs: PullRequests, method: str, alpha: float) -> Interval | None:
    """The acted-on rate of one arm, ``prs`` holding (acted_on, decided) per pull request, under ``method``."""
    _check(method, alpha)
    fit = _ratio(prs)
    if fit is None:
        return None
    rate, effective, clusters = fit
    if method == FIXED:
        return _wilson(rate, effective, z_one_sided(alpha))
    smooth = _smoothed(prs)
    half = _half_width(clusters * smooth * (1 - smooth) / effective, clusters, alpha)
    return Interval(rate, max(0.0, rate - half), min(1.0, rate + half))


def acted_on_rate_difference(
    candidate: PullRequests, baseline: PullRequests, method: str, alpha: float
) -> Interval | None:
    """Candidate acted-on rate minus baseline's, under ``method``; ``None`` when an arm has no decided finding."""
    _check(method, alpha)
    fit_c, fit_b = _ratio(candidate), _ratio(baseline)
    if fit_c is None or fit_b is None:
        return None
    (rate_c, eff_c, g_c), (rate_b, eff_b, g_b) = fit_c, fit_b
    difference = rate_c - rate_b
    if method == FIXED:
        # Newcombe's hybrid score interval (stats.newcombe) from the two clustered Wilson intervals.
        z = z_one_sided(alpha)
        c, b = _wilson(rate_c, eff_c, z), _wilson(rate_b, eff_b, z)
        low = difference - math.sqrt((c.estimate - c.low) ** 2 + (b.high - b.estimate) ** 2)
        high = difference + math.sqrt((c.high - c.estimate) ** 2 + (b.estimate - b.low) ** 2)
        return Interval(difference, max(-1.0, low), min(1.0, high))
    smooth_c, smooth_b = _smoothed(candidate), _smoothed(baseline)
    variance = smooth_c * (1 - smooth_c) / eff_c + smooth_b * (1 - smooth_b) / eff_b
    clusters = g_c + g_b
    half = _half_width(clusters * variance, clusters, alpha)
    return Interval(difference, max(-1.0, difference - half), min(1.0, difference + half))


def per_pull_request(prs: PullRequests, method: str, alpha: float) -> Interval | None:
    """Acted-on findings per pull request of one arm (mean over the pull requests given), under ``method``."""
    _check(method, alpha)
    fit = _mean(prs)
    if fit is None:
        return None
    mean, variance, clusters = fit
    if method == FIXED:
        half = z_one_sided(alpha) * math.sqrt(variance / clusters)
    else:
        half = _half_width(variance, clusters, alpha)
    return Interval(mean, max(0.0, mean - half), mean + half)


def per_pull_request_difference(
    candidate: PullRequests, baseline: PullRequests, method: str, alpha: float
) -> Interval | None:
    """Candidate acted-on findings per pull request minus baseline's, under ``method``."""
    _check(method, alpha)
    fit_c, fit_b = _mean(candidate), _mean(baseline)
    if fit_c is None or fit_b is None:
        return None
    (mean_c, var_c, g_c), (mean_b, var_b, g_b) = fit_c, fit_b
    difference = mean_c - mean_b
    if method == FIXED:
        half = z_one_sided(alpha) * math.sqrt(var_c / g_c + var_b / g_b)
    else:
        clusters = g_c + g_b
        half = _half_width(clusters * (var_c / g_c + var_b / g_b), clusters, alpha)
    return Interval(difference, difference - half, difference + half)


def _ratio(prs: PullRequests) -> tuple[float, float, int] | None:
    """(rate, effective number of findings, pull requests with a decided finding), or None without one.

    The effective number is p(1 - p) / V with V the cluster-robust variance: the sample size at which independent
    findings would be as precise. Capped at the number of findings (a pull request never counts for more than its
    findings). When every finding agrees (V = 0) it is Kish's N^2 / sum(n_i^2): what perfectly correlated findings
    are worth, one per pull request when they are equally many.
    """
    decided = [(a, n) for a, n in _checked(prs) if n > 0]
    if not decided:
        return None
    total = sum(n for _, n in decided)
    rate = sum(a for a, _ in decided) / total
    variance = sum((a - rate * n) ** 2 for a, n in decided) / (total * total)
    kish = total * total / sum(n * n for _, n in decided)
    effective = min(float(total), rate * (1 - rate) / variance) if variance > 0 else kish
    return rate, effective, len(decided)


def _mean(prs: PullRequests) -> tuple[float, float, int] | None:
    """(mean, variance of one pull request's count, pull requests), or None without a pull request.

    The variance is the sample variance, floored at a Poisson variance of the smoothed mean (sum + 1) / (G + 1):
    counts that happen to agree early on (or a single pull request) must not make an interval collapse.
    """
    counts = [a for a, _ in _checked(prs)]
    if not counts:
        return None
    clusters = len(counts)
    mean = sum(counts) / clusters
    sample = sum((c - mean) ** 2 for c in counts) / (clusters - 1) if clusters > 1 else 0.0
    return mean, max(sample, (sum(counts) + 1) / (clusters + 1)), clusters


def _checked(prs: PullRequests) -> PullRequests:
    for acted_on, decided in prs:
        if decided < 0 or not 0 <= acted_on <= decided:
            raise ValueError(f"need 0 <= acted_on <= decided per pull request, got {acted_on} of {decided}")
    return prs


def _smoothed(prs: PullRequests) -> float:
    """(A + 1) / (N + 2), as stats.difference_sequence does, so no variance collapses at a rate of 0 or 1."""
    return (sum(a for a, _ in prs) + 1) / (sum(n for _, n in prs) + 2)


def _wilson(rate: float, n: float, z: float) -> Interval:
    """The Wilson score interval at an observed ``rate`` of ``n`` (not necessarily whole) observations."""
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (rate + z2 / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if rate == 0 else max(0.0, centre - half)
    high = 1.0 if rate == 1 else min(1.0, centre + half)
    return Interval(rate, low, high)


def _half_width(sigma2: float, units: int, alpha: float) -> float:
    """The asymptotic confidence sequence's half-width after ``units`` independent units of variance ``sigma2``
    (the boundary of stats.difference_sequence, tuned for TUNED_PRS units)."""
    rho2 = _mixture_log_level(alpha) / TUNED_PRS
    scale = units * rho2 + 1
    return math.sqrt(sigma2 * 2 * scale / (units * units * rho2) * math.log(math.sqrt(scale) / alpha))


def _check(method: str, alpha: float) -> None:
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    _check_alpha(alpha)
