"""``python -m backend.cli``: the same as the ``chats`` console script."""

from backend.cli.main import main

if __name__ == "__main__":  # importing this module (a package walk) must not run the CLI
    main()
