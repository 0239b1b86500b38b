"""The one error the review gate raises: a tool or infrastructure failure (exit 3).

Evidence problems never raise: a missing artifact is a Skipped verdict and an unparsable one an advisory
signal. This error is for what stops the gate from looking at all (a repo that is not a directory, a broken
topology, an I/O error), and it carries one line that names the path or key at fault.
"""

from __future__ import annotations

from promptops.core.errors import PromptopsError


class ReviewGateError(PromptopsError):
    """The review could not be carried out; no result exists."""
