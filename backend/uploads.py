"""What one message may carry: how many files, how many bytes, and of which types.

Rules, checked where the bytes arrive (the UI's upload handler) and again where a message is
stored (the runtime), so a client that skips the UI meets the same limits:

* a file's type is **sniffed from its first bytes** (``puremagic``), never taken from the name
  or the client's ``Content-Type``: a script renamed ``cat.png`` is refused;
* documents (:func:`read_attachment`): a PDF is recognised by its signature; text, markdown,
  code, CSV and JSON have none, so they are accepted by their extension only when the bytes
  are valid UTF-8 with no NUL (an executable renamed ``notes.txt`` is refused);
* a file is read in chunks and refused as soon as it passes ``max_file_bytes``, so a 100 MB
  upload costs at most the limit in memory, not the file (and its base64 copies);
* a message holds at most ``max_files`` attachments totalling at most ``max_total_bytes``;
* its text is at most ``max_message_bytes`` of UTF-8 (:func:`check_message_text`, called by
  the composer before sending and by the runtime before storing).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import puremagic

from backend.config import Settings
from backend.errors import InputTooLargeError, InvalidInputError

SNIFF_BYTES = 4096
"""Enough of a file's start for every signature in :data:`IMAGE_TYPES`."""
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
IMAGE_TYPE_NAMES = "PNG, JPEG, GIF or WebP"
PDF_TYPE = "application/pdf"
# Text documents by extension: the media type each is stored (and offered for download) as.
TEXT_EXTENSIONS: Mapping[str, str] = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".tsv": "text/tab-separated-values",
    ".json": "application/json",
    **dict.fromkeys(
        (".py", ".js", ".ts", ".tsx", ".jsx", ".java", ".c", ".h", ".cpp", ".hpp", ".cs",
         ".go", ".rs", ".rb", ".php", ".sh", ".sql", ".html", ".css", ".xml", ".yaml", ".yml",
         ".toml", ".ini", ".kt", ".swift", ".r", ".lua", ".log"),
        "text/plain",
    ),
}  # fmt: skip
IMAGE_EXTENSIONS: Mapping[str, str] = {
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
ATTACHABLE_NAMES = "images (PNG, JPEG, GIF, WebP), PDF, text, markdown, code, CSV or JSON"
DEFAULT_MAX_FILES = 10
DEFAULT_MAX_TOTAL_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    max_file_bytes: int
    max_files: int = DEFAULT_MAX_FILES
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES


@dataclass(frozen=True, slots=True)
class Upload:
    """One accepted file: its bytes and the media type its bytes prove."""

    name: str
    media_type: str
    data: bytes

    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode()}"

    @property
    def is_image(self) -> bool:
        return self.media_type in IMAGE_TYPES

    def file_part(self) -> dict[str, Any]:
        """The AI SDK file part that stores it (the session lifts the payload out by hash)."""
        return {
            "type": "file",
            "mediaType": self.media_type,
            "filename": self.name,
            "url": self.data_url(),
        }


def accepted_extensions() -> dict[str, list[str]]:
    """Media type -> extensions, as a file picker's ``accept`` takes them (a hint for the
    browser; the server checks the bytes again)."""
    accept: dict[str, list[str]] = {PDF_TYPE: [".pdf"]}
    for extension, media_type in {**IMAGE_EXTENSIONS, **TEXT_EXTENSIONS}.items():
        accept.setdefault(media_type, []).append(extension)
    return accept


def format_size(size: int) -> str:
    """A byte count as a person reads it: 812 B, 14.2 KB, 3.1 MB."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def data_url_size(url: str) -> int:
    """Decoded bytes of a base64 ``data:`` URL, without decoding it."""
    payload = url.partition(",")[2]
    return len(payload) * 3 // 4 - (len(payload) - len(payload.rstrip("=")))


def attachment_limits(settings: Settings) -> AttachmentLimits:
    return AttachmentLimits(
        max_file_bytes=settings.max_attachment_bytes,
        max_files=settings.max_attachments_per_message,
        max_total_bytes=settings.max_message_attachment_bytes,
    )


def sniff_media_type(head: bytes) -> str | None:
    """The media type the bytes declare by their signature, or None when nothing matches."""
    if not head:
        return None
    try:
        return str(puremagic.from_string(head[:SNIFF_BYTES], mime=True)) or None
    except puremagic.PureError:
        return None


async def _read_limited(name: str, chunks: AsyncIterator[bytes], limits: AttachmentLimits) -> bytes:
    received = bytearray()
    async for chunk in chunks:
        received += chunk
        if len(received) > limits.max_file_bytes:
            raise InputTooLargeError(f"attachment {name}", len(received), limits.max_file_bytes)
    return bytes(received)


async def read_image(name: str, chunks: AsyncIterator[bytes], limits: AttachmentLimits) -> Upload:
    """Read an uploaded image, stopping at the size limit; refuse what is not an image."""
    data = await _read_limited(name, chunks, limits)
    media_type = sniff_media_type(data[:SNIFF_BYTES])
    if media_type not in IMAGE_TYPES:
        raise InvalidInputError(f"{name} is not a {IMAGE_TYPE_NAMES} image.")
    return Upload(name, media_type, data)


async def read_attachment(
    name: str, chunks: AsyncIterator[bytes], limits: AttachmentLimits
) -> Upload:
    """Read an uploaded image or document, stopping at the size limit; refuse other types."""
    data = await _read_limited(name, chunks, limits)
    sniffed = sniff_media_type(data[:SNIFF_BYTES])
    if sniffed in IMAGE_TYPES or sniffed == PDF_TYPE:
        return Upload(name, sniffed, data)
    extension = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    media_type = TEXT_EXTENSIONS.get(extension)
    if media_type is None:
        raise InvalidInputError(f"{name} cannot be attached: attach {ATTACHABLE_NAMES} files.")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = "\0"
    if "\0" in text:
        raise InvalidInputError(f"{name} is not UTF-8 text, so it cannot be attached.")
    return Upload(name, media_type, data)


def check_message_text(text: str, settings: Settings) -> None:
    """Refuse a message text over ``settings.max_message_bytes`` of UTF-8 (a lone surrogate,
    made well-formed when stored, counts as its three bytes and is no error here)."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > settings.max_message_bytes:
        raise InputTooLargeError("the message", size, settings.max_message_bytes)


def check_message_files(sizes: Iterable[int], limits: AttachmentLimits) -> None:
    """Refuse a message whose attachments are too many or too large together."""
    sizes = list(sizes)
    if len(sizes) > limits.max_files:
        raise InvalidInputError(
            f"A message can carry at most {limits.max_files} attachments; this one has "
            f"{len(sizes)}."
        )
    total = sum(sizes)
    if total > limits.max_total_bytes:
        raise InputTooLargeError("the attachments of one message", total, limits.max_total_bytes)


def decode_image_url(url: str, limits: AttachmentLimits) -> Upload:
    """Check a ``data:`` image URL a client sent with a message: size, then sniffed type."""
    header, comma, payload = url.partition(",")
    if not url.startswith("data:") or not comma or not header.endswith(";base64"):
        raise InvalidInputError("an image must be sent as a base64 data: URL")
    # base64 is 4 bytes per 3: refuse by the encoded length before decoding anything.
    approx = len(payload) * 3 // 4
    if approx > limits.max_file_bytes + 2:
        raise InputTooLargeError("attachment", approx, limits.max_file_bytes)
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidInputError("an image's data: URL is not valid base64") from exc
    if len(data) > limits.max_file_bytes:
        raise InputTooLargeError("attachment", len(data), limits.max_file_bytes)
    media_type = sniff_media_type(data[:SNIFF_BYTES])
    if media_type not in IMAGE_TYPES:
        raise InvalidInputError(f"An attached file is not a {IMAGE_TYPE_NAMES} image.")
    return Upload("image", media_type, data)


def image_file_parts(
    urls: Sequence[str], kept: Sequence[Mapping[str, Any]], limits: AttachmentLimits
) -> list[dict[str, Any]]:
    """AI SDK file parts for images sent with a message, after every check above.

    ``kept`` are file parts the message already carries (an edit keeps its images): they count
    towards the message's limits. Each new part names the *sniffed* media type.
    """
    uploads = [decode_image_url(url, limits) for url in urls]
    kept_sizes = [len(str(p.get("url", ""))) * 3 // 4 for p in kept if p.get("type") == "file"]
    check_message_files([*kept_sizes, *(len(u.data) for u in uploads)], limits)
    return [
        {"type": "file", "mediaType": u.media_type, "url": f"data:{u.media_type};base64,{payload}"}
        for u, payload in zip(uploads, (url.partition(",")[2] for url in urls), strict=True)
    ]
