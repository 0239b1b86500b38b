"""Typed access to one YAML mapping of a contract file, reporting every problem by its dotted key.

Shared by the contract loader and the modules that read their own contract.yaml sections (tiers, the report
filter, merge semantics), so every broken contract fails the same way: one line naming the file and the key,
e.g. ``versions/x/contract.yaml: key 'report_filter.rules[1].min': must be a number``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any, TypeVar

from promptops.errors import ContractError, VersionError
from promptops.specs import Key, dotted

_T = TypeVar("_T")


class ConfigKeys:
    """One mapping of ``source`` at dotted ``prefix``; unread keys are rejected by ``reject_unknown``."""

    def __init__(
        self, data: Mapping[str, Any], source: str, path: Key = (), locate: Callable[[Key], int | None] | None = None
    ) -> None:
        self._data = data
        self._source = source
        self._path = path
        self._locate = locate  # the line of a key (promptops.specs.Document.line), when the file is known
        self._seen: set[str] = set()

    @property
    def source(self) -> str:
        return self._source

    def keys(self) -> Iterator[str]:
        """The keys present, in file order (each counts as read)."""
        for key in self._data:
            self._seen.add(str(key))
            yield str(key)

    def __contains__(self, key: str) -> bool:
        return key in self._data

    def __len__(self) -> int:
        return len(self._data)

    def _get(self, key: str) -> Any:
        self._seen.add(key)
        return self._data.get(key)

    def fail(self, key: str, problem: str) -> ContractError:
        """The error for ``key`` of this mapping (its line and full dotted name in the message)."""
        line = self._locate((*self._path, key)) if self._locate else None
        return ContractError(
            self._source, f"{f'line {line}: ' if line else ''}key '{dotted((*self._path, key))}': {problem}"
        )

    def string(self, key: str) -> str:
        value = self._get(key)
        if not isinstance(value, str) or not value:
            raise self.fail(key, "required, a non-empty string")
        return value

    def optional_string(self, key: str) -> str | None:
        value = self._get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise self.fail(key, "must be a non-empty string")
        return value

    def string_list(self, key: str) -> tuple[str, ...]:
        """A list of non-empty strings, or one string (read as a list of one); absent means empty."""
        value = self._get(key)
        if value is None:
            return ()
        if isinstance(value, str) and value:
            return (value,)
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "must be a list of non-empty strings")
        return tuple(value)

    def boolean(self, key: str, default: bool) -> bool:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.fail(key, "must be true or false")
        return value

    def positive_int(self, key: str, default: int) -> int:
        value = self._get(key)
        if value is None:
            return default
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise self.fail(key, "must be a positive integer")
        return value

    def number(self, key: str, default: float | None = None) -> float:
        value = self._get(key)
        if value is None and default is not None:
            return default
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise self.fail(key, "required, a number" if value is None else "must be a number")
        return value

    def version(self, key: str, parse: Callable[[str], _T]) -> _T:
        value = self._get(key)
        if not isinstance(value, str):
            raise self.fail(key, 'required, a quoted version string such as "1.0"')
        try:
            return parse(value)
        except VersionError as exc:
            raise self.fail(key, str(exc)) from None

    def section(self, key: str) -> ConfigKeys:
        value = self._get(key)
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping")
        return ConfigKeys(value, self._source, (*self._path, key), self._locate)

    def sections(self, key: str) -> list[ConfigKeys]:
        """A list of mappings (``rules: [{...}, {...}]``), each named ``key[i]`` in errors."""
        value = self._get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.fail(key, "must be a list of mappings")
        return [ConfigKeys(v, self._source, (*self._path, key, i), self._locate) for i, v in enumerate(value)]

    def optional_mapping(self, key: str) -> Mapping[str, Any]:
        value = self._get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping")
        return value

    def raw(self, key: str) -> Any:
        """The value as written (the caller checks it)."""
        return self._get(key)

    def reject_unknown(self) -> None:
        unknown = sorted(str(k) for k in self._data if k not in self._seen)
        if unknown:
            raise self.fail(unknown[0], "unknown key (check the spelling)")
