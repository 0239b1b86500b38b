"""The GitHub collector: webhook deliveries, GraphQL review threads and pull request commits, offline or
fetched live, turned into feedback events (docs/usefulness.md)."""

from __future__ import annotations

from promptops.feedback.github.decide import MARKER, Collected, Settings, collect
from promptops.feedback.github.inputs import read_documents
from promptops.feedback.github.live import Api, fetch
from promptops.feedback.github.model import CollectError

__all__ = ["MARKER", "Api", "CollectError", "Collected", "Settings", "collect", "fetch", "read_documents"]
