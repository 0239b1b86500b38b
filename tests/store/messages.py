"""Reading the ingest command's stderr in tests."""

from __future__ import annotations


def errors_only(err: str) -> str:
    """``err`` without the warnings about rollout ids that have no plan: the benchmark logs name rollouts
    review-v7 and review-v8, which the test projects do not plan."""
    return "".join(line for line in err.splitlines(keepends=True) if not line.startswith("promptops: warning: "))
