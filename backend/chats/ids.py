"""Chat and directory ids: minted server-side, validated wherever they reach the filesystem.

A chat id names a file under the directory's folder, so it is the one value a hostile client
could use to walk the filesystem. The rules:

* **Shape.** ``<16 body chars>-<6 tag chars>`` in lowercase Crockford base32 (no ``i l o u``),
  e.g. ``7k2m9q4x0c8v1n3b-h4t9wz``. Anything else (``../x``, ``/etc/passwd``, separators, NUL,
  dots, upper case, other lengths) is malformed: :class:`~backend.errors.InvalidIdError`
  (a ``ValueError``), raised before any path is built.
* **Ownership.** The tag is a keyed BLAKE2b digest of the body under a random key that lives
  in this directory's database, so an id minted by *another* directory (another user, another
  workspace) is malformed here too, and cannot be forged without reading this directory's
  file. The key travels with a backup of ``directory.sqlite``: restored ids stay valid.
* **Body entropy.** 80 random bits: collisions are not a practical concern, and a stale
  client cannot guess a neighbour's id.

Directory ids come from the server (a user or workspace id); they are validated as a single
safe path segment that means the same folder on every common filesystem, so a data folder
can be copied between machines: besides the character set, a name Windows reserves for a
device (``CON``, ``NUL``, ``COM1``, ... also with an extension: ``aux.txt``) and a name
ending in ``.`` (Windows drops it) are refused.
"""

from __future__ import annotations

import hashlib
import re
import secrets

from backend.errors import InvalidIdError

ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lowercase
BODY_CHARS = 16
TAG_CHARS = 6
ID_KEY_BYTES = 16
CHAT_ID_PATTERN = re.compile(rf"[{ALPHABET}]{{{BODY_CHARS}}}-[{ALPHABET}]{{{TAG_CHARS}}}")
DIRECTORY_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.@+-]{0,127}")
WINDOWS_DEVICE_NAMES = re.compile(r"(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?", re.IGNORECASE)


def new_id_key() -> bytes:
    """A fresh per-directory key for the ownership tag."""
    return secrets.token_bytes(ID_KEY_BYTES)


def _encode(value: int, chars: int) -> str:
    out = []
    for _ in range(chars):
        out.append(ALPHABET[value & 31])
        value >>= 5
    return "".join(reversed(out))


def _describe(value: object) -> str:
    """Why ``value`` is not an id, for the error message (no path is ever built from it)."""
    if not isinstance(value, str):
        return f"chat id must be a string, not {type(value).__name__}"
    if "\x00" in value:
        return "chat id contains a NUL byte"
    if "/" in value or "\\" in value:
        return "chat id contains a path separator"
    if value.startswith(".") or ".." in value:
        return "chat id contains a relative path"
    return "malformed chat id"


class ChatIds:
    """Mints and checks the chat ids of one directory (see the module docstring)."""

    def __init__(self, key: bytes) -> None:
        if len(key) < ID_KEY_BYTES:
            raise ValueError("id key too short")
        self._key = key

    def _tag(self, body: str) -> str:
        digest = hashlib.blake2b(body.encode("ascii"), key=self._key, digest_size=8).digest()
        return _encode(int.from_bytes(digest, "big"), TAG_CHARS)

    def mint(self) -> str:
        body = _encode(secrets.randbits(BODY_CHARS * 5), BODY_CHARS)
        return f"{body}-{self._tag(body)}"

    def validate(self, value: object) -> str:
        """Return ``value`` if it is a chat id of this directory; else raise InvalidIdError."""
        if not isinstance(value, str) or CHAT_ID_PATTERN.fullmatch(value) is None:
            raise InvalidIdError(value, _describe(value))
        body, tag = value.split("-")
        if not secrets.compare_digest(tag, self._tag(body)):
            raise InvalidIdError(value, "chat id was not issued by this directory")
        return value


def validate_directory_id(value: object) -> str:
    """Return ``value`` if it is one safe, portable path segment; else raise InvalidIdError."""
    if not isinstance(value, str) or DIRECTORY_ID_PATTERN.fullmatch(value) is None or ".." in value:
        raise InvalidIdError(value, "malformed directory id")
    if WINDOWS_DEVICE_NAMES.fullmatch(value):
        raise InvalidIdError(value, "directory id is a reserved device name on Windows")
    if value.endswith("."):
        raise InvalidIdError(value, "directory id must not end with '.'")
    return value
