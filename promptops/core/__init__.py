"""The foundation every feature builds on: errors, versions, shapes, contract loading, release locks,
file input and output, outcomes. Imports nothing above it (tests/test_layers.py)."""

# The distribution that installs this package (pyproject's [project] name): what install hints name.
DISTRIBUTION = "promptops-toolchain"
