"""The defaults that ship inside the package: the shared partials, the re-ask prompt and the built-in contracts.

A project uses them by name and overrides any of them by putting its own file at the same place: a template
``templates/<name>`` of the project wins over the packaged ``templates/<name>``, and a project's
``versions/<contract>/contract.yaml`` wins over the packaged contract of that name (the whole contract: its
schemas come from the same place). ``heads/<contract>.j2`` are starting points for ``promptops contract new
--from``, never rendered from here.
"""

from __future__ import annotations

from pathlib import Path

# How outputs name a packaged file: not a repository path, so it must not look like one.
PACKAGE_PREFIX = "<promptops>/"


def location() -> Path:
    """The directory holding the packaged defaults (installed packages are plain directories)."""
    # What importlib.resources.files() answers for a package on disk, without importing importlib.resources
    # (tempfile, shutil, random and the compressors: a cost at every start-up).
    found = Path(__file__).parent
    if not found.is_dir():  # pragma: no cover - a zipped install; promptops ships as a wheel
        raise RuntimeError("promptops must be installed as a directory, not imported from a zip archive")
    return found


def templates_dir() -> Path:
    return location() / "templates"


def contracts_dir() -> Path:
    return location() / "versions"


def heads_dir() -> Path:
    return location() / "heads"


def builtin_contracts() -> list[str]:
    """Names of the contracts that ship with promptops."""
    return sorted(p.name for p in contracts_dir().iterdir() if (p / "contract.yaml").is_file())


def display(path: Path) -> str:
    """How outputs name a packaged file: ``<promptops>/templates/_reask.j2``."""
    return PACKAGE_PREFIX + path.relative_to(location()).as_posix()
