"""Parsed template trees kept across lint runs, beside Jinja's compiled templates.

Jinja's bytecode cache spares recompiling a template, but lint rules read the template's syntax tree and the
names it reads (``jinja2.meta.find_undeclared_variables``, a full code-generator pass), which Jinja would
compute again every run: most of a pre-commit run's own time. Both are cached
under a key of the Jinja version, the template's name and file and its exact source, in the bytecode cache's
own directory (Jinja creates it per user, mode 0700), so an edited template is parsed afresh and no other
user can plant an entry. Without a file-system bytecode cache (``PROMPTOPS_NO_TEMPLATE_CACHE=1``) nothing is
cached. Any unreadable or stale entry is simply parsed again.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import NamedTuple

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import SandboxedEnvironment

_FORMAT = "2"


class Parsed(NamedTuple):
    tree: nodes.Template
    reads: frozenset[str]  # the names the template reads from its context


def parse(env: SandboxedEnvironment, source: str, name: str, filename: str) -> Parsed:
    """``env.parse(source, name, filename)`` and the names it reads, from the cache when an entry for exactly
    this source exists."""
    directory = getattr(env.bytecode_cache, "directory", None)
    if not isinstance(directory, str):
        return _parse(env, source, name, filename)
    key = hashlib.sha256("\0".join((_FORMAT, jinja2.__version__, name, filename, source)).encode()).hexdigest()
    entry = Path(directory) / f"promptops-tree-{key}.pickle"
    try:
        tree, reads = pickle.loads(entry.read_bytes())  # our own per-user 0700 directory
        if isinstance(tree, nodes.Template) and isinstance(reads, frozenset):
            tree.set_environment(env)
            return Parsed(tree, reads)
    except Exception:  # a broken entry is a cache miss, never an error
        pass
    parsed = _parse(env, source, name, filename)
    _store(entry, parsed, env)
    return parsed


def _parse(env: SandboxedEnvironment, source: str, name: str, filename: str) -> Parsed:
    tree = env.parse(source, name, filename)
    return Parsed(tree, frozenset(meta.find_undeclared_variables(tree)))


def _store(entry: Path, parsed: Parsed, env: SandboxedEnvironment) -> None:
    tree = parsed.tree
    tree.set_environment(None)  # type: ignore[arg-type]  # the environment is not part of the entry
    try:
        data = pickle.dumps((tree, parsed.reads), protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, TypeError, AttributeError):
        return
    finally:
        tree.set_environment(env)
    try:
        handle, temporary = tempfile.mkstemp(dir=entry.parent, prefix=".promptops-tree-", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
        os.replace(temporary, entry)  # readers see a whole entry or none
    except OSError:
        Path(temporary).unlink(missing_ok=True)
