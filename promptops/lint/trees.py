"""Parsed template trees kept across lint runs, beside Jinja's compiled templates.

Jinja's bytecode cache spares recompiling a template, but lint rules read the template's syntax tree and the
names it reads (``jinja2.meta.find_undeclared_variables``, a full code-generator pass), which Jinja would
compute again every run: most of a pre-commit run's own time. Both are cached (``promptops.lint.cache``)
under a key of the Jinja version, the template's name and file and its exact source, so an edited template
is parsed afresh; a damaged entry is simply parsed again.
"""

from __future__ import annotations

from typing import NamedTuple

import jinja2
from jinja2 import meta, nodes
from jinja2.sandbox import SandboxedEnvironment

from promptops.lint import cache

_FORMAT = "2"


class Parsed(NamedTuple):
    tree: nodes.Template
    reads: frozenset[str]  # the names the template reads from its context


def parse(env: SandboxedEnvironment, source: str, name: str, filename: str) -> Parsed:
    """``env.parse(source, name, filename)`` and the names it reads, from the cache when an entry for exactly
    this source exists.

    The tree's nodes carry no environment, cached or not: rules read a tree but never evaluate it (``as_const``
    would need one), and attaching it to a cached tree would walk every node on every run.
    """
    entry = cache.entry(
        cache.directory(env.bytecode_cache), "tree", _FORMAT, jinja2.__version__, name, filename, source
    )
    cached = cache.load(entry)
    if isinstance(cached, tuple) and len(cached) == 2:
        tree, reads = cached
        if isinstance(tree, nodes.Template) and isinstance(reads, frozenset):
            return Parsed(tree, reads)
    tree = env.parse(source, name, filename)
    reads = frozenset(meta.find_undeclared_variables(tree))
    tree.set_environment(None)  # type: ignore[arg-type]
    cache.store(entry, (tree, reads))
    return Parsed(tree, reads)
