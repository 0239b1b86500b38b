"""Scaffolding: planning (``plan``) and writing (``write``) new contracts, heads and rollout plans."""
