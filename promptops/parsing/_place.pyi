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
