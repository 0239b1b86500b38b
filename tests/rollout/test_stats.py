"""Gate statistics against published values and reference figures."""

from __future__ import annotations

import pytest

from promptops.rollout.stats import (
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
