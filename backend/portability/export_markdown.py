"""A branch of a chat as Markdown: what a person reads, not a backup.

One ``## Role`` section per message of the active path, or of the root → ``leaf_id`` path
when one is given (the branch a tab shows; an id not in the chat is a ``NotFoundError``,
nothing written). Overlays are applied, so a compacted
stretch reads as its summary); text parts verbatim (code blocks stay code blocks); reasoning
as a quote; a tool call as its name and output in a fenced block; messages the source hid
(``metadata.hidden``) left out. An inline image is written as a file beside the Markdown
(``<folder>/<sha256>.<ext>``) and referenced by a relative link, so the ``.md`` stays small.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import mimetypes
import zipfile
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import IO, Any

from backend.chats import Chats
from backend.errors import NotFoundError
from backend.portability.document import as_object, check_exportable
from backend.sessions import is_tool_part, tool_name

ImageSink = Callable[[str, bytes], None]
"""``sink(relative_name, data)``: store one image the Markdown links to."""

_ROLE_TITLES = {"user": "User", "assistant": "Assistant", "system": "System"}


def write_markdown(
    chats: Chats,
    chat_id: str,
    out: IO[str],
    *,
    images: ImageSink,
    folder: str = "attachments",
    leaf_id: str | None = None,
) -> None:
    summary = chats.get_summary(chat_id)
    check_exportable(summary)
    chat = chats.get_chat(chat_id)
    if leaf_id is not None and (not chat.has_file or chat.session.get_message(leaf_id) is None):
        raise NotFoundError("message", leaf_id)
    created = datetime.fromtimestamp(summary.created_at / 1000, UTC).strftime("%Y-%m-%d %H:%M")
    out.write(f"# {summary.title}\n\n_Created {created} UTC_\n")
    if not chat.has_file:
        return
    for message in chat.session.history(leaf_id=leaf_id):
        metadata = as_object(message.get("metadata"))
        if metadata.get("hidden"):
            continue
        body = _body(message.get("parts") or [], images, folder)
        if not body:
            continue
        role = _ROLE_TITLES.get(str(message.get("role")), str(message.get("role")).title())
        model = metadata.get("model")
        heading = f"{role} ({model})" if isinstance(model, str) and model else role
        out.write(f"\n## {heading}\n\n{body}\n")


def _body(parts: Iterable[Any], images: ImageSink, folder: str) -> str:
    blocks: list[str] = []
    for part in parts:
        if not isinstance(part, dict):
            continue
        kind = str(part.get("type", ""))
        if kind == "text" and isinstance(part.get("text"), str):
            blocks.append(part["text"])
        elif kind == "reasoning" and isinstance(part.get("text"), str) and part["text"]:
            blocks.append("\n".join("> " + line for line in part["text"].splitlines()))
        elif kind == "file":
            blocks.append(_file(part, images, folder))
        elif is_tool_part(kind):
            name = tool_name(part)
            output = part.get("output")
            text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
            blocks.append(f"**Tool {name}**\n\n```\n{text or ''}\n```")
    return "\n\n".join(b for b in blocks if b)


def _file(part: dict[str, Any], images: ImageSink, folder: str) -> str:
    url = part.get("url")
    name = part.get("filename") or "file"
    if not isinstance(url, str):
        return f"[{name}]"
    header, comma, encoded = url.partition(",")
    if not (url.startswith("data:") and comma and header.endswith(";base64")):
        return f"![{name}]({url})"
    data = base64.b64decode(encoded)
    media_type = str(part.get("mediaType") or header[5:-7] or "application/octet-stream")
    extension = mimetypes.guess_extension(media_type) or ".bin"
    relative = f"{folder}/{hashlib.sha256(data).hexdigest()}{extension}"
    images(relative, data)
    if media_type.startswith("image/"):
        return f"![{name}]({relative})"
    return f"[{name}]({relative})"


def write_markdown_zip(chats: Chats, chat_ids: Iterable[str], path: str) -> list[str]:
    """A ``.zip`` with ``<id>.md`` per chat and the images they link to."""
    written: list[str] = []
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zip_file:
        names: set[str] = set()

        def add(relative: str, data: bytes) -> None:
            if relative not in names:
                names.add(relative)
                zip_file.writestr(relative, data)

        for chat_id in chat_ids:
            buffer = io.StringIO()
            write_markdown(chats, chat_id, buffer, images=add)
            zip_file.writestr(f"{chat_id}.md", buffer.getvalue())
            written.append(chat_id)
    return written
