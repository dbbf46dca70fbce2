"""What the run command checks and prints before serving (``python -m backend.accounts.console``).

* Refuses a configuration that would serve people unsafely (:func:`check_startup`: ``none``
  mode on a non-loopback address, ``header`` mode without its header or proxies), with the
  sentence that says what to change; exit status 2.
* Reaches the storage engine (``CHATS_STORAGE``): a PostgreSQL server that cannot be reached,
  or is too old, stops the start with a sentence naming host and database (never the
  password); exit status 1.
* On a fresh install in ``local`` mode, prints the one-time setup code the first visitor must
  type to become the admin (so nobody else on the network can race the owner to it).
* Prints the host to listen on, for the run command to pass to the server.
"""

from __future__ import annotations

import sys

from backend.accounts.modes import check_startup
from backend.accounts.service import Accounts
from backend.config import Settings
from backend.errors import ConfigurationError, StorageError
from backend.storage.engines import check_storage

EXIT_STORAGE = 1
EXIT_CONFIGURATION = 2


def setup_banner(code: str) -> str:
    return (
        "\n"
        "  First start: no admin account yet.\n"
        f"  Open the app and create the admin account with the setup code  {code}\n"
        "  (or create it here with: chats users add --admin USERNAME)\n"
    )


def main() -> int:
    try:
        settings = Settings.from_env()
        check_startup(settings, settings.listen_host)
    except (ConfigurationError, ValueError) as exc:
        print(f"Chats will not start: {exc}", file=sys.stderr)
        return EXIT_CONFIGURATION
    try:
        check_storage(settings)
    except StorageError as exc:
        print(f"Chats will not start: {exc}", file=sys.stderr)
        return EXIT_STORAGE
    if settings.auth_mode == "local":
        accounts = Accounts(settings)
        try:
            code = accounts.setup_code_for_console()
        finally:
            accounts.close()
        if code is not None:
            print(setup_banner(code), file=sys.stderr)
    print(settings.listen_host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
