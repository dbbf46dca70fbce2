"""Nobody loses chats on upgrade: the first admin inherits the former single user's folder.

Before accounts, every tab was the one local user ``CHATS_USER`` (default ``local``), whose
chats live in ``<data_dir>/<CHATS_USER>/``. The rule (applied by ``AccountsCore._insert_user``):
the **first admin account made on a data folder** (by the setup form or by
``chats users add --admin``) gets that folder's name as its user id when

* the engine holds that person's directory database (the app has run there): on SQLite the
  file ``<data_dir>/<CHATS_USER>/directory.sqlite``, on PostgreSQL the scope named as that
  file under the storage root (``docs/architecture.md`` "Storage engines"), which exists
  once a directory was opened there, as the file does; and
* the name is a valid user id (lowercase letters, digits, dashes; the app never ran with any
  other ``CHATS_USER``, its identity check refused it), and
* no account has that id yet.

Otherwise the admin gets a fresh id and the folder stays as it was (never deleted, never
merged): a later ``CHATS_AUTH=none`` run still opens it.
"""

from __future__ import annotations

import os

from backend.accounts.names import is_valid_user_id
from backend.config import Settings
from backend.data_folder import DIRECTORY_FILE
from backend.storage.engines import PostgresStorage, Storage


def former_local_directory(settings: Settings, storage: Storage) -> str | None:
    """The former single user's directory id, if ``storage`` (the accounts' own engine, the
    one ``settings`` names) holds a directory of theirs to adopt."""
    user_id = settings.user_id or "local"
    if not is_valid_user_id(user_id):
        return None
    database = settings.storage_root / user_id / DIRECTORY_FILE
    if isinstance(storage, PostgresStorage):
        name = os.path.abspath(os.fspath(database))
        return user_id if name in storage.scope_names(name) else None
    return user_id if database.is_file() else None
