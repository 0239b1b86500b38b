"""The foundation every feature builds on: errors, versions, shapes, contract loading, release locks,
file input and output, outcomes. Imports nothing above it (tests/test_layers.py)."""
