from collections.abc import Collection
from typing import Any

def plain_keys(text: bytes | str, max_depth: int, /) -> bool: ...

class Checks:
    def __init__(
        self,
        *,
        type: type,
        strings: tuple[str, ...],
        string_lists: tuple[str, ...],
        line: str | None,
        end_line: str | None,
        path: str | None,
        id: str | None,
        unset: Any,
    ) -> None: ...
    def first_unclean(
        self, objects: list[Any], written: Collection[str] | None, distinct_ids: bool, start: int, /
    ) -> int | None: ...

class Members:
    def __init__(self, *, types: tuple[type, ...], unset: Any) -> None: ...
    def plain(self, text: bytes, value: Any, max_depth: int, /) -> bool: ...
