"""Benchmark: ``promptops lint`` as a whole process, and rendering review-result with 50 changed files.

Targets (issue "Prompt templates: strict sandboxed rendering, and a contract-aware lint"):
- ``promptops lint`` on this repository's templates takes at most 1.5x the time of
  ``python -c "import click, jinja2, yaml"`` (the baseline, measured in the same run, interleaved);
- rendering the review-result prompt with 50 changed files takes under 2 ms.

Run from the repository root: ``.venv/bin/python benchmarks/bench_lint.py [--runs N] [--before TREE]``.
``--before TREE`` also times ``python -m promptops lint`` in another checkout (say a worktree of the previous
release, ``git worktree add --detach TREE v0.x``) on its own tree, in the same interleaved rounds, with this
tree's lint run the same way, and prints the median of the paired after / before ratios. The figures are
printed, never asserted: timing belongs in a benchmark, not in a test. Both processes run with Python's
bytecode cache enabled, as an installed package (pip compiles it) or a pre-commit hook environment would;
a warm-up run of each writes the caches first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("duckdb", "pyarrow", "jsonschema")  # msgspec is not heavy: the one loader of hand-kept files is built on it


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what an installed package does: cached bytecode
    env.pop("PROMPTOPS_NO_TEMPLATE_CACHE", None)
    return {**env, **extra}


def _lint_command() -> list[str]:
    script = shutil.which("promptops", path=str(Path(sys.executable).parent))
    if script is not None:
        return [script, "lint"]
    return [sys.executable, "-c", "from promptops.cli import main; main()", "lint"]


def _time(command: list[str], cwd: Path = ROOT, **env: str) -> float:
    start = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, env=_env(**env), capture_output=True, check=False)
    elapsed = time.perf_counter() - start
    if completed.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {completed.returncode}: {completed.stderr.decode()[-500:]}")
    return elapsed


def _tree_lint(tree: Path) -> float:
    """``python -m promptops lint`` with ``tree``'s promptops, on ``tree``."""
    return _time([sys.executable, "-m", "promptops", "lint"], cwd=tree, PYTHONPATH=str(tree))


def bench_process(runs: int, before: Path | None = None) -> None:
    baseline = [sys.executable, "-c", "import click, jinja2, yaml"]
    lint = _lint_command()
    for command in (baseline, lint):  # warm-up: bytecode caches, OS file cache
        _time(command)
    trees = (ROOT, before) if before is not None else ()
    for tree in trees:
        _tree_lint(tree)
    base_times: list[float] = []
    lint_times: list[float] = []
    cold_times: list[float] = []
    tree_times: dict[Path, list[float]] = {tree: [] for tree in trees}
    for round_ in range(runs):  # interleaved, so machine load hits all alike
        base_times.append(_time(baseline))
        lint_times.append(_time(lint))
        cold_times.append(_time(lint, PROMPTOPS_NO_TEMPLATE_CACHE="1"))
        for tree in trees if round_ % 2 else trees[::-1]:  # which tree goes first alternates
            tree_times[tree].append(_tree_lint(tree))
    b_min, b_med = min(base_times), statistics.median(base_times)
    print(f"whole process, {runs} interleaved runs each (min / median)")
    label = "python -c 'import click, jinja2, yaml'"
    print(f"  baseline  {label:<44}{b_min * 1000:7.1f} / {b_med * 1000:7.1f} ms")
    for label, times in (
        ("promptops lint (templates/)", lint_times),
        ("  same, PROMPTOPS_NO_TEMPLATE_CACHE=1", cold_times),
    ):
        low, mid = min(times), statistics.median(times)
        paired = statistics.median(t / b for t, b in zip(times, base_times, strict=True))
        print(
            f"  lint      {label:<44}{low * 1000:7.1f} / {mid * 1000:7.1f} ms   "
            f"ratio {low / b_min:.2f} / {mid / b_med:.2f}, median of the pairs {paired:.2f}  (target <= 1.5)"
        )
    if before is not None:
        after_times, before_times = tree_times[ROOT], tree_times[before]
        paired = statistics.median(a / b for a, b in zip(after_times, before_times, strict=True))
        after_ratio = statistics.median(a / z for a, z in zip(after_times, base_times, strict=True))
        before_ratio = statistics.median(b / z for b, z in zip(before_times, base_times, strict=True))
        print(
            f"  python -m promptops lint, this tree / {before}: medians {statistics.median(after_times) * 1000:.1f}"
            f" / {statistics.median(before_times) * 1000:.1f} ms, median of the pairs {paired:.3f}; against the"
            f" baseline (medians of the pairs) {after_ratio:.2f} / {before_ratio:.2f}"
        )
    probe = (
        "import sys; from promptops.cli import run; run(['lint']); "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(HEAVY)!r}))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], cwd=ROOT, env=_env(), capture_output=True, text=True, check=False
    )
    out = completed.stdout.strip().splitlines()
    print(f"  heavy modules imported by lint: {out[-1] if out else '?'}  (must be [])")


def bench_render(loops: int) -> None:
    sys.path.insert(0, str(ROOT))
    from promptops.core.contract import load_contract
    from promptops.render.renderer import Renderer

    contract = load_contract(ROOT, "review-result", check_schemas=False)
    files = [f"src/module_{i:02d}/file_{i:02d}.py" for i in range(50)]
    diff = "".join(f"--- a/{f}\n+++ b/{f}\n@@ -1,2 +1,2 @@\n-old = {i}\n+new = {i}\n" for i, f in enumerate(files))
    renderer = Renderer(ROOT)
    start = time.perf_counter()
    first = renderer.render(contract, changed_files=files, diff=diff)
    cold = time.perf_counter() - start
    samples = []
    for _ in range(loops):
        start = time.perf_counter()
        again = renderer.render(contract, changed_files=files, diff=diff)
        samples.append(time.perf_counter() - start)
    assert again.text == first.text  # deterministic
    print(f"render review-result, 50 changed files ({len(first.text)} characters), {loops} renders")
    print(f"  first render (parse + compile + render)   {cold * 1000:7.2f} ms")
    print(
        f"  cached render                              min {min(samples) * 1000:6.3f} ms   "
        f"median {statistics.median(samples) * 1000:6.3f} ms   (target < 2 ms)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--runs", type=int, default=15, help="whole-process runs of each command")
    parser.add_argument("--loops", type=int, default=500, help="renders for the render benchmark")
    parser.add_argument("--before", type=Path, help="another checkout whose lint to time in the same rounds")
    args = parser.parse_args()
    bench_process(args.runs, args.before.resolve() if args.before else None)
    bench_render(args.loops)


if __name__ == "__main__":
    main()
