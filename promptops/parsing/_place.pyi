from collections.abc import Iterable
from typing import Any, TypeVar

_T = TypeVar("_T")

def placed(
    items: list[object],
    path: object,
    line: object,
    end_line: object,
    ident: object,
    listed: tuple[str, ...],
    unset: object,
    /,
) -> int: ...
def marks(
    items: list[object],
    item_type: type,
    path: object,
    line: object,
    end_line: object,
    ident: object,
    listed: tuple[str, ...],
    unset: object,
    /,
) -> list[object]: ...
def plain_paths(paths: tuple[object, ...], /) -> bool: ...
def decoded_members(
    obj: object, slots: tuple[object, ...], item_type: type, item_slots: tuple[object, ...], unset: object, /
) -> int: ...
def checked(
    plan: tuple[object, ...], obj: object, items: list[object], listed: tuple[str, ...], count: int, /
) -> int: ...

class Views:
    """The slots of reconcile.ChangedFiles; __init__ calls self._general(listed) unless every path is plain."""

    paths: tuple[str, ...]
    listed: tuple[str, ...]
    listed_plain: tuple[str, ...]
    _normal: frozenset[str] | None
    _plain: frozenset[str] | None
    def __init__(self, paths: Iterable[str]) -> None: ...

def clean_outcome(
    cls: type[_T], diagnostics: list[Any], typed: object, versions: tuple[str, str], findings: int, /
) -> _T: ...
def accept(bound: tuple[object, ...], data: bytes | str, changed: object, /) -> object: ...
def itemwise(
    bound: tuple[Any, ...],
    fields: list[tuple[str, Any]],
    envelope: object,
    items_of: Any,
    decode: Any,
    scan: Any,
    data: object,
    repeats: dict[int, str],
    max_depth: int,
    /,
) -> tuple[dict[str, Any], list[Any], int] | None: ...
