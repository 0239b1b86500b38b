"""Repository-aware reconciliation of finding paths with the changed files.

Both sides are normalized the same way: leading ``./`` removed (repeatedly) and ``.`` segments dropped. A
path that is absolute (leading ``/``) or climbs (any ``..`` segment) never matches. Nothing else is
forgiven: no case folding, no Unicode normalization, no ``a/``/``b/`` diff-prefix stripping.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


def normalize_repo_path(path: str) -> str | None:
    """The comparable form of ``path``, or None when it can never match a changed file."""
    if path and path[0] != "/" and "./" not in path and ".." not in path and path != "." and not path.endswith("/."):
        return path  # already normal: the common case, decided without splitting
    if path.startswith("/"):
        return None
    segments = [s for s in path.split("/") if s != "."]
    if ".." in segments:
        return None
    normal = "/".join(segments)  # dropping "." segments also removes every leading "./"
    if not normal or normal.startswith("/"):  # ".//a" must not turn into an absolute-looking match
        return None
    return normal


class ChangedFiles:
    """The normalized changed files of one review target; build once and reuse across responses."""

    __slots__ = ("_normal", "_plain", "listed", "paths")
    paths: tuple[str, ...]
    listed: tuple[str, ...]
    _normal: frozenset[str] | None
    _plain: frozenset[str] | None

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = listed = tuple(paths)
        # One join and two C substring searches decide the usual case: no path is empty or absolute, and no
        # segment starts with "." (so every path is already normal). A hit, or a path that is not a str, only
        # means the paths are normalized one by one.
        try:
            joined = f"/{'/'.join(listed)}/"
        except TypeError:
            joined = "//"
        if "//" in joined or "/." in joined:
            normal = (normalize_repo_path(p) for p in listed if isinstance(p, str))
            self._normal = frozenset(p for p in normal if p is not None)
            self.listed = tuple(self._normal)
        else:
            self._normal = None  # built on first use
            self.listed = listed
        # A contract that turns a finding path's backslashes into "/" compares only backslash-free paths, so a
        # changed file whose name holds a backslash (legal on POSIX) can never match one: the typed checks,
        # which look at paths before any coercion, must leave such files out (``written``).
        backslash = "\\" in joined if joined != "//" else any("\\" in p for p in self.listed)
        self._plain = frozenset(p for p in self.listed if "\\" not in p) if backslash else None

    @property
    def normal(self) -> frozenset[str]:
        """The normalized changed files (``listed``, as a set)."""
        normal = self._normal
        if normal is None:
            normal = self._normal = frozenset(self.listed)
        return normal

    def written(self, plain: bool) -> Collection[str]:
        """What a finding's path is compared with as written, by the fast checks: the normal changed files, less
        those that hold a backslash when ``plain`` (paths are compared before any coercion)."""
        if plain and self._plain is not None:
            return self._plain
        return self.listed if len(self.listed) <= 16 else self.normal

    def __contains__(self, path: object) -> bool:
        """True when ``path`` reconciles with one of the changed files."""
        if not isinstance(path, str):
            return False
        if path in self.normal:  # a member of the set is already normal, so this is exact
            return True
        normal = normalize_repo_path(path)
        return normal is not None and normal in self.normal

    def __len__(self) -> int:
        return len(self.paths)

    def __repr__(self) -> str:
        return f"ChangedFiles({list(self.paths)!r})"

    def __reduce__(self) -> tuple[type[ChangedFiles], tuple[tuple[str, ...]]]:
        return (ChangedFiles, (self.paths,))  # the slots may live in C, where pickle and copy do not look
