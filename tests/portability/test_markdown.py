"""Markdown export: the visible branch, code blocks kept, images written beside and linked."""

from __future__ import annotations

import base64
import hashlib
import io

import pytest

from backend.errors import NotFoundError
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


def _two_branches(chats) -> str:
    """A chat whose active branch ends at ``b``; ``a`` answers the same question on another."""
    chat_id = chats.create_chat("Branches").id
    session = chats.get_chat(chat_id).session
    session.append_message({"id": "q", "role": "user", "parts": [{"type": "text", "text": "q?"}]})
    session.append_message(
        {"id": "a", "role": "assistant", "parts": [{"type": "text", "text": "first answer"}]}
    )
    session.append_message(
        {"id": "b", "role": "assistant", "parts": [{"type": "text", "text": "second answer"}]},
        parent_id="q",
    )
    return chat_id


class TestMarkdownOfAGivenBranch:
    def test_a_leaf_exports_the_root_to_leaf_path_instead_of_the_active_branch(self, chats):
        chat_id = _two_branches(chats)
        out = io.StringIO()
        write_markdown(chats, chat_id, out, images={}.__setitem__, leaf_id="a")
        assert "q?" in out.getvalue() and "first answer" in out.getvalue()
        assert "second answer" not in out.getvalue()

    def test_without_a_leaf_the_active_branch_is_exported(self, chats):
        chat_id = _two_branches(chats)
        out = io.StringIO()
        write_markdown(chats, chat_id, out, images={}.__setitem__)
        assert "second answer" in out.getvalue() and "first answer" not in out.getvalue()

    def test_a_leaf_that_is_no_message_of_the_chat_is_not_found_and_nothing_is_written(self, chats):
        chat_id = _two_branches(chats)
        other_id = _two_branches(chats)
        chats.get_chat(other_id).session.append_message(
            {"id": "elsewhere", "role": "user", "parts": [{"type": "text", "text": "x"}]}
        )
        out = io.StringIO()
        with pytest.raises(NotFoundError) as raised:
            write_markdown(chats, chat_id, out, images={}.__setitem__, leaf_id="elsewhere")
        assert raised.value.kind == "message" and out.getvalue() == ""
