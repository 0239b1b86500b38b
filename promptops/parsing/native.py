"""The parser's C extension, selected here and nowhere else.

``checks`` is the module ``_checks`` (the fast path's decline tests), or None when it was not built (installed
without a C compiler): the parser then reads every response with the diagnostic path alone, with identical
outcomes, only slower. CI fails when it does not build (tests/ci/test_native_build.py).
"""

from __future__ import annotations

from types import ModuleType

checks: ModuleType | None
try:
    from promptops.parsing import _checks as checks
except ImportError:
    checks = None
