"""Figure: how soon the always-valid gate catches a real regression, and what the fixed bounds would claim.

The case of issue 30: the share of findings developers act on drops from 0.30 (baseline) to 0.22 (candidate),
40 findings per arm per look. The gate judges rates where higher is worse, so it sees the share not acted on
rise from 0.70 to 0.78, with a margin of (nearly) zero. Each seeded run is gated at every look on the
cumulative counts with the statistics module's bounds (the calls the gate makes); the figure is the median look
at which the gate first fails, and the share of runs caught by a given look. The A/A row (both arms at 0.70)
shows the chance of a false regression at any look over the same horizon.

Usage: ``.venv/bin/python benchmarks/gate_power.py [--runs 2000] [--looks 200] [--seed 30]``. Figures are
printed, never asserted.
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np

from promptops.rollout.stats import ALWAYS_VALID, FIXED, difference_bounds

MARGIN = 1e-6  # the smallest margin a plan accepts: any shown increase is a regression


def first_failures(method: str, candidate: np.ndarray, baseline: np.ndarray, per_look: int, alpha: float) -> list[int]:
    """Per run, the 1-based look at which the gate first fails (0: never within the horizon)."""
    firsts = []
    for run in range(candidate.shape[0]):
        first = 0
        for look in range(candidate.shape[1]):
            n = per_look * (look + 1)
            bound = difference_bounds(method, (int(candidate[run, look]), n), (int(baseline[run, look]), n), alpha)
            if bound.low > MARGIN:
                first = look + 1
                break
        firsts.append(first)
    return firsts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--looks", type=int, default=200)
    parser.add_argument("--per-look", type=int, default=40)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=30)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    shape = (args.runs, args.looks)
    baseline = rng.binomial(args.per_look, 0.70, size=shape).cumsum(axis=1)
    worse = rng.binomial(args.per_look, 0.78, size=shape).cumsum(axis=1)
    same = rng.binomial(args.per_look, 0.70, size=shape).cumsum(axis=1)
    print(f"{args.runs} runs, {args.per_look} findings per arm per look, up to {args.looks} looks, alpha {args.alpha}")
    for method in (ALWAYS_VALID, FIXED):
        firsts = first_failures(method, worse, baseline, args.per_look, args.alpha)
        caught = sorted(f if f else args.looks + 1 for f in firsts)
        by = {k: sum(1 for f in firsts if 0 < f <= k) / args.runs for k in (10, 20, 30, 50)}
        false = first_failures(method, same, baseline, args.per_look, args.alpha)
        print(
            f"{method:>12}: acted-on 0.30 -> 0.22: median first failing look {statistics.median(caught):g} "
            f"({statistics.median(caught) * args.per_look:g} findings per arm); caught by look "
            + ", ".join(f"{k}: {share:.1%}" for k, share in by.items())
            + f"; never within {args.looks}: {sum(1 for f in firsts if not f) / args.runs:.1%}"
            + f"; A/A false regression at any look: {sum(1 for f in false if f) / args.runs:.1%}"
        )


if __name__ == "__main__":
    main()
