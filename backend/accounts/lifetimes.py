"""How long sign-ins and invites live. Pure arithmetic on integer milliseconds.

Sign-ins slide: a sign-in used after half its lifetime is renewed to a full lifetime, so
someone active stays signed in while a forgotten tab's token expires ``ttl`` after its last
use. Renewing only past half-life keeps the write rate down to at most one ``UPDATE`` per
sign-in per half-lifetime rather than one per event.
"""

from __future__ import annotations

DEFAULT_INVITE_TTL_S = 7 * 24 * 3600
MAX_INVITE_TTL_S = 90 * 24 * 3600
EVENT_RETENTION_S = 24 * 3600  # the change feed keeps a day; a reader further behind re-reads all


def expires_at(now_ms: int, ttl_s: int) -> int:
    return now_ms + ttl_s * 1000


def needs_renewal(expires_at_ms: int, now_ms: int, ttl_s: int) -> bool:
    """True once less than half the lifetime is left."""
    return expires_at_ms - now_ms < ttl_s * 1000 // 2


def is_live(expires_at_ms: int, now_ms: int) -> bool:
    return now_ms < expires_at_ms
