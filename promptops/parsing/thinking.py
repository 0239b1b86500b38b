"""Reasoning that models put around their answer (``<think>`` blocks), removed before the generic reader
looks for a JSON object in the text."""

from __future__ import annotations

import re

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)


def drop_thinking(text: str) -> str:
    """``text`` without its reasoning: ``<think>`` blocks, an unclosed one with all after it, and everything
    before a bare closing tag (any case)."""
    if "<" not in text:
        return text  # no tag at all: spare the three passes below
    if text.isascii():
        return drop_thinking_ascii(text)
    return drop_thinking_re(text)


def drop_thinking_ascii(text: str) -> str:
    """``drop_thinking_re`` for ASCII text, where lowercasing keeps every index: plain searches in one
    lowered copy instead of a case-insensitive regex over the whole text."""
    lowered = text.lower()
    kept: list[tuple[int, int]] = []
    pos = 0
    while (opened := lowered.find("<think>", pos)) >= 0:  # the blocks, as _THINK_BLOCK.sub removes them
        closed = lowered.find("</think>", opened + 7)
        if closed < 0:
            break
        kept.append((pos, opened))
        pos = closed + 8
    if kept:
        kept.append((pos, len(text)))
        text = "".join(text[a:b] for a, b in kept)
        lowered = "".join(lowered[a:b] for a, b in kept)
    opened = lowered.find("<think>")
    if opened >= 0:
        text, lowered = text[:opened], lowered[:opened]
    closed = lowered.rfind("</think>")
    if closed >= 0:
        text = text[closed + len("</think>") :]
    return text


def drop_thinking_re(text: str) -> str:
    text = _THINK_BLOCK.sub("", text)
    opened = text.lower().find("<think>")
    if opened >= 0:  # cut off while thinking: nothing after the tag is an answer
        text = text[:opened]
    closed = text.lower().rfind("</think>")
    if closed >= 0:  # some APIs strip the opening tag and leave the reasoning before a bare closing tag
        text = text[closed + len("</think>") :]
    return text
