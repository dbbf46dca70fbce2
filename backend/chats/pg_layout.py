"""Which chat generations have a conversation, on PostgreSQL: the twin of the ``chats/`` folder.

On SQLite "does this chat's file exist" is a question to the disk, and purging removes files.
On PostgreSQL nothing is on disk: a conversation is the rows of the scope its path names, so
the fact is a row of the directory (``chat_storage``), written before a generation's
conversation first opens and deleted once its rows are gone. The stale sweep reads these rows
where it would list the folder.

Removing a generation's conversation is the sessions package's to do (it owns those tables):
``Sessions.drop_conversation_rows(path)``, the PostgreSQL counterpart of unlinking the file.
"""

from __future__ import annotations

from backend.chats.layout import DirectoryLayout
from backend.sessions import Sessions
from backend.storage.postgres import PostgresScope

COMPONENT = "chats.files"


def _m001_chat_storage(db: PostgresScope) -> None:
    db.execute(
        """
        CREATE TABLE chat_storage (
            scope text COLLATE "C" NOT NULL,
            chat_id text COLLATE "C" NOT NULL,
            generation bigint NOT NULL,
            PRIMARY KEY (scope, chat_id, generation)
        )
        """
    )


MIGRATIONS = (_m001_chat_storage,)


class PgChatFiles:
    """:class:`backend.chats.layout.ChatFiles` as rows of the directory's scope."""

    _EXISTS = "SELECT 1 FROM chat_storage WHERE scope = ? AND chat_id = ? AND generation = ?"
    _INSERT = (
        "INSERT INTO chat_storage (scope, chat_id, generation) VALUES (?, ?, ?) "
        "ON CONFLICT (scope, chat_id, generation) DO NOTHING"
    )
    _STORED = (
        "SELECT chat_id, generation FROM chat_storage WHERE scope = ? ORDER BY chat_id, generation"
    )
    _DELETE = "DELETE FROM chat_storage WHERE scope = ? AND chat_id = ? AND generation = ?"

    def __init__(self, db: PostgresScope, layout: DirectoryLayout) -> None:
        self.db = db
        self.layout = layout
        self._key = (db.name,)
        db.migrate(COMPONENT, MIGRATIONS)

    def exists(self, chat_id: str, generation: int) -> bool:
        return self.db.query_one(self._EXISTS, (*self._key, chat_id, generation)) is not None

    def opening(self, chat_id: str, generation: int) -> None:
        """Note the generation before its conversation opens (written once: a write moves
        the directory's version, which other machines' watchers read)."""
        if not self.exists(chat_id, generation):
            self.db.execute(self._INSERT, (*self._key, chat_id, generation))

    def stored(self) -> list[tuple[str, int]]:
        return [(row[0], int(row[1])) for row in self.db.query(self._STORED, self._key)]

    def retire(self, chat_id: str, generation: int) -> None:
        if self.exists(chat_id, generation):
            Sessions.retire_file(self.layout.chat_path(chat_id, generation))

    def remove(self, chat_id: str, generation: int) -> None:
        if self.exists(chat_id, generation):
            Sessions.drop_conversation_rows(self.layout.chat_path(chat_id, generation))
            self.db.execute(self._DELETE, (*self._key, chat_id, generation))
