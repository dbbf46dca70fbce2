"""The ``chats`` command line: a thin layer over the library (``backend.accounts``, ...).

Console script: ``chats = "backend.cli:main"``. Subcommands live one per module.
"""

from backend.cli.context import EXIT_OK, EXIT_PARTIAL, EXIT_USAGE
from backend.cli.main import cli, main

__all__ = ["EXIT_OK", "EXIT_PARTIAL", "EXIT_USAGE", "cli", "main"]
