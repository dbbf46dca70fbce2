"""Cross-chat message search as ``Chats`` offers it: the directory's index, or the fan-out.

Both paths take the same query tiers (``backend.sessions.search_terms.words_tiers``: the
exact phrase before every word in any order) and keep one hit per message, whichever tier
found it. The indexed path (:mod:`backend.chats.index`) answers every search; the fan-out
(:mod:`backend.chats.fanout`) opens each chat's own file and is what the index is verified
against. Limits are checked by the caller.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

from backend.chats.fanout import fanout_search
from backend.chats.index import CONVERSATION
from backend.chats.parts import DirectoryParts
from backend.chats.values import ChatHit
from backend.sessions import SearchResult, Sessions
from backend.sessions.search_terms import exact_first, words_tiers


class MessageSearch:
    """Every live chat's messages of one directory, searched by words."""

    def __init__(self, parts: DirectoryParts, *, reserved_metadata_keys: tuple[str, ...]) -> None:
        self._parts = parts
        self._reserved = reserved_metadata_keys

    def indexed(self, query: str, limit: int, chat_ids: Collection[str] | None) -> list[ChatHit]:
        """The directory index's hits after applying pending changes; ``chat_ids`` keeps
        the hits of those chats only."""
        tiers = words_tiers(query)
        if not tiers:
            return []
        index = self._parts.index
        index.flush()
        if isinstance(chat_ids, str):
            raise TypeError("chat_ids must be a collection of chat ids, not one string")
        only = None if chat_ids is None else frozenset(chat_ids)
        return exact_first(
            tiers, lambda match, n: index.store.search(match, n, only), _hit_key, limit
        )

    def fanout(self, query: str, limit: int) -> list[ChatHit]:
        """The same search answered by each chat's own index: one file open per chat with
        messages."""
        tiers = words_tiers(query)
        if not tiers:
            return []
        layout, files = self._parts.layout, self._parts.files
        chats = [
            (chat_id, generation, layout.chat_path(chat_id, generation))
            for _, chat_id, generation in self._parts.records.live_chats()
        ]

        def tier(match: str, wanted: int) -> list[ChatHit]:
            def per_chat() -> Iterator[tuple[str, list[SearchResult]]]:
                for chat_id, generation, path in chats:
                    if not files.exists(chat_id, generation):
                        continue  # a chat never written has nothing to find (RFC edge case 1)
                    with Sessions(path, reserved_metadata_keys=self._reserved) as sessions:
                        conversation = sessions.session(CONVERSATION)
                        yield chat_id, conversation.search_match(match, limit=wanted)

            return fanout_search(per_chat(), match, wanted)

        return exact_first(tiers, tier, _hit_key, limit)


def _hit_key(hit: ChatHit) -> tuple[str, str]:
    """One message of one chat, whichever tier found it."""
    return (hit.chat_id, hit.message_id)
