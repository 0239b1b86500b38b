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
    """``drop_thinking_re`` for ASCII text, where a tag is the same whatever its case: the tags are found from
    the text's few '<' (no lowered copy of it, no case-insensitive regex over it), and the blocks, an unclosed
    tag and a bare closing one are then cut as the three passes of ``drop_thinking_re`` cut them."""
    tags = _tags(text)
    if not tags:
        return text
    kept: list[tuple[int, int]] = []
    pos = index = 0
    while True:  # the blocks, as _THINK_BLOCK.sub removes them: an opening tag, then the first closing one
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
        pos = tags[index][0] + len("</think>")
        index += 1
    if kept:
        kept = [(a, b) for a, b in kept if a < b]
        if kept:  # what comes before the blocks and between them, then what follows the last
            text = "".join([text[a:b] for a, b in kept] + [text[pos:]])
            tags = _tags(text)  # the joins may have made new tags ("<thi" + "nk>")
        else:  # the text starts with its blocks: what follows them keeps its tags
            text = text[pos:]
            tags = [(at - pos, opening) for at, opening in tags if at >= pos]
    closed = -1
    for at, opening in tags:
        if opening:  # cut off while thinking: nothing after the tag is an answer
            text = text[:at]
            break
        closed = at
    if closed >= 0:  # the last bare closing tag: the reasoning before it had no opening tag
        text = text[closed + len("</think>") :]
    return text


def _tags(text: str) -> list[tuple[int, bool]]:
    """Where ``text`` (ASCII) has think tags, in any case, in order: (position, whether it is an opening tag).
    Tags cannot overlap: no character of a tag after its first is '<'."""
    tags: list[tuple[int, bool]] = []
    at = text.find("<")
    while at >= 0:
        head = text[at + 1 : at + 8].lower()
        if head.startswith("think>"):
            tags.append((at, True))
        elif head == "/think>":
            tags.append((at, False))
        at = text.find("<", at + 1)
    return tags


def drop_thinking_re(text: str) -> str:
    text = _THINK_BLOCK.sub("", text)
    opened = text.lower().find("<think>")
    if opened >= 0:  # cut off while thinking: nothing after the tag is an answer
        text = text[:opened]
    closed = text.lower().rfind("</think>")
    if closed >= 0:  # some APIs strip the opening tag and leave the reasoning before a bare closing tag
        text = text[closed + len("</think>") :]
    return text
