"""Markdown export: the visible branch, code blocks kept, images written beside and linked."""

from __future__ import annotations

import base64
import hashlib
import io

from backend.portability import write_markdown
from tests.portability.conftest import PNG


def test_the_visible_branch_with_code_images_and_no_hidden_records(chats):
    chat_id = chats.create_chat("Notes").id
    session = chats.get_chat(chat_id).session
    url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    session.append_message(
        {
            "id": "s",
            "role": "system",
            "parts": [{"type": "text", "text": "ctx"}],
            "metadata": {"hidden": True},
        }
    )
    session.append_message(
        {
            "id": "u",
            "role": "user",
            "parts": [
                {"type": "text", "text": "look"},
                {"type": "file", "mediaType": "image/png", "url": url},
            ],
        }
    )
    session.append_message(
        {"id": "old", "role": "assistant", "parts": [{"type": "text", "text": "nope"}]}
    )
    session.append_message(
        {
            "id": "a",
            "role": "assistant",
            "parts": [{"type": "text", "text": "```py\nx = 1\n```"}],
            "metadata": {"model": "m1"},
        },
        parent_id="u",
    )
    images: dict[str, bytes] = {}
    out = io.StringIO()
    write_markdown(chats, chat_id, out, images=images.__setitem__)
    text = out.getvalue()
    name = f"attachments/{hashlib.sha256(PNG).hexdigest()}.png"
    assert text.startswith("# Notes\n")
    assert f"## User\n\nlook\n\n![file]({name})" in text
    assert "## Assistant (m1)\n\n```py\nx = 1\n```" in text
    assert "nope" not in text and "ctx" not in text
    assert images == {name: PNG}
