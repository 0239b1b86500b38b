"""Reading the project's hand-kept files (``contract.yaml``, ``releases.yaml``, rollout plans, schemas,
``pyproject.toml``): bounded, regular files only, and for YAML, duplicate mapping keys refused.

PyYAML keeps the last of two equal keys without a word, so a lock or contract with a key written twice would
silently mean something other than what its first reader sees. Every problem is a ``(line, message)`` the
caller turns into its own one-line error naming the file.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Hashable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import yaml

MAX_BYTES = 4 * 1024 * 1024  # far above any real contract or lock; stops /dev/zero and runaway files


class YamlProblem(Exception):
    """Why a YAML file cannot be read; ``line`` is 1-based when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        self.line = line
        self.message = message
        super().__init__(f"line {line}: {message}" if line is not None else message)


def _first_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) <= 120 else f"{text[:117]}..."


@functools.cache
def _strict_loader() -> Any:
    """The loader class, built (and PyYAML imported) on the first parse: reading a file needs neither."""
    import yaml

    base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc]
        """PyYAML's safe loader (C scanner when built) refusing a mapping key given twice."""

        def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, Hashable):
                    if key in seen:
                        problem = f"duplicate key {key!r} (first on line {seen[key]})"
                        raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
                    seen[key] = key_node.start_mark.line + 1
            return super().construct_mapping(node, deep=deep)  # type: ignore[no-any-return]

        def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
            # Valid YAML whose value Python refuses (an integer of 5,000 digits): caught here, where the node's
            # line is known; the innermost node raises first, and YamlProblem passes through the outer ones.
            try:
                return super().construct_object(node, deep=deep)
            except (ValueError, OverflowError) as exc:
                raise YamlProblem(f"a value cannot be read: {_first_line(exc)}", node.start_mark.line + 1) from None

    def _timestamp_as_text(loader: StrictLoader, node: yaml.ScalarNode) -> str:
        # Dates stay the text written: the readers check them (an impossible one is then named by its key).
        return str(loader.construct_scalar(node))

    StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_text)

    return StrictLoader


def read_bytes(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; YamlProblem otherwise.

    The file is checked on the open descriptor (opened non-blocking), so a FIFO, ``/dev/zero`` or a
    directory, directly or through a symlink, is refused before a byte is read.
    """
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except IsADirectoryError:
        raise YamlProblem("is a directory, not a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the name
        raise YamlProblem(f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        mode = os.fstat(descriptor).st_mode
        if stat.S_ISDIR(mode):
            raise YamlProblem("is a directory, not a file")
        if not stat.S_ISREG(mode):
            raise YamlProblem("not a regular file")
        with os.fdopen(os.dup(descriptor), "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise YamlProblem(f"cannot read: {exc.strerror}") from None
    finally:
        os.close(descriptor)
    if len(data) > limit:
        raise YamlProblem(f"larger than {limit // (1024 * 1024)} MiB")
    return data


def read_text(path: Path, limit: int = MAX_BYTES) -> str:
    """``read_bytes`` decoded as UTF-8; YamlProblem naming the line of the first undecodable byte."""
    data = read_bytes(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise YamlProblem(f"not UTF-8 text (byte 0x{data[exc.start]:02X})", line) from None


def parse(text: str) -> Any:
    """``text`` parsed as YAML with duplicate keys refused; YamlProblem naming the line otherwise."""
    return compose(text)[0]


def compose(text: str) -> tuple[Any, yaml.Node | None]:
    """``parse``, and the composed node tree whose marks give each key's line."""
    import yaml

    loader = _strict_loader()(text)
    try:
        node = loader.get_single_node()
        return (loader.construct_document(node) if node is not None else None), node
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        line = mark.line + 1 if mark is not None else None
        if isinstance(exc, yaml.reader.ReaderError):  # a control character: no mark, but its position
            problem = f"unacceptable character #x{exc.character:04x}: control characters are not allowed"
            line = text.count("\n", 0, max(exc.position, 0)) + 1
        raise YamlProblem(f"invalid YAML: {problem}", line) from None
    except (ValueError, OverflowError, RecursionError) as exc:  # raised where no node names the line
        raise YamlProblem(f"a value cannot be read: {type(exc).__name__}: {_first_line(exc)}") from None
    finally:
        loader.dispose()


def load(path: Path, limit: int = MAX_BYTES) -> Any:
    """``read_text`` then ``parse``."""
    return parse(read_text(path, limit))
