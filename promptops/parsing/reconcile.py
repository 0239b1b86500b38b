"""Repository-aware reconciliation of finding paths with the changed files (seed 000 §5.3.3, DESIGN.md §3.8).

Both sides are normalized the same way: leading ``./`` removed (repeatedly) and ``.`` segments dropped. A
path that is absolute (leading ``/``) or climbs (any ``..`` segment) never matches. Nothing else is
forgiven: no case folding, no Unicode normalization, no ``a/``/``b/`` diff-prefix stripping.
"""

from __future__ import annotations

from collections.abc import Iterable


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


def _all_plain(paths: tuple[str, ...]) -> bool:
    """True when no path can need normalizing: none empty or absolute, no segment starting with "."

    One pass of C substring searches over the NUL-joined paths (no repository path contains NUL); a hit only
    means the paths are normalized one by one.
    """
    try:
        joined = "\0".join(paths)
    except TypeError:
        return False
    return not (
        joined.startswith(("/", ".", "\0"))
        or joined.endswith("\0")
        or "\0/" in joined
        or "\0." in joined
        or "/." in joined
        or "\0\0" in joined
    )


class ChangedFiles:
    """The normalized changed files of one review target; build once and reuse across responses."""

    __slots__ = ("normal", "paths")

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = tuple(paths)
        if _all_plain(self.paths):
            self.normal = frozenset(self.paths)  # the usual case: every path already in normal form
        else:
            normal = (normalize_repo_path(p) for p in self.paths if isinstance(p, str))
            self.normal = frozenset(p for p in normal if p is not None)

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
