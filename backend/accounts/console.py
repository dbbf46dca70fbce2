"""What the run command checks and prints before serving (``python -m backend.accounts.console``).

* Refuses an engine that does not yet hold every store (``CHATS_STORAGE``), and a
  configuration that would serve people unsafely (:func:`check_startup`: ``none``
  mode on a non-loopback address, ``header`` mode without its header or proxies), with the
  sentence that says what to change; exit status 2.
* On a fresh install in ``local`` mode, prints the one-time setup code the first visitor must
  type to become the admin (so nobody else on the network can race the owner to it).
* Prints the host to listen on, for the run command to pass to the server.
"""

from __future__ import annotations

import sys

from backend.accounts.modes import check_startup
from backend.accounts.service import Accounts
from backend.config import Settings
from backend.errors import ConfigurationError
from backend.storage.engines import check_complete_engine


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
        check_complete_engine(settings)
        check_startup(settings, settings.listen_host)
    except (ConfigurationError, ValueError) as exc:
        print(f"Chats will not start: {exc}", file=sys.stderr)
        return 2
    if settings.auth_mode == "local":
        settings.data_dir.mkdir(parents=True, exist_ok=True)
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
