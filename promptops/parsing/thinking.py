"""Reasoning that models put around their answer (``<think>`` blocks), removed before the diagnostic path's
reader looks for a JSON object in the text."""

from __future__ import annotations

import re

_TAG = re.compile(r"<(/?)think>", re.IGNORECASE)
_CLOSING = len("</think>")


def drop_thinking(text: str) -> str:
    """``text`` without its reasoning: each ``<think>`` block (an opening tag up to the first closing tag after
    it), then an unclosed opening tag with all after it, then everything up to the last bare closing tag (any
    case). Linear in the text: the tags are found in one pass, never by a search that restarts at each tag."""
    if "<" not in text:
        return text
    tags = _tags(text)
    if not tags:
        return text
    kept: list[tuple[int, int]] = []
    pos = index = 0
    while True:  # the blocks: an opening tag, then the first closing one after it
        while index < len(tags) and not tags[index][1]:
            index += 1
        if index == len(tags):
            break
        opened = tags[index][0]
        index += 1
        while index < len(tags) and tags[index][1]:
            index += 1
        if index == len(tags):
            break
        kept.append((pos, opened))
        pos = tags[index][0] + _CLOSING
        index += 1
    if kept:
        text = "".join([text[a:b] for a, b in kept if a < b] + [text[pos:]])
        tags = _tags(text)  # the joins may have made new tags ("<thi" + "nk>")
    closed = -1
    for at, opening in tags:
        if opening:  # cut off while thinking: nothing after the tag is an answer
            text = text[:at]
            break
        closed = at
    if closed >= 0:  # some APIs strip the opening tag and leave the reasoning before a bare closing tag
        text = text[closed + _CLOSING :]
    return text


def _tags(text: str) -> list[tuple[int, bool]]:
    """Where ``text`` has think tags, in order: (position, whether it is an opening tag)."""
    return [(found.start(), not found.group(1)) for found in _TAG.finditer(text)]
