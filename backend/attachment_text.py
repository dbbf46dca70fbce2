"""The text of an attached document as the model reads it, within a byte budget.

A user message's file parts (``backend.uploads.read_attachment``: text, markdown, code, CSV,
JSON, PDF) reach the model as text appended to the message. Each document gives at most
:data:`DOCUMENT_TEXT_BUDGET_BYTES` bytes of UTF-8 text; a longer one is cut at a character
boundary and followed by a note saying how much was left out, so the model never mistakes a
cut file for a whole one. A PDF's text is extracted with ``pypdf`` page by page, stopping once
the budget is filled, so a 500-page PDF costs the pages that fit, not the whole file.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from backend.uploads import PDF_TYPE, format_size

logger = logging.getLogger(__name__)

DOCUMENT_TEXT_BUDGET_BYTES = 32 * 1024
"""Bytes of one document's text given to the model (about 8k tokens)."""
_PDF_CACHE_SIZE = 16  # a PDF is re-read for every later turn of its chat: keep recent texts

_pdf_cache: OrderedDict[str, tuple[str | None, bool]] = OrderedDict()
_pdf_cache_lock = threading.Lock()


def document_text_for_model(part: Mapping[str, Any]) -> str | None:
    """The model's view of one non-image file part: a heading, its text, a note if cut.

    None for images and for parts whose payload is not an inline ``data:`` URL.
    """
    media_type = str(part.get("mediaType", ""))
    url = part.get("url")
    if media_type.startswith("image/") or not isinstance(url, str):
        return None
    header, comma, payload = url.partition(",")
    if not url.startswith("data:") or not comma or not header.endswith(";base64"):
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    name = str(part.get("filename") or "file")
    text, complete = _extract(data, media_type)
    heading = f"[attached file: {name} ({media_type}, {format_size(len(data))})]"
    if text is None:
        return f"{heading}\n[its text could not be read]"
    clipped, cut = clip_utf8(text, DOCUMENT_TEXT_BUDGET_BYTES)
    body = f"{heading}\n{clipped}"
    if cut or not complete:
        body += (
            f"\n[… cut: only the first {format_size(len(clipped.encode()))} of this file's text"
            f" is shown (the limit is {format_size(DOCUMENT_TEXT_BUDGET_BYTES)} per file)]"
        )
    return body


def document_text(data: bytes, media_type: str) -> str | None:
    """A document's text, extracted once (a PDF's pages up to the budget; None: unreadable)."""
    return _extract(data, media_type)[0]


def clip_utf8(text: str, budget: int) -> tuple[str, bool]:
    """At most ``budget`` UTF-8 bytes of ``text``, cut between characters; and whether cut."""
    encoded = text.encode("utf-8", "replace")
    if len(encoded) <= budget:
        return text, False
    return encoded[:budget].decode("utf-8", "ignore"), True


def _extract(data: bytes, media_type: str) -> tuple[str | None, bool]:
    """The document's text, and False when extraction stopped early at the budget."""
    if media_type == PDF_TYPE:
        return _pdf_text(data)
    return data.decode("utf-8", "replace"), True


def _pdf_text(data: bytes) -> tuple[str | None, bool]:
    """Extracted text by content hash (the cache keeps texts, never the PDFs themselves)."""
    digest = hashlib.sha256(data).hexdigest()
    with _pdf_cache_lock:
        if digest in _pdf_cache:
            _pdf_cache.move_to_end(digest)
            return _pdf_cache[digest]
    found = _read_pdf(data)
    with _pdf_cache_lock:
        _pdf_cache[digest] = found
        while len(_pdf_cache) > _PDF_CACHE_SIZE:
            _pdf_cache.popitem(last=False)
    return found


def _read_pdf(data: bytes) -> tuple[str | None, bool]:
    from pypdf import PdfReader

    try:
        reader = PdfReader(io.BytesIO(data))
        pages: list[str] = []
        used = 0
        for page in reader.pages:
            if used > DOCUMENT_TEXT_BUDGET_BYTES:
                return "\n\n".join(pages), False
            text = page.extract_text() or ""
            pages.append(text)
            used += len(text.encode("utf-8", "replace"))
        return "\n\n".join(pages), True
    except Exception:  # a hostile or broken PDF can raise anything; the turn must go on
        logger.info("could not read the text of an attached PDF", exc_info=True)
        return None, True
