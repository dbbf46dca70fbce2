"""Open WebUI chat export: a JSON array of chats (the "Export All Chats" file) or one chat.

Each chat is ``{id, title, created_at, updated_at, chat: {title, models, history: {messages:
{id: {id, parentId, childrenIds, role, content, timestamp, model, files}}, currentId}}}``
(times in seconds). ``history`` is the tree (every branch): parents are kept,
``childrenIds`` give sibling order, ``currentId`` is the visible leaf. ``content`` is
Markdown text; an image in ``files`` (``{type: "image", url: "data:..."}``) becomes a ``file``
part (kept once, by hash, by the store); ``model`` goes to ``metadata.model``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from backend.chats import SourceKey
from backend.portability.document import (
    ImportedConversation,
    ImportedMessage,
    Refused,
    fit_title,
    seconds_to_ms,
)
from backend.portability.formats.reading import converted_records
from backend.portability.formats.tree import import_order
from backend.portability.import_source import ImportSource

NAME = "openwebui"
_ROLES = {"user", "assistant", "system"}


def looks_like(record: dict[str, Any] | None) -> bool:
    chat = record.get("chat") if isinstance(record, dict) else None
    return isinstance(chat, dict) and isinstance(chat.get("history"), dict)


def conversations(source: ImportSource) -> Iterator[ImportedConversation | Refused]:
    return converted_records(source, (), convert, title_key="title")


def convert(record: dict[str, Any]) -> ImportedConversation:
    chat = record.get("chat")
    if not isinstance(chat, dict):
        raise ValueError("no chat object")
    chat_id = record.get("id") or chat.get("id")
    if not isinstance(chat_id, str) or not chat_id:
        raise ValueError("chat has no id")
    history = chat.get("history")
    nodes = history.get("messages") if isinstance(history, dict) else None
    if not isinstance(nodes, dict):
        raise ValueError("chat has no history.messages")
    created_at = seconds_to_ms(record.get("created_at") or chat.get("timestamp"), 0)
    parents: dict[str, str | None] = {}
    children: dict[str, list[str]] = {}
    converted: dict[str, dict[str, Any]] = {}
    times: dict[str, int] = {}
    for node_id, node in nodes.items():
        if not isinstance(node, dict):
            raise ValueError(f"message {node_id!r} is not an object")
        parent = node.get("parentId")
        parents[node_id] = parent if isinstance(parent, str) else None
        kids = node.get("childrenIds")
        children[node_id] = (
            [k for k in kids if isinstance(k, str)] if isinstance(kids, list) else []
        )
        message = convert_message(node_id, node)
        if message is not None:
            converted[node_id] = message
        times[node_id] = seconds_to_ms(node.get("timestamp"), created_at)
    leaf = history.get("currentId") if isinstance(history, dict) else None
    order, _ = import_order(
        parents, children, set(converted), leaf if isinstance(leaf, str) else None
    )
    messages = [ImportedMessage(converted[n], p, times[n]) for n, p in order]
    if not created_at:
        created_at = min((m.created_at for m in messages), default=0)
    updated_at = seconds_to_ms(record.get("updated_at"), created_at)
    return ImportedConversation(
        source=SourceKey(NAME, chat_id),
        title=fit_title(record.get("title") or chat.get("title")),
        created_at=created_at,
        updated_at=max(updated_at, created_at),
        messages=messages,
    )


def convert_message(node_id: str, node: dict[str, Any]) -> dict[str, Any] | None:
    role = node.get("role") if node.get("role") in _ROLES else "assistant"
    parts: list[dict[str, Any]] = []
    for file in node.get("files") or []:
        if not isinstance(file, dict):
            continue
        url = file.get("url")
        if isinstance(url, str) and url.startswith("data:"):
            media_type = url[5:].split(";", 1)[0] or "application/octet-stream"
            parts.append({"type": "file", "mediaType": media_type, "url": url})
        elif isinstance(file.get("name"), str):
            parts.append({"type": "text", "text": f"[file {file['name']} is not in this export]"})
    content = node.get("content")
    if isinstance(content, str) and content.strip():
        parts.append({"type": "text", "text": content})
    if not parts:
        return None
    message: dict[str, Any] = {"id": node_id, "role": role, "parts": parts}
    model = node.get("model")
    if isinstance(model, str) and model:
        message["metadata"] = {"model": model}
    return message
