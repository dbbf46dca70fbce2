"""A chat holding every kind of part (``rich_chat``), its export as a document
(``export_one``) and that document without what an import renews (``normalise``), for the
round-trip suites, which import them from here rather than from one another."""

from __future__ import annotations

import base64
import io
import json

from backend.chats import Chats
from backend.portability import write_chat
from backend.runtime.store import RuntimeStore
from tests.portability.conftest import PNG


def normalise(document: dict) -> dict:
    document = json.loads(json.dumps(document))
    document["chat"].pop("id")
    document.pop("source")
    if document["conversation"] is not None:
        document["conversation"].pop("id")
    return document


def export_one(chats: Chats, chat_id: str) -> dict:
    out = io.StringIO()
    write_chat(chats, chat_id, out)
    return json.loads(out.getvalue())


def rich_chat(chats: Chats) -> str:
    summary = chats.create_chat("A rich chat")
    chat = chats.get_chat(summary.id)
    session = chat.session
    image = {
        "type": "file",
        "mediaType": "image/png",
        "url": "data:image/png;base64," + base64.b64encode(PNG).decode(),
    }
    session.append_message(
        {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "hi"}, image]}
    )
    session.append_message(
        {"id": "a1", "role": "assistant", "parts": [{"type": "text", "text": "hello"}]}
    )
    session.append_message(
        {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "more"}]}
    )
    session.append_message(
        {"id": "a2", "role": "assistant", "parts": [{"type": "text", "text": "```py\nx = 1\n```"}]},
        parent_id="u2",
    )
    session.append_message(  # a regeneration: a sibling of a2
        {
            "id": "a2b",
            "role": "assistant",
            "parts": [{"type": "text", "text": "other"}],
            "metadata": {"model": "m"},
        },
        parent_id="u2",
    )
    session.append_message(
        {"id": "u3", "role": "user", "parts": [image]}, parent_id="a1"
    )  # an edit
    session.add_compaction("summary of the start", "u1", "a1")
    store = RuntimeStore(chat.database)
    store.ensure_conversation(
        summary.id,
        tenant_id="t",
        owner_principal_id="owner",
        participant_ids=("owner",),
        agent_id="default",
        agent_version_policy="pinned",
        agent_version=3,
        title="A rich chat",
        now=1_000,
    )
    store.put_state(summary.id, 0, '{"step":2}', 2_000)
    chats.record_chat_turn(summary.id, "other")
    return summary.id
