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
