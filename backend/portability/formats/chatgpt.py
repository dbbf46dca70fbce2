"""ChatGPT data export: ``conversations.json`` (or ``conversations-NNN.json``), alone or in
the export ``.zip`` with its files.

Each conversation is ``{id | conversation_id, title, create_time, update_time, mapping,
current_node}``; ``mapping`` is ``{node_id: {id, parent, children, message}}``, a tree holding
every branch (edits and regenerations are siblings). Here:

* every node keeps its real parent; ``current_node`` is the visible leaf (imported last);
* nodes without a message or without any content (the empty root, blank placeholders) are
  skipped and their children hang on the nearest kept ancestor, so the tree never breaks;
* ``author.role`` ``user`` / ``assistant`` / ``system`` stay; ``tool`` becomes an assistant
  message with a ``dynamic-tool`` part (the tool's name, its output as text); ``code`` is a
  fenced code block; ``thoughts`` / ``reasoning_recap`` are ``reasoning`` parts; every such
  record says what it was in ``metadata.kind``;
* a message the source hid (``metadata.is_visually_hidden_from_conversation``, the custom
  instructions' ``user_editable_context``) is kept with ``metadata.hidden: true``;
* per-message ``metadata.model_slug`` becomes ``metadata.model``; ``create_time`` (seconds)
  the row's time (a missing one takes its parent's, so order never jumps);
* an image part (``image_asset_pointer``) becomes a ``file`` part with the image inline when
  the zip holds the file (the store keeps it once, by hash), else a text note naming it.
"""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Iterator
from typing import Any

from backend.chats import SourceKey
from backend.portability.document import (
    ImportedConversation,
    ImportedMessage,
    Refused,
    as_object,
    fit_title,
    seconds_to_ms,
)
from backend.portability.formats.reading import converted_records
from backend.portability.formats.tree import import_order
from backend.portability.import_source import ImportSource

NAME = "chatgpt"
_ROLES = {"user", "assistant", "system", "tool"}
_HIDDEN_TYPES = {"user_editable_context", "model_editable_context"}
_FILE_SCHEMES = ("file-service://", "sediment://")

Message = dict[str, Any]


def member_names(source: ImportSource) -> list[str]:
    """The conversation files of an export zip, in order (newer exports split them)."""
    names = [
        name
        for name in source.names()
        if name.rsplit("/", 1)[-1].startswith("conversations") and name.endswith(".json")
    ]
    return sorted(names)


def looks_like(record: dict[str, Any] | None) -> bool:
    return isinstance(record, dict) and isinstance(record.get("mapping"), dict)


def conversations(source: ImportSource) -> Iterator[ImportedConversation | Refused]:
    def convert_one(record: dict[str, Any]) -> ImportedConversation:
        return convert(record, source)

    return converted_records(source, member_names(source), convert_one, title_key="title")


def convert(record: dict[str, Any], source: ImportSource | None = None) -> ImportedConversation:
    conversation_id = record.get("conversation_id") or record.get("id")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError("conversation has no id")
    mapping = record.get("mapping")
    if not isinstance(mapping, dict):
        raise ValueError("conversation has no mapping")
    created_at = seconds_to_ms(record.get("create_time"), 0)
    updated_at = seconds_to_ms(record.get("update_time"), created_at)
    parents: dict[str, str | None] = {}
    children: dict[str, list[str]] = {}
    for node_id, node in mapping.items():
        if not isinstance(node, dict):
            raise ValueError(f"node {node_id!r} is not an object")
        parent = node.get("parent")
        parents[node_id] = parent if isinstance(parent, str) else None
        kids = node.get("children")
        children[node_id] = (
            [k for k in kids if isinstance(k, str)] if isinstance(kids, list) else []
        )
    converted: dict[str, Message] = {}
    times: dict[str, int | None] = {}
    for node_id, node in mapping.items():
        message = node.get("message")
        if isinstance(message, dict):
            result = convert_message(node_id, message, source)
            if result is not None:
                converted[node_id] = result
                created = message.get("create_time")
                times[node_id] = seconds_to_ms(created, 0) or None
    leaf = record.get("current_node")
    order, _ = import_order(
        parents, children, set(converted), leaf if isinstance(leaf, str) else None
    )
    messages: list[ImportedMessage] = []
    last_time: dict[str, int] = {}
    fallback = created_at
    for node_id, parent_id in order:
        time = times.get(node_id) or (last_time.get(parent_id, fallback) if parent_id else fallback)
        last_time[node_id] = time
        messages.append(ImportedMessage(converted[node_id], parent_id, time))
    if not created_at:
        created_at = min((m.created_at for m in messages), default=0)
    return ImportedConversation(
        source=SourceKey(NAME, conversation_id),
        title=fit_title(record.get("title")),
        created_at=created_at,
        updated_at=max(updated_at, created_at),
        messages=messages,
    )


def convert_message(
    node_id: str, message: dict[str, Any], source: ImportSource | None
) -> Message | None:
    """Our record of one ChatGPT message, or None for a node with nothing to show."""
    author = as_object(message.get("author"))
    role = author.get("role") if isinstance(author.get("role"), str) else "assistant"
    role = role if role in _ROLES else "assistant"
    content = as_object(message.get("content"))
    content_type = str(content.get("content_type") or "text")
    source_meta = as_object(message.get("metadata"))
    metadata: dict[str, Any] = {}
    parts: list[dict[str, Any]]
    if content_type in ("thoughts", "reasoning_recap"):
        parts = _reasoning_parts(content)
        metadata["kind"] = "reasoning"
    elif role == "tool" or content_type == "execution_output":
        text = _plain_text(content)
        if not text:
            return None
        name = author.get("name") if isinstance(author.get("name"), str) else None
        parts = [
            {
                "type": "dynamic-tool",
                "toolName": name or content_type,
                "toolCallId": node_id,
                "state": "output-available",
                "input": {},
                "output": text,
            }
        ]
        metadata["kind"] = "tool"
        role = "assistant"
    elif content_type == "code":
        code = _plain_text(content)
        if not code:
            return None
        language = content.get("language")
        language = language if isinstance(language, str) and language != "unknown" else ""
        parts = [{"type": "text", "text": f"```{language}\n{code}\n```"}]
        metadata["kind"] = "code"
    else:
        parts = _content_parts(content, source)
        if content_type != "text" and content_type != "multimodal_text":
            metadata["kind"] = content_type
    if not parts:
        return None
    if content_type in _HIDDEN_TYPES:  # custom instructions: context, never a turn
        role = "system"
    if source_meta.get("is_visually_hidden_from_conversation") or content_type in _HIDDEN_TYPES:
        metadata["hidden"] = True
    recipient = message.get("recipient")
    if isinstance(recipient, str) and recipient not in ("all", ""):
        metadata["recipient"] = recipient
    model = source_meta.get("model_slug")
    if isinstance(model, str) and model:
        metadata["model"] = model
    result: Message = {"id": node_id, "role": role, "parts": parts}
    if metadata:
        result["metadata"] = metadata
    return result


def _plain_text(content: dict[str, Any]) -> str:
    for key in ("text", "result"):
        value = content.get(key)
        if isinstance(value, str) and value.strip():
            return value
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str) and p.strip())
    return ""


def _reasoning_parts(content: dict[str, Any]) -> list[dict[str, Any]]:
    texts: list[str] = []
    thoughts = content.get("thoughts")
    if isinstance(thoughts, list):
        for thought in thoughts:
            if isinstance(thought, dict):
                summary, body = thought.get("summary"), thought.get("content")
                texts.extend(t for t in (summary, body) if isinstance(t, str) and t.strip())
    recap = content.get("content")
    if isinstance(recap, str) and recap.strip():
        texts.append(recap)
    return [{"type": "reasoning", "text": "\n\n".join(texts)}] if texts else []


def _content_parts(content: dict[str, Any], source: ImportSource | None) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    raw_parts = content.get("parts")
    if not isinstance(raw_parts, list):
        text = _plain_text(content)
        return [{"type": "text", "text": text}] if text else []
    texts: list[str] = []
    for item in raw_parts:
        if isinstance(item, str):
            if item.strip():
                texts.append(item)
            continue
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("text"), str) and item["text"].strip():
            texts.append(item["text"])
            continue
        pointer = item.get("asset_pointer")
        if isinstance(pointer, str):
            if texts:
                parts.append({"type": "text", "text": "\n".join(texts)})
                texts = []
            parts.append(_image_part(pointer, item, source))
    if texts:
        parts.append({"type": "text", "text": "\n".join(texts)})
    return parts


def _image_part(pointer: str, item: dict[str, Any], source: ImportSource | None) -> dict[str, Any]:
    file_id = pointer
    for scheme in _FILE_SCHEMES:
        file_id = file_id.removeprefix(scheme)
    member = source.find_by_prefix(file_id) if source is not None else None
    data = source.read_member(member) if source is not None and member else None
    if not data:
        return {"type": "text", "text": f"[image {file_id} is not in this export]"}
    media_type = mimetypes.guess_type(member or "")[0] or _sniff(data)
    encoded = base64.b64encode(data).decode("ascii")
    return {
        "type": "file",
        "mediaType": media_type,
        "filename": (member or file_id).rsplit("/", 1)[-1],
        "url": f"data:{media_type};base64,{encoded}",
    }


def _sniff(data: bytes) -> str:
    if data.startswith(b"\x89PNG"):
        return "image/png"
    if data.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data.startswith(b"GIF8"):
        return "image/gif"
    return "application/octet-stream"
