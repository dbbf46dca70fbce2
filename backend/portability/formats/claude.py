"""Claude data export: ``conversations.json`` (alone or in the export ``.zip``).

Each conversation is ``{uuid, name, created_at, updated_at, chat_messages,
current_leaf_message_uuid?}``; each message ``{uuid, sender: human|assistant, text, content,
created_at, attachments, files, parent_message_uuid}``. ``parent_message_uuid`` makes a
tree (an edit or a retry is a sibling), so it is imported as one, never flattened; the root's
parent is the all-zero uuid. The visible leaf is ``current_leaf_message_uuid``, else the
newest message. ``content`` blocks: ``text`` → text, ``thinking`` → reasoning, ``tool_use`` /
``tool_result`` → ``dynamic-tool`` parts (input, output); an attachment's extracted text is
kept as a text part naming the file; a file without content (an image: the export carries no
bytes) is a text note naming it.
"""

from __future__ import annotations

import json
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

NAME = "claude"
_ROLES = {"human": "user", "user": "user", "assistant": "assistant", "system": "system"}


def looks_like(record: dict[str, Any] | None) -> bool:
    return isinstance(record, dict) and isinstance(record.get("chat_messages"), list)


def member_names(source: ImportSource) -> list[str]:
    return [n for n in source.names() if n.rsplit("/", 1)[-1] == "conversations.json"]


def conversations(source: ImportSource) -> Iterator[ImportedConversation | Refused]:
    return converted_records(source, member_names(source), convert, title_key="name")


def convert(record: dict[str, Any]) -> ImportedConversation:
    conversation_id = record.get("uuid")
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError("conversation has no uuid")
    raw = record.get("chat_messages")
    if not isinstance(raw, list):
        raise ValueError("conversation has no chat_messages")
    created_at = seconds_to_ms(record.get("created_at"), 0)
    parents: dict[str, str | None] = {}
    children: dict[str, list[str]] = {}
    converted: dict[str, dict[str, Any]] = {}
    times: dict[str, int] = {}
    previous: str | None = None
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("uuid"), str):
            continue
        message_id = item["uuid"]
        parent = item.get("parent_message_uuid")
        # Older exports have no parent links: the list order is the chain.
        parent_id = parent if isinstance(parent, str) else previous
        parents[message_id] = parent_id
        if parent_id is not None:
            children.setdefault(parent_id, []).append(message_id)
        previous = message_id
        message = convert_message(message_id, item)
        if message is not None:
            converted[message_id] = message
        times[message_id] = seconds_to_ms(item.get("created_at"), created_at)
    for node, parent in list(parents.items()):  # the zero uuid and other absent parents
        if parent is not None and parent not in parents:
            parents[node] = None
    leaf = record.get("current_leaf_message_uuid")
    leaf = leaf if isinstance(leaf, str) else previous
    order, _ = import_order(parents, children, set(converted), leaf)
    messages = [ImportedMessage(converted[n], p, times[n]) for n, p in order]
    if not created_at:
        created_at = min((m.created_at for m in messages), default=0)
    updated_at = seconds_to_ms(record.get("updated_at"), created_at)
    return ImportedConversation(
        source=SourceKey(NAME, conversation_id),
        title=fit_title(record.get("name")),
        created_at=created_at,
        updated_at=max(updated_at, created_at),
        messages=messages,
    )


def convert_message(message_id: str, item: dict[str, Any]) -> dict[str, Any] | None:
    role = _ROLES.get(str(item.get("sender")), "assistant")
    parts: list[dict[str, Any]] = []
    blocks = item.get("content")
    if isinstance(blocks, list) and blocks:
        for block in blocks:
            part = _block_part(block)
            if part is not None:
                parts.append(part)
    elif isinstance(item.get("text"), str) and item["text"].strip():
        parts.append({"type": "text", "text": item["text"]})
    for attachment in item.get("attachments") or []:
        if isinstance(attachment, dict):
            name = attachment.get("file_name") or "attachment"
            text = attachment.get("extracted_content")
            body = f"\n\n{text}" if isinstance(text, str) and text else ""
            parts.append({"type": "text", "text": f"[attached file {name}]{body}"})
    for file in item.get("files") or []:
        if isinstance(file, dict):
            name = file.get("file_name") or file.get("file_uuid") or "file"
            parts.append({"type": "text", "text": f"[file {name} is not in this export]"})
    if not parts:
        return None
    return {"id": message_id, "role": role, "parts": parts}


def _block_part(block: object) -> dict[str, Any] | None:
    if not isinstance(block, dict):
        return None
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str) and block["text"].strip():
        return {"type": "text", "text": block["text"]}
    if kind == "thinking" and isinstance(block.get("thinking"), str) and block["thinking"]:
        return {"type": "reasoning", "text": block["thinking"]}
    if kind == "tool_use":
        return {
            "type": "dynamic-tool",
            "toolName": str(block.get("name") or "tool"),
            "toolCallId": str(block.get("id") or ""),
            "state": "input-available",
            "input": block.get("input") if block.get("input") is not None else {},
        }
    if kind == "tool_result":
        return {
            "type": "dynamic-tool",
            "toolName": str(block.get("name") or "tool"),
            "toolCallId": str(block.get("tool_use_id") or block.get("id") or ""),
            "state": "output-available",
            "input": {},
            "output": _result_text(block.get("content")),
        }
    return None


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [c.get("text") for c in content if isinstance(c, dict)]
        return "\n".join(t for t in texts if isinstance(t, str))
    return json.dumps(content, ensure_ascii=False) if content is not None else ""
