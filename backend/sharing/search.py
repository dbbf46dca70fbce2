"""A person's message search, with the chats shared with them: one list, best first.

Where the fan-out happens, and why: a person's own chats are answered by their directory's
index (``Chats.search_messages``); each chat shared with them is answered by **that chat's own
index** (``Session.search``, the RFC's per-chat path, on both engines), opened through its
owner's directory. Never the owner's directory index: it answers for every chat of the
owner's, and a filter after its global limit could both leak and lose hits. So a member's
search reads exactly the chats their membership names, nothing else of the owner's.

Membership is read from the store at every search (``shared_with_me``: one indexed read),
so a removal, a leave or the owner's delete takes the chat's hits away at the next search.
The owner's directory is asked for the chat by id: a chat deleted there but not yet announced
to sharing is not found and gives nothing.

Ranks are FTS5 bm25 in both indexes, each from its own statistics: the merged order is an
approximation (as in ``backend.chats.fanout``, whose snippet rule this follows), the set of
hits is exact whenever ``limit`` covers them all. Ties break by ``(rank, chat_id,
message_id)``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from backend.chats import Chats
from backend.chats.snippets import snippets
from backend.chats.text import phrase_query
from backend.errors import ChatsError
from backend.sharing.values import MessageHit, SharedBy, SharedChat

logger = logging.getLogger(__name__)


DirectoryOf = Callable[[str], Chats]
"""The directory of an owner, by their user id (the app's ``Services.directory``)."""


def search_with_shared(
    own: Chats,
    shared: Sequence[SharedChat],
    directory_of: DirectoryOf,
    query: str,
    *,
    limit: int,
) -> list[MessageHit]:
    """The person's own hits and those of the chats ``shared`` with them, best ``limit``.

    ``shared`` is ``Sharing.shared_with_me(person)`` read for this search. A shared chat that
    cannot be read now (deleted meanwhile, its owner's store failing) gives no hits rather
    than failing the person's whole search.
    """
    hits = [MessageHit(**hit.model_dump()) for hit in own.search_messages(query, limit=limit)]
    for chat in shared:
        hits += _shared_hits(chat, directory_of, query, limit)
    hits.sort(key=lambda hit: (hit.rank, hit.chat_id, hit.message_id))
    return hits[:limit]


def _shared_hits(
    chat: SharedChat, directory_of: DirectoryOf, query: str, limit: int
) -> list[MessageHit]:
    try:
        directory = directory_of(chat.owner_id)
        handle = directory.get_chat(chat.chat_id)
        if not handle.has_file:
            return []  # never written: nothing to find
        results = handle.session.search(query, limit=limit)
        title = directory.get_summary(chat.chat_id).title or "Chat"
    except (ChatsError, KeyError):
        logger.info("shared chat %s/%s not searchable now", chat.owner_id, chat.chat_id)
        return []
    shared_by = SharedBy(
        owner_id=chat.owner_id, owner_username=chat.owner_username, chat_title=title
    )
    match = phrase_query(query)
    if match is None:
        return []
    texts = snippets([r.content for r in results], match)
    return [
        MessageHit(
            chat_id=chat.chat_id,
            message_id=result.id,
            snippet=text,
            rank=float(result.rank),
            shared_by=shared_by,
        )
        for result, text in zip(results, texts, strict=True)
    ]
