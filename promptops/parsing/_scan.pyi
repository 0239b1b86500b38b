def clean(data: object, /) -> bool: ...
def span_end(text: str, start: int, /) -> int: ...
def placed(
    items: list[object],
    path: str | None,
    line: str | None,
    end_line: str | None,
    ident: str | None,
    listed: tuple[str, ...],
    unset: object,
    /,
) -> int: ...
def marks(
    items: list[object],
    item_type: type,
    path: str | None,
    line: str | None,
    end_line: str | None,
    ident: str | None,
    listed: tuple[str, ...],
    unset: object,
    /,
) -> list[object]: ...
