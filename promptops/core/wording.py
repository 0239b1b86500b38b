"""Counts in messages, in the user's words: the one place that says how a number and its noun are written,
for the library (the review gate) and the CLI alike, so it sits outside ``promptops.cli``."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``number`` (thousands separated) and ``noun``, plural unless one: "1 segment", "2 segments",
    "1,000 bad records"; ``plural`` for a noun that does not take an s."""
    return f"{number:,} {noun}" if number == 1 else f"{number:,} {plural or noun + 's'}"
