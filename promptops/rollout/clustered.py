"""Intervals for usefulness metrics, clustered by pull request (docs/usefulness.md, Why clustering).

A rollout assigns pull requests, not findings, to arms, and the findings of one pull request share its code, its
reviewer and its prompt's mood: their outcomes correlate. So the unit of analysis is the pull request and every
interval here takes an arm's sums over its pull requests with a decided finding (``ClusterSums``: of a_i, the
findings acted on, or dismissed, and n_i, the decided ones, their squares and products); the sums are exact
integers, so each variance below is computed exactly and rounded once.

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

from promptops.rollout.stats import FIXED, METHODS, Interval, _check_alpha, _mixture_log_level, z_one_sided
from promptops.store.feedback_units import ClusterSums

# The always-valid boundary is tightest at this many pull requests in total (a step of a few hundred pull
# requests is what a usefulness gate needs); valid at every count.
TUNED_PRS = 200


def acted_on_rate(prs: ClusterSums, method: str, alpha: float) -> Interval | None:
    """The acted-on rate of one arm, from its sums ``prs``, under ``method``."""
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
    candidate: ClusterSums, baseline: ClusterSums, method: str, alpha: float
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


def per_pull_request(prs: ClusterSums, method: str, alpha: float) -> Interval | None:
    """Acted-on findings per pull request of one arm (mean over its pull requests with a decided finding)."""
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
    candidate: ClusterSums, baseline: ClusterSums, method: str, alpha: float
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


def _ratio(prs: ClusterSums) -> tuple[float, float, int] | None:
    """(rate, effective number of findings, pull requests with a decided finding), or None without one.

    The effective number is p(1 - p) / V with V the cluster-robust variance: the sample size at which independent
    findings would be as precise. Capped at the number of findings (a pull request never counts for more than its
    findings). When every finding agrees (V = 0) it is Kish's N^2 / sum(n_i^2): what perfectly correlated findings
    are worth, one per pull request when they are equally many.
    """
    _checked(prs)
    if prs.clusters == 0:
        return None
    total, acted = prs.n, prs.a
    rate = acted / total
    # sum((a_i - rate * n_i)^2) * N^2, expanded into the sums: an exact integer
    spread = prs.a2 * total * total - 2 * acted * total * prs.an + acted * acted * prs.n2
    kish = total * total / prs.n2
    effective = min(float(total), rate * (1 - rate) / (spread / total**4)) if spread > 0 else kish
    return rate, effective, prs.clusters


def _mean(prs: ClusterSums) -> tuple[float, float, int] | None:
    """(mean, variance of one pull request's count, pull requests), or None without a pull request.

    The variance is the sample variance, floored at a Poisson variance of the smoothed mean (sum + 1) / (G + 1):
    counts that happen to agree early on (or a single pull request) must not make an interval collapse.
    """
    _checked(prs)
    clusters = prs.clusters
    if clusters == 0:
        return None
    mean = prs.a / clusters
    sample = (clusters * prs.a2 - prs.a * prs.a) / (clusters * (clusters - 1)) if clusters > 1 else 0.0
    return mean, max(sample, (prs.a + 1) / (clusters + 1)), clusters


def _checked(prs: ClusterSums) -> None:
    # Cauchy-Schwarz and 0 <= a_i <= n_i bound the sums; sums no set of pull requests gives are refused.
    if min(prs.clusters, prs.a, prs.a2, prs.an, prs.n, prs.n2) < 0 or prs.a > prs.n or prs.an > prs.n2:
        raise ValueError(f"sums no pull requests with 0 <= acted_on <= decided give: {prs}")
    if (prs.clusters == 0) != (prs.n == 0) or prs.n < prs.clusters:
        raise ValueError(f"sums no pull requests with a decided finding give: {prs}")


def _smoothed(prs: ClusterSums) -> float:
    """(A + 1) / (N + 2), as stats.difference_sequence does, so no variance collapses at a rate of 0 or 1."""
    return (prs.a + 1) / (prs.n + 2)


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
