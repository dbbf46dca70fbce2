"""Streaming JSON records with ``ijson`` (C backend): bounded memory on any file size.

A 500 MB ``conversations.json`` is one JSON array; ``ijson.items(stream, "item")`` builds one
conversation at a time, so peak memory is one conversation, not the file. Numbers come back
as ``float`` (``use_float``), not ``Decimal``, like ``json.loads`` gives them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import IO, Any

import ijson

from backend.portability.document import ImportedConversation, Refused
from backend.portability.import_source import ImportSource
from backend.portability.limits import ImportLimitError

# yajl lexes a string cut by a read boundary again from its start: a long string costs its
# length squared over this (a 48 MiB one: 32 s at ijson's 64 KiB, about 2 s at 1 MiB).
READ_BYTES = 1024 * 1024
_WHITESPACE = b" \t\r\n\xef\xbb\xbf"  # and a UTF-8 byte order mark


def first_byte(stream: IO[bytes]) -> bytes:
    """The first significant byte (``[`` or ``{`` for JSON), leaving the stream at the start
    when it can seek (plain files); zip members are reopened by the caller instead."""
    head = stream.read(4096)
    if stream.seekable():
        stream.seek(0)
    stripped = head.lstrip(_WHITESPACE)
    return stripped[:1]


def records(stream: IO[bytes], name: str) -> Iterator[Any | Refused]:
    """Each element of a top-level array (or the single top-level object) of ``stream``.

    A syntax error, or a part past the import limits, ends the stream: the rest of the file
    is reported as one ``Refused`` (what was read before it stays imported).
    """
    try:
        yield from _parsed(stream)
    except ijson.JSONError as exc:
        yield Refused(f"{name} (from the broken part on)", f"not valid JSON: {exc}")
    except ImportLimitError as exc:
        yield Refused(f"{name} (from the refused part on)", str(exc))


def _parsed(stream: IO[bytes]) -> Iterator[Any]:
    prefix = "" if first_byte(stream) == b"{" else "item"
    yield from ijson.items(stream, prefix, use_float=True, buf_size=READ_BYTES)


def peek(stream: IO[bytes]) -> dict[str, Any] | None:
    """The first record of ``stream`` (see :func:`records`), or None if there is none.

    A file past the import limits raises ImportLimitError, so the person learns why.
    """
    try:
        for record in _parsed(stream):
            return record if isinstance(record, dict) else None
    except ImportLimitError:
        raise
    except Exception:  # a detector peeks; it never fails on what it cannot read
        return None
    return None


def converted_records(
    source: ImportSource,
    members: Sequence[str],
    convert: Callable[[dict[str, Any]], ImportedConversation],
    *,
    title_key: str,
) -> Iterator[ImportedConversation | Refused]:
    """``convert`` applied to each record of each member (of the plain file when not a zip).

    A record ``convert`` cannot handle is reported as ``Refused`` (its position and
    ``title_key`` value) and the next one is read: one bad conversation never stops the rest.
    """
    targets: list[str | None] = list(members) if source.zip is not None else [None]
    for member in targets:
        name = member or source.path.name
        with source.open(member) as stream:
            for index, record in enumerate(records(stream, name)):
                if isinstance(record, Refused):
                    yield record
                    continue
                try:
                    if not isinstance(record, dict):
                        raise ValueError("not a JSON object")
                    yield convert(record)
                except Exception as exc:
                    title = record.get(title_key) if isinstance(record, dict) else None
                    label = f"{name}[{index}]" + (f" {title!r}" if title else "")
                    yield Refused(label, f"unreadable: {exc!r}")
