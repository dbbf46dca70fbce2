"""What the chat page asks of the browser and of an upload: scroll scripts, upload chunks."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import reflex as rx

UPLOAD_CHUNK_BYTES = 64 * 1024


async def upload_chunks(file: rx.UploadFile) -> AsyncIterator[bytes]:
    while chunk := await file.read(UPLOAD_CHUNK_BYTES):
        yield chunk


def scroll_to_bottom() -> str:
    return (
        "setTimeout(() => { const el = document.getElementById('transcript');"
        " if (el) el.scrollTop = el.scrollHeight; }, 50)"
    )


def scroll_to(message_id: str) -> str:
    element_id = json.dumps(f"msg-{message_id}")  # a JSON string literal is a safe JS literal
    return (
        f"setTimeout(() => {{ const el = document.getElementById({element_id});"
        " if (el) el.scrollIntoView({block: 'center'}); }, 300)"
    )
