"""A client that skips the UI meets the same attachment rules where messages are stored."""

from __future__ import annotations

import base64

import pytest

from backend.errors import InputTooLargeError, InvalidInputError
from backend.runtime import ChatRuntime
from tests.runtime.helpers import settings
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

PNG_SIGNATURE = "iVBORw0KGgo="  # the 8 signature bytes of every PNG


def png_url(padding: int = 0) -> str:
    data = base64.b64decode(PNG_SIGNATURE) + b"\0" * padding
    return "data:image/png;base64," + base64.b64encode(data).decode()


def stored_count(chats, chat_id: str) -> int:
    chat = chats.get_chat(chat_id)
    return len(chat.session.get_history()) if chat.has_file else 0


class TestAttachmentsAreCheckedWhereMessagesAreStored:
    async def test_more_images_than_a_message_may_carry_are_refused(self, tmp_path, chats, closing):
        chat_id = chats.create_chat().id
        runtime = closing(
            ChatRuntime(
                settings(tmp_path, CHATS_MAX_ATTACHMENTS_PER_MESSAGE="2"), chats, ScriptedModel()
            )
        )
        with pytest.raises(InvalidInputError, match="at most 2 attachments"):
            await runtime.send_message(chat_id, "three", images=[png_url()] * 3)
        assert stored_count(chats, chat_id) == 0

    async def test_images_too_large_together_are_refused(self, tmp_path, chats, closing):
        chat_id = chats.create_chat().id
        runtime = closing(
            ChatRuntime(
                settings(tmp_path, CHATS_MAX_MESSAGE_ATTACHMENT_BYTES="3000"),
                chats,
                ScriptedModel(),
            )
        )
        with pytest.raises(InputTooLargeError):
            await runtime.send_message(chat_id, "big", images=[png_url(1000)] * 3)
        assert stored_count(chats, chat_id) == 0

    async def test_a_script_sent_as_an_image_is_refused(self, tmp_path, chats, closing):
        chat_id = chats.create_chat().id
        runtime = closing(ChatRuntime(settings(tmp_path), chats, ScriptedModel()))
        script = "data:image/png;base64," + base64.b64encode(b"<script>x()</script>").decode()
        with pytest.raises(InvalidInputError, match="not a PNG"):
            await runtime.send_message(chat_id, "look", images=[script])
        assert stored_count(chats, chat_id) == 0

    async def test_the_stored_part_names_the_sniffed_type_not_the_claimed_one(
        self,
        tmp_path,
        chats,
        closing,
    ):
        chat_id = chats.create_chat().id
        runtime = closing(ChatRuntime(settings(tmp_path), chats, ScriptedModel("ok")))
        claimed_gif = "data:image/gif;base64," + PNG_SIGNATURE
        ticket = await runtime.send_message(chat_id, "what?", images=[claimed_gif])
        await runtime.wait_idle(chat_id)
        stored = chats.get_chat(chat_id).session.get_message(ticket.user_message_id)
        assert stored["parts"][0] == {
            "type": "file",
            "mediaType": "image/png",
            "url": "data:image/png;base64," + PNG_SIGNATURE,
        }
