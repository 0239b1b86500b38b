"""Gate statistics against published values and reference figures."""

from __future__ import annotations

import math

import pytest

from promptops.rollout.stats import (
    Interval,
    newcombe,
    non_inferiority_sample,
    sample_ratio_p_value,
    wilson,
    z_one_sided,
    zero_failure_sample,
)

Z95_TWO_SIDED = 1.959963984540054

# Newcombe (1998), "Two-sided confidence intervals for the single proportion", Table I, method 3 (Wilson).
WILSON = [
    ((81, 263), (0.2553, 0.3662)),
    ((15, 148), (0.0624, 0.1605)),
    ((0, 20), (0.0, 0.1611)),
    ((1, 29), (0.0061, 0.1718)),
]


@pytest.mark.parametrize(("counts", "bounds"), WILSON)
def test_wilson_matches_newcombe_table(counts: tuple[int, int], bounds: tuple[float, float]) -> None:
    interval = wilson(*counts, Z95_TWO_SIDED)
    assert (round(interval.low, 4), round(interval.high, 4)) == bounds


# Newcombe (1998), "Interval estimation for the difference between independent proportions", method 10.
NEWCOMBE = [(((56, 70), (48, 80)), (0.0524, 0.3339)), (((5, 56), (0, 29)), (-0.0381, 0.1926))]


@pytest.mark.parametrize(("arms", "bounds"), NEWCOMBE)
def test_newcombe_hybrid_score_matches_published(
    arms: tuple[tuple[int, int], tuple[int, int]], bounds: tuple[float, float]
) -> None:
    interval = newcombe(arms[0], arms[1], Z95_TWO_SIDED)
    assert (round(interval.low, 4), round(interval.high, 4)) == bounds


@pytest.mark.parametrize(("slo", "n"), [(0.01, 299), (0.02, 149), (0.05, 59)])
def test_zero_failure_sample_sizes(slo: float, n: int) -> None:
    assert zero_failure_sample(slo, 0.05) == n
    # exactly enough: with n clean responses the one-sided upper bound reaches the SLO, with n - 1 it does not
    assert (1 - slo) ** n <= 0.05 < (1 - slo) ** (n - 1)


@pytest.mark.parametrize(("rate", "margin", "n"), [(0.01, 0.005, 4897), (0.02, 0.01, 2424), (0.05, 0.02, 1469)])
def test_non_inferiority_sizes_match_the_research_note(rate: float, margin: float, n: int) -> None:
    assert non_inferiority_sample(rate, margin, 0.05) == n


def test_one_sided_wilson_figures_from_the_research_note() -> None:
    z = z_one_sided(0.05)
    assert round(z, 3) == 1.645
    # "a true rate of 0.5% against a 1% SLO: the Wilson U is 1.02% at n = 1000, 0.94% at 1500, 0.76% at 3000"
    assert [round(wilson(round(0.005 * n), n, z).high * 100, 2) for n in (1000, 1500, 3000)] == [1.02, 0.94, 0.76]


def test_edges() -> None:
    assert wilson(0, 0, 1.645) == wilson(0, 0, 2.0)  # nothing known: [0, 1]
    assert (wilson(0, 0, 1.645).low, wilson(0, 0, 1.645).high) == (0.0, 1.0)
    assert wilson(5, 5, 1.645).high == 1.0 and wilson(0, 5, 1.645).low == 0.0
    with pytest.raises(ValueError, match="successes"):
        wilson(3, 2, 1.645)
    with pytest.raises(ValueError, match="alpha"):
        z_one_sided(0.7)


def test_sample_ratio_mismatch() -> None:
    assert sample_ratio_p_value(500, 9500, 0.05) == pytest.approx(1.0)
    assert sample_ratio_p_value(520, 9480, 0.05) > 0.001  # noise
    assert sample_ratio_p_value(700, 9300, 0.05) < 0.001  # a skewed split
    assert sample_ratio_p_value(0, 0, 0.05) == 1.0


def _mixture_ratio(x: int, n: int, p: float, a: float, b: float) -> float:
    """The mixture likelihood ratio, half Beta(a, b) and half uniform, by numerical integration over the mixing
    rate (an oracle independent of the closed form's log-gamma terms)."""
    import numpy as np

    q = np.linspace(0, 1, 400_001)[1:-1]
    log_ratio = x * (np.log(q) - math.log(p)) + (n - x) * (np.log1p(-q) - math.log1p(-p))
    ratios = []
    for a_, b_ in ((a, b), (1.0, 1.0)):
        log_density = (a_ - 1) * np.log(q) + (b_ - 1) * np.log1p(-q)
        log_density -= np.log(np.trapezoid(np.exp(log_density - log_density.max()), q)) + log_density.max()
        ratios.append(float(np.trapezoid(np.exp(log_density + log_ratio), q)))
    return sum(ratios) / 2


@pytest.mark.parametrize(("x", "n"), [(3, 200), (12, 400), (40, 1000), (150, 3000)])
def test_confidence_sequence_bounds_are_where_the_mixture_reaches_one_over_alpha(x: int, n: int) -> None:
    from promptops.rollout.stats import _beta_prior, confidence_sequence

    interval = confidence_sequence(x, n, 0.05, 0.02)
    a, b = _beta_prior(0.02, 0.05, 1000)
    for bound in (interval.low, interval.high):
        assert _mixture_ratio(x, n, bound, a, b) == pytest.approx(20.0, rel=1e-3)
    assert _mixture_ratio(x, n, x / n, a, b) < 20.0  # the estimate is inside


@pytest.mark.parametrize("n", [50, 200, 1000, 5000, 50_000])
def test_always_valid_bounds_are_wider_than_the_single_look_ones(n: int) -> None:
    from promptops.rollout.stats import confidence_sequence, difference_sequence

    x = round(0.02 * n)
    cs, fixed = confidence_sequence(x, n, 0.05, 0.02), wilson(x, n, 1.645)
    assert cs.low < fixed.low and cs.high > fixed.high
    d, nd = difference_sequence((x, n), (x, n), 0.05), newcombe((x, n), (x, n), 1.645)
    assert d.low < nd.low and d.high > nd.high


def test_difference_sequence_is_the_published_conjugate_mixture_margin() -> None:
    # Waudby-Smith et al.'s std_conjmix_margin(t, rho2, alpha) times sigma, with rho2 = best_rho2_approx(t), for
    # t = 2000 responses (1,000 per arm) and sigma^2 = t Var(d) with each arm's rate smoothed to 31/1002.
    from promptops.rollout.stats import difference_sequence

    t, alpha = 2000, 0.05
    rho2 = (-2 * math.log(alpha) + math.log(-2 * math.log(alpha) + 1)) / t
    p = 31 / 1002
    sigma = math.sqrt(t * 2 * p * (1 - p) / 1000)
    margin = sigma * math.sqrt(2 * (t * rho2 + 1) * math.log(math.sqrt(t * rho2 + 1) / alpha) / (t**2 * rho2))
    interval = difference_sequence((30, 1000), (30, 1000), alpha)
    assert interval.high == pytest.approx(margin, rel=1e-12) and interval.low == pytest.approx(-margin, rel=1e-12)
    assert difference_sequence((0, 0), (3, 10), alpha) == Interval(0.0, -1.0, 1.0)


def test_sizes_under_each_method() -> None:
    from promptops.rollout.stats import confidence_sequence, non_inferiority_need, zero_failure_need

    assert [zero_failure_need("fixed", s, 0.05) for s in (0.01, 0.02, 0.05)] == [299, 149, 59]
    needs = [zero_failure_need("always-valid", s, 0.05) for s in (0.01, 0.02, 0.05)]
    for slo, n in zip((0.01, 0.02, 0.05), needs, strict=True):  # the smallest n whose clean upper bound passes
        assert confidence_sequence(0, n, 0.05, slo).high <= slo < confidence_sequence(0, n - 1, 0.05, slo).high
    assert needs == [584, 345, 159]
    assert non_inferiority_need("fixed", 0.02, 0.01, 0.05) == non_inferiority_sample(0.02, 0.01, 0.05)
    assert non_inferiority_need("always-valid", 0.02, 0.01, 0.05) > non_inferiority_need("fixed", 0.02, 0.01, 0.05)
