"""When two findings at the same place say the same thing: token-set overlap of their texts.

Reviewer contracts word findings at different lengths: a five-word title (code-review-findings) against a
two-sentence description (reviewer-finding). Jaccard (shared / all tokens) punishes that length gap, so two findings
about one SQL injection score low merely because one is longer. The overlap coefficient (Szymkiewicz-Simpson: shared
tokens / tokens of the shorter text) asks instead whether the shorter text is contained in the longer one; it is
what rapidfuzz's ``token_set_ratio`` approximates, computed here on token sets with the standard library (a few
hundred comparisons per merge do not justify a compiled dependency).

Tokens: lowercase runs of letters, digits and ``_`` (so ``user_id`` stays one token), a trailing plural
``s`` removed from words longer than three letters (``users`` = ``user``), and a short list of English
function words dropped. Negations (not, no, never, without) are kept: they change what a finding says.
Two findings are near-duplicates when, for some pair of their texts (title or message of each), the overlap
is at least the threshold (default 0.6) and the texts share at least one token.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

DEFAULT_THRESHOLD = 0.6

_WORD = re.compile(r"[a-z0-9_]+")
_STOPWORD_TEXT = """
a an the of to in on at for and or is are was were be been being by with as from this that these those it its
into via than then there their can could should would may might will shall do does did has have had which who
whom whose what when where while
"""
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def tokens(text: str) -> frozenset[str]:
    """The comparable words of ``text``."""
    out = set()
    for word in _WORD.findall(text.lower()):
        if word in _STOPWORDS:
            continue
        if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
            word = word[:-1]
        out.add(word)
    return frozenset(out)


def overlap(a: frozenset[str], b: frozenset[str]) -> float:
    """Shared tokens over the size of the smaller set (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / min(len(a), len(b))


def similarity(texts_a: Iterable[frozenset[str]], texts_b: Iterable[frozenset[str]]) -> float:
    """The best overlap between any text of one finding and any text of the other."""
    b = list(texts_b)
    return max((overlap(x, y) for x in texts_a for y in b), default=0.0)
