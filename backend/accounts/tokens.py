"""Secrets handed to a person: sign-in tokens, invite tokens, the setup code.

Only a SHA-256 of each is stored: someone who reads ``accounts.sqlite`` (a backup, a stolen
disk) cannot sign in with what they find. A plain hash (no salt, no stretching) is enough
because the secrets are random with at least 60 bits, not chosen by people. Looking a sign-in
up by its hash in an index is safe against timing: the attacker does not know the preimage of
the hash they would have to probe for. Comparisons of a given secret against one stored hash
(the setup code) use ``hmac.compare_digest``.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

TOKEN_BYTES = 32  # sign-in and invite tokens: 256 bits, URL-safe base64
SETUP_CODE_GROUPS = 3
SETUP_CODE_GROUP_CHARS = 4  # 12 Crockford base32 characters: 60 bits
_CODE_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"


def new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def hash_secret(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def new_setup_code() -> str:
    """A code a person can read off a console and type: ``7k2m-9q4x-0c8v``."""
    groups = (
        "".join(secrets.choice(_CODE_ALPHABET) for _ in range(SETUP_CODE_GROUP_CHARS))
        for _ in range(SETUP_CODE_GROUPS)
    )
    return "-".join(groups)


_LOOKALIKES = str.maketrans("oil", "011")


def normalize_setup_code(typed: str) -> str:
    """Forgive case, spaces and dashes, and the letters people mistake for digits."""
    cleaned = "".join(ch for ch in typed.lower() if ch.isalnum())
    return cleaned.translate(_LOOKALIKES)


def hash_setup_code(code: str) -> str:
    return hash_secret(normalize_setup_code(code))


def setup_code_matches(typed: str, stored_hash: str) -> bool:
    """Constant-time comparison of a typed code with the stored hash."""
    return hmac.compare_digest(hash_setup_code(typed), stored_hash)
