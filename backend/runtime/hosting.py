"""What a process serving chats checks and builds from its settings: an engine it can reach,
storage durability, the lock store.

The app (``chatsapp/services.py``) and any other host call these once, so the choice each
setting makes is written in one place (durability's in :mod:`backend.storage.durability`,
shared with the ``chats`` command).
"""

from __future__ import annotations

from backend.config import Settings
from backend.runtime.locks import DistributedLockStore, InProcessLockStore
from backend.runtime.redis_locks import RedisLockStore
from backend.storage.durability import apply_storage_settings
from backend.storage.engines import check_storage

__all__ = ["apply_storage_settings", "check_storage", "lock_store_from_settings"]


def lock_store_from_settings(settings: Settings) -> DistributedLockStore:
    """Redis leases with fencing when ``REFLEX_REDIS_URL`` is set (several workers share the
    data folder), else the in-process store (one worker; other processes are told apart by
    the pid their runs are signed with)."""
    if settings.redis_url:
        return RedisLockStore.from_url(settings.redis_url)
    return InProcessLockStore()
