"""Usernames and user ids: what a person types, and the id their data lives under.

* **Username.** What a person signs in with. Normalised before it is stored or compared
  (NFKC, trimmed, case-folded), so ``Alice`` and ``alice`` are one account and a look-alike
  built from compatibility characters folds onto the original. Only ASCII letters, digits
  and ``. _ @ + -`` survive the check (an e-mail address from a proxy fits), 1–64 characters:
  no homoglyph can pass for another account.
* **User id.** Never typed; minted once and never changed, because it names the person's
  directory (``<data_dir>/<id>/``, :class:`backend.chats.Chats`) and their Reflex shared-state
  token (``user-<id>``, which allows lowercase letters, digits and dashes only). So an id is
  a readable slug of the username plus six random characters (``alice-7k2m9q``): readable in a
  file listing, unique even when a username is freed and taken again, and valid for both.
"""

from __future__ import annotations

import re
import secrets
import unicodedata

from backend.chats.ids import validate_directory_id
from backend.errors import InvalidIdError, InvalidUsernameError

MAX_USERNAME_CHARS = 64
USERNAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9._@+-]{0,63}")
# Also the rule of chatsapp/auth/identity.py: a Reflex token allows no "_" and no upper case.
USER_ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,62}")
_SLUG_CHARS = 40
_SUFFIX_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, as chat ids
_SUFFIX_CHARS = 6


def normalize_username(raw: object) -> str:
    """The stored form of a username; raises InvalidUsernameError with the rule it breaks."""
    if not isinstance(raw, str):
        raise InvalidUsernameError(raw, "a username must be text")
    name = unicodedata.normalize("NFKC", raw).strip().casefold()
    if not name:
        raise InvalidUsernameError(raw, "a username cannot be empty")
    if len(name) > MAX_USERNAME_CHARS:
        raise InvalidUsernameError(raw, f"a username has at most {MAX_USERNAME_CHARS} characters")
    if USERNAME_PATTERN.fullmatch(name) is None:
        raise InvalidUsernameError(
            raw,
            "a username starts with a letter or digit and holds only letters a-z, digits "
            "and . _ @ + -",
        )
    return name


def mint_user_id(username: str) -> str:
    """A fresh id for a normalised username (see the module docstring)."""
    slug = re.sub(r"[^a-z0-9]+", "-", username).strip("-")[:_SLUG_CHARS].strip("-") or "user"
    suffix = "".join(secrets.choice(_SUFFIX_ALPHABET) for _ in range(_SUFFIX_CHARS))
    return validate_user_id(f"{slug}-{suffix}")


def validate_user_id(value: object) -> str:
    """Return ``value`` if it can name both a directory and a Reflex token; else raise."""
    if not isinstance(value, str) or USER_ID_PATTERN.fullmatch(value) is None:
        raise InvalidIdError(value, "a user id holds 1-63 lowercase letters, digits or dashes")
    return validate_directory_id(value)


def is_valid_user_id(value: object) -> bool:
    try:
        validate_user_id(value)
    except InvalidIdError:
        return False
    return True
