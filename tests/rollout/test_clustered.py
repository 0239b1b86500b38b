"""Usefulness intervals clustered by pull request (issue 30, item 4): seeded data, not timed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from promptops.rollout import clustered as _clustered
from promptops.rollout.stats import ALWAYS_VALID, FIXED, METHODS, Interval, newcombe, wilson, z_one_sided
from promptops.store.feedback_units import ClusterSums

Pairs = list[tuple[int, int]]


class clustered:  # stands in for the module
    """promptops.rollout.clustered with each case stated as one (a, n) pair per pull request: the store hands the
    module their sums, as ClusterSums.of does here."""

    _wilson = staticmethod(_clustered._wilson)

    @staticmethod
    def acted_on_rate(prs: Pairs, method: str, alpha: float) -> Interval | None:
        return _clustered.acted_on_rate(ClusterSums.of(prs), method, alpha)

    @staticmethod
    def per_pull_request(prs: Pairs, method: str, alpha: float) -> Interval | None:
        return _clustered.per_pull_request(ClusterSums.of(prs), method, alpha)

    @staticmethod
    def acted_on_rate_difference(candidate: Pairs, baseline: Pairs, method: str, alpha: float) -> Interval | None:
        return _clustered.acted_on_rate_difference(ClusterSums.of(candidate), ClusterSums.of(baseline), method, alpha)

    @staticmethod
    def per_pull_request_difference(candidate: Pairs, baseline: Pairs, method: str, alpha: float) -> Interval | None:
        sums = ClusterSums.of(candidate), ClusterSums.of(baseline)
        return _clustered.per_pull_request_difference(*sums, method, alpha)


ALPHA = 0.05


def _same(got: Interval | None, want: Interval) -> bool:
    """Equal up to rounding (the two sides compute the same numbers in a different order)."""
    return got is not None and tuple(got) == pytest.approx(tuple(want), abs=1e-12)


def _shared_outcomes(rng: np.random.Generator, prs: int, sizes: list[int]) -> list[tuple[int, int]]:
    """Pull requests whose findings all share one outcome (all acted on, or none)."""
    chosen = rng.choice(sizes, size=prs)
    return [(int(n) if rng.random() < 0.3 else 0, int(n)) for n in chosen]


def test_shared_outcomes_equal_the_pull_request_level_wilson_interval() -> None:
    # Every finding of a pull request shares its outcome and every pull request has 4: the clustered interval is
    # the Wilson interval of a pull-request-level analysis (each pull request one Bernoulli trial).
    rng = np.random.default_rng(30)
    prs = _shared_outcomes(rng, 57, [4])
    acted = sum(1 for a, _ in prs if a)
    got = clustered.acted_on_rate(prs, FIXED, ALPHA)
    want = wilson(acted, len(prs), z_one_sided(ALPHA))
    assert got is not None
    assert _same(got, want)
    # ... and differs from treating the 228 findings as independent.
    naive = wilson(4 * acted, 4 * len(prs), z_one_sided(ALPHA))
    assert got.high - got.low > 1.5 * (naive.high - naive.low)


def test_shared_outcomes_equal_the_weighted_pull_request_level_analysis() -> None:
    # Unequal sizes: the pull-request-level analysis is the weighted mean of the outcomes y_i with weights n_i and
    # its heteroskedasticity-robust (HC0) variance, from weighted least squares on an intercept (numpy oracle).
    rng = np.random.default_rng(31)
    prs = _shared_outcomes(rng, 80, [1, 2, 3, 5, 8])
    y = np.array([1.0 if a else 0.0 for a, _ in prs])
    w = np.array([float(n) for _, n in prs])
    x = np.ones((len(prs), 1))
    bread = np.linalg.inv(x.T @ (w[:, None] * x))
    beta = bread @ x.T @ (w * y)
    residual = y - x @ beta
    meat = x.T @ (((w * residual) ** 2)[:, None] * x)
    variance = float((bread @ meat @ bread)[0, 0])
    rate = float(beta[0])
    got = clustered.acted_on_rate(prs, FIXED, ALPHA)
    assert got is not None
    want = clustered._wilson(rate, rate * (1 - rate) / variance, z_one_sided(ALPHA))
    assert _same(got, want)


def test_one_finding_per_pull_request_is_the_gates_fixed_method() -> None:
    # No clustering to account for: the interval is the one stats.py gives independent responses.
    prs = [(1, 1)] * 23 + [(0, 1)] * 61
    got = clustered.acted_on_rate(prs, FIXED, ALPHA)
    assert _same(got, wilson(23, 84, z_one_sided(ALPHA)))
    diff = clustered.acted_on_rate_difference(prs, [(1, 1)] * 30 + [(0, 1)] * 50, FIXED, ALPHA)
    assert _same(diff, newcombe((23, 84), (30, 80), z_one_sided(ALPHA)))


@pytest.mark.parametrize("method", METHODS)
def test_correlated_outcomes_widen_the_interval(method: str) -> None:
    # Pull-request-level rates spread widely (Beta(0.5, 1)): outcomes correlate within a pull request.
    rng = np.random.default_rng(32)
    prs = []
    for _ in range(120):
        n = int(rng.integers(3, 9))
        prs.append((int(rng.binomial(n, rng.beta(0.5, 1.0))), n))
    acted, findings = sum(a for a, _ in prs), sum(n for _, n in prs)
    got = clustered.acted_on_rate(prs, method, ALPHA)
    singles = [(1, 1)] * acted + [(0, 1)] * (findings - acted)  # the naive finding-level analysis
    naive = clustered.acted_on_rate(singles, method, ALPHA)
    assert got is not None and naive is not None
    assert got.estimate == pytest.approx(naive.estimate)
    assert got.high - got.low > 1.5 * (naive.high - naive.low)


def _coverage(method: str, runs: int, looks: int, per_look: int, seed: int) -> float:
    """Share of runs whose interval covers the true rate at every look (pull requests of 1..6 findings, each
    with its own rate drawn from Beta(2, 4): true acted-on rate 1/3)."""
    rng = np.random.default_rng(seed)
    covered = 0
    for _ in range(runs):
        sizes = rng.integers(1, 7, size=looks * per_look)
        acted = rng.binomial(sizes, rng.beta(2.0, 4.0, size=sizes.size))
        prs = list(zip(acted.tolist(), sizes.tolist(), strict=True))
        for look in range(1, looks + 1):
            interval = clustered.acted_on_rate(prs[: look * per_look], method, ALPHA)
            assert interval is not None
            if not interval.low <= 1 / 3 <= interval.high:
                break
        else:
            covered += 1
    return covered / runs


@pytest.mark.slow
def test_always_valid_sequence_covers_at_every_look() -> None:
    runs = 400
    limit = 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    assert _coverage(ALWAYS_VALID, runs, looks=30, per_look=10, seed=33) >= limit
    # The same runs looked at with the fixed interval lose coverage: the simulation can fail.
    assert _coverage(FIXED, runs, looks=30, per_look=10, seed=33) < limit


@pytest.mark.parametrize("method", METHODS)
def test_no_decided_finding_gives_no_interval(method: str) -> None:
    assert clustered.acted_on_rate([], method, ALPHA) is None
    assert clustered.acted_on_rate([(0, 0), (0, 0)], method, ALPHA) is None
    assert clustered.acted_on_rate_difference([(1, 2)], [(0, 0)], method, ALPHA) is None
    assert clustered.per_pull_request([], method, ALPHA) is None
    assert clustered.per_pull_request_difference([(1, 2)], [], method, ALPHA) is None


@pytest.mark.parametrize("method", METHODS)
def test_one_pull_request_counts_as_one_observation(method: str) -> None:
    one = clustered.acted_on_rate([(3, 10)], method, ALPHA)
    assert one is not None and one.estimate == 0.3
    assert one.high - one.low > 0.5  # ten findings of one pull request say little about the next
    assert _same(clustered.acted_on_rate([(0, 10)], FIXED, ALPHA), wilson(0, 1, z_one_sided(ALPHA)))
    per = clustered.per_pull_request([(3, 10)], method, ALPHA)
    assert per is not None and per.estimate == 3 and per.low < 3 < per.high


def test_per_pull_request_mean_fixed_is_the_z_interval() -> None:
    counts = [0, 2, 1, 4, 3, 0, 1, 5, 2, 2, 1, 3]
    got = clustered.per_pull_request([(c, 6) for c in counts], FIXED, ALPHA)
    mean, sd = float(np.mean(counts)), float(np.std(counts, ddof=1))
    half = z_one_sided(ALPHA) * sd / math.sqrt(len(counts))
    assert _same(got, Interval(mean, mean - half, mean + half))


def test_saying_less_lowers_findings_per_pull_request() -> None:
    # The candidate flags only its surest finding per pull request: a higher rate, fewer acted-on findings.
    baseline = [(2, 5)] * 40 + [(1, 5)] * 40
    candidate = [(1, 1)] * 60 + [(0, 1)] * 20
    for method in METHODS:
        rate = clustered.acted_on_rate_difference(candidate, baseline, method, ALPHA)
        per = clustered.per_pull_request_difference(candidate, baseline, method, ALPHA)
        assert rate is not None and per is not None
        assert rate.low > 0 and per.high < 0


@pytest.mark.parametrize("method", METHODS)
def test_always_valid_is_wider_than_fixed_at_one_look(method: str) -> None:
    prs = [(i % 3, 4) for i in range(150)]
    fixed = clustered.acted_on_rate(prs, FIXED, ALPHA)
    got = clustered.acted_on_rate(prs, method, ALPHA)
    assert fixed is not None and got is not None
    assert got.high - got.low >= fixed.high - fixed.low - 1e-12
    if method == ALWAYS_VALID:
        assert got.high - got.low > fixed.high - fixed.low


def test_bad_input_names_the_field() -> None:
    with pytest.raises(ValueError, match="acted_on <= decided"):
        clustered.acted_on_rate([(3, 2)], FIXED, ALPHA)
    with pytest.raises(ValueError, match="method"):
        clustered.per_pull_request([(1, 2)], "bayes", ALPHA)


def _aa_coverage(method: str, runs: int, looks: int, per_look: int, seed: int) -> tuple[float, float]:
    """A/A runs (both arms as in _coverage, 3.5 findings per pull request on average, so 7/6 acted on): the
    shares of runs whose difference intervals (rate, per pull request) contain 0 at every look."""
    rng = np.random.default_rng(seed)
    covered = [0, 0]
    for _ in range(runs):
        arms = []
        for _ in range(2):
            sizes = rng.integers(1, 7, size=looks * per_look)
            acted = rng.binomial(sizes, rng.beta(2.0, 4.0, size=sizes.size))
            arms.append(list(zip(acted.tolist(), sizes.tolist(), strict=True)))
        for i, metric in enumerate((clustered.acted_on_rate_difference, clustered.per_pull_request_difference)):
            for look in range(1, looks + 1):
                interval = metric(arms[0][: look * per_look], arms[1][: look * per_look], method, ALPHA)
                assert interval is not None
                if not interval.low <= 0 <= interval.high:
                    break
            else:
                covered[i] += 1
    return covered[0] / runs, covered[1] / runs


@pytest.mark.slow
def test_always_valid_differences_cover_at_every_look() -> None:
    runs = 300
    limit = 1 - ALPHA - 3 * math.sqrt(ALPHA * (1 - ALPHA) / runs)
    assert min(_aa_coverage(ALWAYS_VALID, runs, looks=30, per_look=10, seed=34)) >= limit
    assert max(_aa_coverage(FIXED, runs, looks=30, per_look=10, seed=34)) < limit
