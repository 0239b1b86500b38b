"""Errors the library raises for bad configuration or input it cannot work with.

Model output never raises: the parser turns every response into a ParseOutcome. These exceptions are for
what the operator controls (contracts, policies, files), and each carries a one-line message that names the
file, key or field at fault, so the CLI can print it as is.
"""

from __future__ import annotations


class PromptopsError(Exception):
    """Base class: a problem the user must fix, described in one line."""


class ContractError(PromptopsError):
    """A contract (contract.yaml or one of its schemas) is missing, malformed or unsupported."""

    def __init__(self, source: str, problem: str) -> None:
        self.source = source
        self.problem = problem
        super().__init__(f"{source}: {problem}")


class PolicyError(PromptopsError):
    """A parser policy does not fit its contract (unknown schema floor, malformed version...)."""


class VersionError(PromptopsError, ValueError):
    """A version string does not follow the X.Y (schema) or X.Y[.Z] (prompt) grammar."""
