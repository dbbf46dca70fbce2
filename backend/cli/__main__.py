"""``python -m backend.cli``: the same as the ``chats`` console script."""

from backend.cli.main import main

main()
