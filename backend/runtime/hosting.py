"""What a process serving chats builds from its settings: storage durability, the lock store.

The app (``chatsapp/services.py``) and any other host call these once, so the choice each
setting makes is written here and nowhere else.
"""

from __future__ import annotations

from backend.config import Settings
from backend.runtime.locks import DistributedLockStore, InProcessLockStore
from backend.runtime.redis_locks import RedisLockStore
from backend.storage.durability import set_default_synchronous


def apply_storage_settings(settings: Settings) -> None:
    """Make ``CHATS_SQLITE_SYNCHRONOUS`` the level of every database opened from now on."""
    set_default_synchronous(settings.sqlite_synchronous)


def lock_store_from_settings(settings: Settings) -> DistributedLockStore:
    """Redis leases with fencing when ``REFLEX_REDIS_URL`` is set (several workers share the
    data folder), else the in-process store (one worker; other processes are told apart by
    the pid their runs are signed with)."""
    if settings.redis_url:
        return RedisLockStore.from_url(settings.redis_url)
    return InProcessLockStore()
