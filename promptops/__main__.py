"""``python -m promptops``: the same as the ``promptops`` command."""

from promptops.cli import main

if __name__ == "__main__":
    main()
