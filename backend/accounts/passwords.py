"""Password hashing (argon2id through ``argon2-cffi``) and the password policy.

The hasher runs at argon2-cffi's recommended parameters (RFC 9106's low-memory profile:
argon2id, 64 MiB, 3 passes, 4 lanes). ``CHATS_PASSWORD_HASH_PROFILE=cheapest`` drops to the
library's minimum so the test suite stays fast; it must never be used for real accounts.
Hashes carry their parameters, so a hash made under one profile still verifies under the other
and is upgraded (``needs_rehash``) at the next successful sign-in.

Unknown usernames are verified against a dummy hash made with the same parameters, so
"no such user" costs the same time as "wrong password" (no enumeration by timing).

Work that hashes or verifies runs on :class:`PasswordWork`, a small pool of its own with a
bounded queue, never on the default thread pool every event's identity lookup shares: a burst
of sign-in or setup posts waits (or is refused at once past the queue) without slowing anyone
else's events.

Policy: at least ``MIN_PASSWORD_CHARS`` characters, and at most ``MAX_PASSWORD_BYTES`` UTF-8
bytes, which bounds what one sign-in attempt can make the server hash.
"""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from backend.errors import InvalidPasswordError, ThrottledError

MIN_PASSWORD_CHARS = 10
MAX_PASSWORD_BYTES = 1024
PASSWORD_WORKERS = 2  # argon2 at 64 MiB and 4 lanes each: two at once fill a small machine
PASSWORD_QUEUE = 16  # waiting beyond the workers; past that a post is refused at once
BUSY_RETRY_S = 5
_PROFILES = {
    "default": profiles.RFC_9106_LOW_MEMORY,  # argon2-cffi's own default
    "cheapest": profiles.CHEAPEST,  # tests only
}


def check_password_policy(password: object) -> str:
    """Return ``password`` if the policy accepts it; else raise InvalidPasswordError."""
    if not isinstance(password, str):
        raise InvalidPasswordError("a password must be text")
    if len(password) < MIN_PASSWORD_CHARS:
        raise InvalidPasswordError(f"a password has at least {MIN_PASSWORD_CHARS} characters")
    if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
        raise InvalidPasswordError(f"a password has at most {MAX_PASSWORD_BYTES} bytes")
    return password


class Passwords:
    """argon2id hashing at one parameter profile (see the module docstring)."""

    def __init__(self, profile: str = "default") -> None:
        if profile not in _PROFILES:
            raise ValueError(f"unknown password hash profile {profile!r}")
        self._hasher = PasswordHasher.from_parameters(_PROFILES[profile])
        # Made now, not at the first unknown username: that first refusal would otherwise take
        # a hash plus a verification, and stand out.
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))

    def hash(self, password: str) -> str:
        return self._hasher.hash(password)

    def verify(self, stored_hash: str | None, password: str) -> bool:
        """True iff ``password`` matches. ``None`` (no password set) burns the same time."""
        if len(password.encode("utf-8")) > MAX_PASSWORD_BYTES:
            return False  # never hash an unbounded input; the policy refused it at set time
        try:
            if stored_hash is None:
                self._hasher.verify(self._dummy_hash, password)
                return False
            return self._hasher.verify(stored_hash, password)
        except (VerifyMismatchError, VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, stored_hash: str) -> bool:
        return self._hasher.check_needs_rehash(stored_hash)


P = ParamSpec("P")
R = TypeVar("R")


class PasswordWork:
    """A bounded pool for calls that hash or verify a password (see the module docstring).

    At most ``workers`` run at once and ``queue`` more wait; another call is refused at once
    with ThrottledError instead of piling up threads or memory.
    """

    def __init__(self, workers: int = PASSWORD_WORKERS, queue: int = PASSWORD_QUEUE) -> None:
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="passwords")
        self._slots = threading.BoundedSemaphore(workers + queue)

    async def run(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        if not self._slots.acquire(blocking=False):
            raise ThrottledError(BUSY_RETRY_S)
        try:
            future = self._pool.submit(fn, *args, **kwargs)
        except BaseException:
            self._slots.release()
            raise
        future.add_done_callback(lambda _: self._slots.release())
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
