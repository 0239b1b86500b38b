"""What lint derives from its inputs, kept across runs beside Jinja's compiled templates, keyed by content.

An entry's file name is a hash of its kind and of everything it was derived from (the exact text), so an
edited input is never served stale: it simply has no entry yet. Entries live in the bytecode cache's own
directory (Jinja creates it per user, mode 0700), so no other user can plant one; without a file-system
bytecode cache (``PROMPTOPS_NO_TEMPLATE_CACHE=1``) nothing is cached. A missing, unreadable or damaged entry
is a miss, never an error. Only inputs are cached (parsed templates, the parsed configuration, contracts,
release locks), never findings: every run still checks every
template.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

from jinja2 import BytecodeCache


def directory(bytecode_cache: BytecodeCache | None) -> str | None:
    """The directory of a file-system bytecode cache, else None (no caching)."""
    found = getattr(bytecode_cache, "directory", None)
    return found if isinstance(found, str) else None


def entry(cache_dir: str | None, kind: str, *key: str) -> Path | None:
    """The file of the entry of ``kind`` derived from exactly ``key``; None without a cache directory."""
    if cache_dir is None:
        return None
    digest = hashlib.sha256("\0".join(key).encode()).hexdigest()
    return Path(cache_dir) / f"promptops-{kind}-{digest}.pickle"


def load(path: Path | None) -> Any:
    """The value stored at ``path``, or None when there is none (callers check its type)."""
    if path is None:
        return None
    try:
        return pickle.loads(path.read_bytes())  # our own per-user 0700 directory
    except Exception:  # a broken entry is a cache miss, never an error
        return None


def store(path: Path | None, value: Any) -> None:
    """Write ``value`` at ``path`` atomically; a value that cannot be pickled or written is just not cached."""
    if path is None:
        return
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    try:
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".promptops-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)  # readers see a whole entry or none
    except OSError:
        Path(temporary).unlink(missing_ok=True)
