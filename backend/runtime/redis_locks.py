"""``DistributedLockStore`` on Redis: leases every worker process sees, with fencing tokens.

Used whenever ``REFLEX_REDIS_URL`` is set (see :func:`backend.runtime.hosting.
lock_store_from_settings`). One Redis key per lease holds ``"<token> <owner>"`` with a
``PX`` expiry; a second key per lease key is a counter (``INCR``) that numbers acquisitions,
so every acquisition's token is larger than every earlier one on that key (fencing: see
:mod:`backend.runtime.locks`). Each operation is one Lua script, so check-and-act is atomic
on the server (compare-and-delete, compare-and-expire).

The ``redis`` package is imported when a store is created, not when this module is: the
backend imports and runs without it (the in-process store needs nothing).

If Redis restarts without persistence, the counters start again from 1 while the chats'
scopes remember larger tokens; the run queue then advances the counter past the stored token
(:meth:`RedisLockStore.advance_fence`) instead of refusing that conversation forever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redis.asyncio import Redis

DEFAULT_PREFIX = "chats:lease:"

# KEYS: lease, counter. ARGV: owner, ttl ms. The token of the (new or renewed) lease, or 0.
_ACQUIRE = """
local current = redis.call('GET', KEYS[1])
if current then
    local space = string.find(current, ' ', 1, true)
    if string.sub(current, space + 1) ~= ARGV[1] then
        return 0
    end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return tonumber(string.sub(current, 1, space - 1))
end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], token .. ' ' .. ARGV[1], 'PX', ARGV[2])
return token
"""
# KEYS: lease. ARGV: owner, ttl ms. 1 if owner's lease was renewed.
_REFRESH = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local space = string.find(current, ' ', 1, true)
if string.sub(current, space + 1) ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""
# KEYS: lease. ARGV: owner. 1 if owner's lease was deleted.
_RELEASE = """
local current = redis.call('GET', KEYS[1])
if not current then return 0 end
local space = string.find(current, ' ', 1, true)
if string.sub(current, space + 1) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""
# KEYS: counter. ARGV: floor. Raises the counter to at least floor.
_ADVANCE = """
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current < tonumber(ARGV[1]) then
    redis.call('SET', KEYS[1], ARGV[1])
end
return 1
"""


class RedisLockStore:
    """Leases in Redis (asyncio client); a :class:`~backend.runtime.locks.FencedLockStore`."""

    def __init__(self, client: Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self._client = client
        self._prefix = prefix
        self._acquire = client.register_script(_ACQUIRE)
        self._refresh = client.register_script(_REFRESH)
        self._release = client.register_script(_RELEASE)
        self._advance = client.register_script(_ADVANCE)
        # (key, owner) → the token of owner's newest acquisition of key.
        self._tokens: dict[tuple[str, str], int] = {}

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisLockStore:
        """A store on a new client for ``url`` (``redis://host:port/db``)."""
        try:
            from redis.asyncio import Redis
        except ImportError as exc:  # pragma: no cover - the app extra pins it
            raise RuntimeError(
                "REFLEX_REDIS_URL is set but the 'redis' package is not installed"
            ) from exc
        return cls(Redis.from_url(url), prefix=prefix)

    def _lease(self, key: str) -> str:
        return f"{self._prefix}{key}"

    def _counter(self, key: str) -> str:
        return f"{self._prefix}{key}:fence"

    async def try_acquire(self, key: str, owner: str, ttl_s: float) -> bool:
        token = int(
            await self._call(self._acquire, [self._lease(key), self._counter(key)], owner, ttl_s)
        )
        if not token:
            return False
        self._tokens[(key, owner)] = token
        return True

    async def refresh(self, key: str, owner: str, ttl_s: float) -> bool:
        return bool(await self._call(self._refresh, [self._lease(key)], owner, ttl_s))

    async def release(self, key: str, owner: str) -> bool:
        self._tokens.pop((key, owner), None)
        return bool(await self._call(self._release, [self._lease(key)], owner))

    async def holder(self, key: str) -> str | None:
        value = await self._client.get(self._lease(key))
        if value is None:
            return None
        text = value.decode() if isinstance(value, bytes) else str(value)
        return text.partition(" ")[2]

    async def fencing_token(self, key: str, owner: str) -> int | None:
        return self._tokens.get((key, owner))

    async def advance_fence(self, key: str, floor: int) -> None:
        """Make the next token on ``key`` larger than ``floor`` (a counter lost with Redis)."""
        await self._advance(keys=[self._counter(key)], args=[floor])

    async def aclose(self) -> None:
        await self._client.aclose()

    @staticmethod
    async def _call(script: Any, keys: list[str], owner: str, ttl_s: float | None = None) -> Any:
        args: list[Any] = [owner]
        if ttl_s is not None:
            args.append(max(1, int(ttl_s * 1000)))
        return await script(keys=keys, args=args)
