"""Nobody loses chats on upgrade: the first admin inherits the former single user's folder.

Before accounts, every tab was the one local user ``CHATS_USER`` (default ``local``), whose
chats live in ``<data_dir>/<CHATS_USER>/``. The rule (applied by ``AccountsCore._insert_user``):
the **first admin account made on a data folder** (by the setup form or by
``chats users add --admin``) gets that folder's name as its user id when

* the folder holds a directory database (``directory.sqlite``: the app has run there), and
* the name is a valid user id (lowercase letters, digits, dashes; the app never ran with any
  other ``CHATS_USER``, its identity check refused it), and
* no account has that id yet.

Otherwise the admin gets a fresh id and the folder stays as it was (never deleted, never
merged): a later ``CHATS_AUTH=none`` run still opens it.
"""

from __future__ import annotations

from pathlib import Path

from backend.accounts.names import is_valid_user_id
from backend.data_folder import DIRECTORY_FILE


def former_local_directory(data_dir: Path, local_user_id: str) -> str | None:
    """The former single user's directory id, if it has data to adopt."""
    user_id = local_user_id or "local"
    if not is_valid_user_id(user_id):
        return None
    return user_id if (Path(data_dir) / user_id / DIRECTORY_FILE).is_file() else None
