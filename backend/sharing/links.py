"""Read-only share links: a snapshot of a branch, stored whole, behind a secret token.

* **A snapshot, not a pointer.** The owner's UI hands over the messages up to the one they
  chose, as plain values (:class:`~backend.sharing.values.SnapshotMessage`); they are stored
  here, so the page can show nothing of the live chat: no later message, no id of it or of
  any other chat, no memory. Files are stored only when the owner chose them.
* **The token** is 256 random bits (``backend.accounts.tokens.new_token``); only its SHA-256
  is stored, as for sign-ins, so a copy of the database opens no link.
* **Revoking** deletes the link and its snapshot in one transaction. :meth:`open_link`
  reads the store on every call and no process keeps a copy, so the next request anywhere
  (any app process, on either engine) answers "not found". A deleted chat's links answer
  "not found" while it is deleted, and are deleted with it when it ends.
"""

from __future__ import annotations

from collections.abc import Sequence

from backend.accounts import User
from backend.accounts.tokens import hash_secret, new_token
from backend.errors import ShareLinkNotFoundError
from backend.sharing.core import SharingCore
from backend.sharing.snapshots import checked_snapshot
from backend.sharing.values import (
    ChatRef,
    NewShareLink,
    SharedSnapshot,
    ShareLink,
    SnapshotMessage,
)

MAX_LINK_TOKEN_CHARS = 512  # far above a real token; anything longer is refused unread
_LINK_ID_CHARS = 16


class LinkOperations(SharingCore):
    """The owner's share links, and the page's one read (see the module docstring)."""

    def create_link(
        self,
        actor: User,
        chat: ChatRef,
        title: str,
        messages: Sequence[SnapshotMessage],
        *,
        include_attachments: bool = False,
    ) -> NewShareLink:
        """A link to ``messages`` (the branch up to the chosen message, oldest first).

        Only the owner (``authorize``'s errors otherwise); a snapshot over the limits of
        :mod:`backend.sharing.snapshots` is refused before anything is stored.
        """
        self.authorize(actor, chat, "share")
        title, kept, size = checked_snapshot(
            title, messages, self.settings, include_attachments=include_attachments
        )
        token = new_token()
        with self._db.transaction():
            self._require_live_chat(chat)
            now = self._now_ms()
            self._store.ensure_chat(chat.owner_id, chat.chat_id, now)
            link = ShareLink(
                id=new_token()[:_LINK_ID_CHARS],
                chat_id=chat.chat_id,
                title=title,
                created_at=now,
                message_count=len(kept),
                size_bytes=size,
                includes_attachments=include_attachments,
            )
            self._store.insert_link(link, hash_secret(token), chat.owner_id, kept)
        return NewShareLink(link=link, token=token)

    def list_links(self, actor: User) -> list[ShareLink]:
        """The owner's live links, newest first (every chat of theirs)."""
        return self._store.links_of_owner(actor.id)

    def revoke_link(self, actor: User, link_id: str) -> bool:
        """Delete one of ``actor``'s links and its snapshot; False if ``actor`` has no link
        of that id (someone else's link reads the same as none)."""
        with self._db.transaction():
            if not isinstance(link_id, str) or self._store.link_owned(link_id, actor.id) is None:
                return False
            self._store.delete_link(link_id)
            return True

    def open_link(self, token: str) -> SharedSnapshot:
        """What the link's page shows; ``ShareLinkNotFoundError`` for an unknown or revoked
        token, or a deleted chat's (one answer for all: the page says 404).

        Read in one read transaction, so a revoke racing with it gives the whole snapshot or
        nothing, never a part.
        """
        if not isinstance(token, str) or not token or len(token) > MAX_LINK_TOKEN_CHARS:
            raise ShareLinkNotFoundError()
        with self._db.snapshot():
            found = self._store.live_link(hash_secret(token))
            if found is None:
                raise ShareLinkNotFoundError()
            link_id, title, created_at = found
            messages = self._store.link_messages(link_id)
        return SharedSnapshot(title=title, created_at=created_at, messages=tuple(messages))
