"""Which import format a file holds, from its content (never from its name).

A ``.zip`` (by its magic bytes): a ``manifest.json`` of this project's archive; else the
first record of its ``conversations*.json`` (a ChatGPT ``mapping``, a Claude
``chat_messages``). A JSON file: the first record (the first element of a top-level array, or
the top-level object): ``format: chats.chat``, ``mapping``, ``chat_messages``, or an Open
WebUI ``chat.history``. Only the first record is parsed, so detecting a 500 MB file is cheap;
a file past the import limits (:mod:`backend.portability.limits`) is refused here already.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any, Protocol

from backend.errors import InvalidInputError
from backend.portability.document import MANIFEST_NAME, ImportedConversation, Refused
from backend.portability.formats import chatgpt, claude, native, openwebui
from backend.portability.formats.reading import peek
from backend.portability.import_source import ImportSource
from backend.portability.project_document import ImportedProject


class ImportFormat(Protocol):
    NAME: str

    def conversations(
        self, source: ImportSource
    ) -> Iterator[ImportedConversation | ImportedProject | Refused]: ...


_BY_RECORD: tuple[ModuleType, ...] = (native, chatgpt, claude, openwebui)


def detect(source: ImportSource) -> ImportFormat:
    """The format of ``source``; ``InvalidInputError`` naming what was found otherwise."""
    if source.zip is not None:
        if source.has(MANIFEST_NAME):
            with source.open(MANIFEST_NAME) as stream:
                if native.looks_like(peek(stream)):
                    return native
        for module in (chatgpt, claude):
            for member in module.member_names(source):
                with source.open(member) as stream:
                    if module.looks_like(peek(stream)):
                        return module
        raise InvalidInputError(
            f"{source.path}: a zip without a known export inside "
            "(expected manifest.json or conversations.json)"
        )
    with source.open(None) as stream:
        record: Any = peek(stream)
    for module in _BY_RECORD:
        if module.looks_like(record):
            return module
    raise InvalidInputError(
        f"{source.path}: not a known export (this project's, ChatGPT, Claude, Open WebUI)"
    )
