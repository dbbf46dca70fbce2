"""MeaningWorkers: one :class:`MeaningSearch` per open directory of a serving process.

* **Lazy.** Nothing is built when a directory opens: the embedder (one per process, shared
  by every directory: one model in memory) is made on the first search by meaning, and a
  directory's worker starts then. So serving, and every test that never searches by
  meaning, never loads a model; a directory whose person never searched embeds nothing
  until they do (that first search is marked incomplete while its worker catches up).
* **One worker per directory object.** A directory closed and opened again is a new
  object: its old worker is stopped (:meth:`forget`) before the old directory closes.
* ``CHATS_EMBEDDER=off`` (or an embedder the factory refuses) means no search by meaning:
  :meth:`of` answers None and searches are by words alone. Every directory keeps vectors, on
  either engine (:func:`backend.chats.vector_store.vector_store_for`).
* Importing this module imports neither numpy nor the embedders (0.6 s under load): a
  serving process pays for them on its first search by meaning.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from backend.config import Settings

if TYPE_CHECKING:
    from backend.chats.chats import Chats
    from backend.chats.meaning_search import MeaningSearch
    from backend.meaning import Embedder

logger = logging.getLogger(__name__)

EmbedderFactory = Callable[[], "Embedder | None"]
"""Builds the process's embedder (None: search by meaning is off). Called once."""


def embedder_of(settings: Settings) -> EmbedderFactory:
    """The embedder ``CHATS_EMBEDDER`` names, built when first asked for."""

    def build() -> Embedder | None:
        from backend.meaning import embedder_from_setting

        return embedder_from_setting(
            settings.embedder, model=settings.embedder_model, api_key=settings.embedder_api_key
        )

    return build


class MeaningWorkers:
    """The meaning searches of a process's open directories (see the module docstring)."""

    def __init__(self, embedder: EmbedderFactory) -> None:
        self._factory = embedder
        self._embedder: Embedder | None = None
        self._built = False
        self._lock = threading.Lock()
        self._searches: dict[str, MeaningSearch] = {}
        self._directories: dict[str, Chats] = {}

    def of(self, chats: Chats) -> MeaningSearch | None:
        """``chats``' meaning search, its worker started; None when search by meaning is off."""
        embedder = self._the_embedder()
        if embedder is None:
            return None
        from backend.chats.meaning_search import MeaningSearch

        key = chats.directory_id
        with self._lock:
            if self._directories.get(key) is chats:
                return self._searches[key]
            search = MeaningSearch(chats, embedder)
            stale = self._searches.pop(key, None)
            self._searches[key], self._directories[key] = search, chats
        if stale is not None:
            stale.stop()
        search.start()
        return search

    def forget(self, chats: Chats) -> None:
        """Stop the worker of ``chats``, about to close (waits for its current batch); a
        newer object of the same directory keeps its own."""
        key = chats.directory_id
        with self._lock:
            if self._directories.get(key) is not chats:
                return
            search = self._searches.pop(key)
            del self._directories[key]
        search.stop()

    def close(self) -> None:
        """Stop every worker (the process is stopping its services)."""
        with self._lock:
            directories = list(self._directories.values())
        for chats in directories:
            self.forget(chats)

    def _the_embedder(self) -> Embedder | None:
        with self._lock:
            if not self._built:
                self._built = True
                try:
                    self._embedder = self._factory()
                except ValueError:
                    logger.error("search by meaning is off: bad CHATS_EMBEDDER", exc_info=True)
            return self._embedder
