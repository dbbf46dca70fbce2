"""Search by meaning over a directory: vectors kept current in the background, hits fused
with full-text search.

* **Writing.** Nothing is added to the append path: a :class:`MeaningSearch` embeds what
  the message index holds and its vector table lacks (:meth:`MessageVectorStore.missing`,
  read from the last document it embedded on), a batch at a time, on a worker thread of its
  own (:meth:`start`) or when asked (:meth:`catch_up`, as the CLI does, with progress).
  After a restart the same scan finds every message written meanwhile; vectors of changed
  or removed messages are stale and dropped (:mod:`backend.chats.vector_store`). The vectors
  live in the directory's database on either engine (on PostgreSQL,
  :mod:`backend.chats.pg_vector_store`), as int8 bytes scored in memory, so both engines
  give the same hits.
* **Searching.** Full-text hits (words in any order, exact phrase first) and the nearest
  vectors to the query are fused by :func:`backend.meaning.fuse_ranks` (exact words win).
  While vectors are missing, or when the embedder cannot run, the result holds what there
  is and says it is incomplete; a search never waits for the embedder to catch up.
* ``chat_ids`` keeps hits of those chats only (a project's search).
* A caller with full-text hits of its own (the app's, which holds the chats shared with the
  person) asks for the meaning ranking alone (:meth:`MeaningSearch.meaning_hits`) and fuses
  with :func:`fuse_hits`.
* The worker embeds a few messages at a time (:data:`WORKER_BATCH`), at a lower CPU
  priority (:data:`WORKER_NICENESS`): one model runs per process, so a query waits for at
  most one such batch; when idle it looks for work only after a change (an index flush that
  moved something, another process's commit, a wake). While people write during its
  batches, it rests as long as each batch took: at half speed, the appends it slows are
  fewer (a core's work beside an fsync-bound append costs it ~1.2x on 2 cores, even at
  the lower priority).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np

from backend.chats.chats import Chats
from backend.chats.text import clean_preview
from backend.chats.values import ChatHit
from backend.chats.vector_store import MissingDocument, VectorTable, vector_store_for
from backend.meaning import Embedder, EmbedderUnavailable, fuse_ranks

logger = logging.getLogger(__name__)

BATCH = 32
WORKER_BATCH = 4
"""Messages the background worker embeds per call of the model (a query waits for one)."""
FUSE_DEPTH = 50
"""Hits taken from each ranking before fusing."""
IDLE_WAIT_S = 1.0
FAILURE_WAIT_S = 30.0
"""After a failed catch-up (an endpoint down), the worker tries again this much later (or
when woken)."""
Progress = Callable[[int, int], None]
"""``(done, total)`` while catching up."""
Hit = TypeVar("Hit", bound=ChatHit)


def fuse_hits(words: Sequence[Hit], meaning: Sequence[Hit]) -> list[Hit]:
    """Both rankings' hits (each best first) in one order, exact words first where they
    match (:func:`backend.meaning.fuse_ranks`); a message both hold keeps its words hit."""
    by_key: dict[tuple[str, str], Hit] = {}
    for hit in [*words, *meaning]:
        by_key.setdefault((hit.chat_id, hit.message_id), hit)
    order = fuse_ranks(
        [(h.chat_id, h.message_id) for h in words], [(h.chat_id, h.message_id) for h in meaning]
    )
    return [by_key[key] for key in order]


WORKER_NICENESS = 10
"""How much lower the worker thread's CPU priority is than the process's (Linux threads each
have one): the model runs on that thread outside the GIL, and on a busy machine the requests
and appends of the people chatting come first; a search's own query embedding runs on the
searching thread, at the process's priority."""


def _yield_to_other_threads() -> None:
    """Lower the calling thread's CPU priority by :data:`WORKER_NICENESS` (best effort: a
    platform without per-thread priorities keeps one)."""
    try:
        thread = threading.get_native_id()
        lowered = os.getpriority(os.PRIO_PROCESS, thread) + WORKER_NICENESS
        os.setpriority(os.PRIO_PROCESS, thread, lowered)
    except (AttributeError, OSError):
        logger.debug("search by meaning: the worker keeps the process's CPU priority")


@dataclass(frozen=True)
class MeaningResult:
    hits: list[ChatHit]
    complete: bool
    """False while some messages have no vector yet, or the embedder could not run."""


class MeaningSearch:
    """One directory's vectors and hybrid search (see the module docstring)."""

    def __init__(self, chats: Chats, embedder: Embedder) -> None:
        self._chats = chats
        self._embedder = embedder
        self._store = vector_store_for(chats.database)  # beside the index, on its engine
        self._table: VectorTable | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._behind = True
        self._seen_version: int | None = None
        self._last_doc = 0
        """The newest document this object embedded: the next look starts after it."""

    @property
    def caught_up(self) -> bool:
        """Whether every message the worker has seen has its vector (a search is complete)."""
        return not self._behind

    # ── writing ─────────────────────────────────────────────────────

    def catch_up(
        self, *, progress: Progress | None = None, limit: int | None = None, batch: int = BATCH
    ) -> int:
        """Embed every message without a current vector (at most ``limit``, ``batch`` per call
        of the model); how many."""
        model = self._embedder.name
        total = 0
        if progress:
            self._chats.flush_index()
            total = self._store.count_missing(model)
        done = 0
        while limit is None or done < limit:
            wanted = batch if limit is None else min(batch, limit - done)
            documents = self._next_missing(model, wanted)
            if not documents:
                self._behind = False
                break
            vectors = self._embedder.embed_documents([doc.text for doc in documents])
            with self._chats.database.derived_transaction():
                self._store.put(model, documents, vectors)
            self._last_doc = max(self._last_doc, documents[-1].doc)
            done += len(documents)
            if progress:
                progress(done, max(total, done))
        return done

    def _next_missing(self, model: str, wanted: int) -> list[MissingDocument]:
        """Documents without a vector, past the last one embedded while there are any; then
        the index takes in what was written since (a flush, once per pass rather than once
        per batch: it writes the directory and holds the GIL while appends run), and then
        the search looks once from the start."""
        documents = self._store.missing(model, wanted, after=self._last_doc)
        if not documents:
            self._chats.flush_index()
            documents = self._store.missing(model, wanted, after=self._last_doc)
        return documents or self._from_the_start(model, wanted)

    def _from_the_start(self, model: str, wanted: int) -> list[MissingDocument]:
        """Nothing is missing past the last document embedded: drop stale vectors and look
        once from the first document (a number can be handed out again, see
        :mod:`backend.chats.vector_store`). Each of these reads every vector; they run once
        per pass, not once per batch (a catch-up grew with the square of the messages)."""
        with self._chats.database.derived_transaction():
            self._store.drop_stale(model)
        return self._store.missing(model, wanted)

    def start(self) -> None:
        """Keep vectors current on a worker thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="meaning", daemon=True)
            self._thread.start()

    def wake(self) -> None:
        """Something was written: look for messages to embed now."""
        self._behind = True
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        _yield_to_other_threads()
        while not self._stop.is_set():
            wait = IDLE_WAIT_S
            try:
                if self._behind or self._changed():
                    # Seen: a search says it is incomplete until what was seen is stored (a
                    # change another process made was otherwise "complete" while embedded).
                    self._behind = True
                    writes = self._writes_seen()
                    started = time.perf_counter()
                    if self.catch_up(limit=WORKER_BATCH, batch=WORKER_BATCH):
                        if self._writes_seen() != writes:  # people are writing: half speed
                            self._rest(time.perf_counter() - started)
                        continue  # embedded some: more may be missing
            except Exception:  # the embedder is down (an endpoint): retry later, not at once
                logger.warning("search by meaning: catching up failed", exc_info=True)
                wait = FAILURE_WAIT_S
            self._wake.wait(wait)
            self._wake.clear()

    def _rest(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def _writes_seen(self) -> tuple[int, int]:
        """What moves when someone writes the directory's chats: here (the changes written)
        or in another process (the directory's version)."""
        return self._chats.changes_written(), self._chats.database.data_version()

    def _changed(self) -> bool:
        """Whether the message index moved since the last look (here or in another process)."""
        flushed = self._chats.flush_index()
        version = self._chats.database.data_version()
        changed = flushed.changed or version != self._seen_version
        self._seen_version = version
        return changed

    # ── searching ───────────────────────────────────────────────────

    def search(
        self, query: str, *, limit: int = 20, chat_ids: Collection[str] | None = None
    ) -> MeaningResult:
        """Full-text and meaning hits fused, best first (see the module docstring)."""
        meaning = self.meaning_hits(query, chat_ids=chat_ids)
        words = self._chats.search_messages(query, limit=FUSE_DEPTH, chat_ids=chat_ids)
        return MeaningResult(fuse_hits(words, meaning.hits)[:limit], meaning.complete)

    def meaning_hits(self, query: str, *, chat_ids: Collection[str] | None = None) -> MeaningResult:
        """The messages nearest in meaning to ``query`` (above the embedder's relevance floor),
        best first; incomplete while vectors are missing or when the embedder cannot run."""
        flushed = self._chats.flush_index()
        if flushed.documents_added or flushed.documents_updated:
            self.wake()  # messages the worker has not seen yet: this answer lacks them
        complete = not self._behind
        try:
            return MeaningResult(self._nearest(query, chat_ids), complete)
        except EmbedderUnavailable:
            logger.warning("search by meaning unavailable", exc_info=True)
            return MeaningResult([], complete=False)

    def _nearest(self, query: str, chat_ids: Collection[str] | None) -> list[ChatHit]:
        if not query.strip():
            return []
        table = self._current_table()
        if not table.keys:
            return []
        scores = table.matrix @ self._embedder.embed_query(query)
        depth = min(len(scores), FUSE_DEPTH * 2)
        best = np.argpartition(-scores, depth - 1)[:depth]
        best = best[np.argsort(-scores[best])]
        best = best[scores[best] >= self._embedder.relevance_floor]
        keys = [table.keys[int(i)] for i in best]
        current = self._store.current(self._embedder.name, keys, 400) if keys else {}
        hits = []
        for index, key in zip(best, keys, strict=True):
            if key not in current:
                continue
            chat_id, text = current[key]
            if chat_ids is not None and chat_id not in chat_ids:
                continue
            hits.append(
                ChatHit(
                    chat_id=chat_id,
                    message_id=key[1],
                    snippet=clean_preview(text),
                    rank=-float(scores[int(index)]),
                )
            )
        return hits[:FUSE_DEPTH]

    def _current_table(self) -> VectorTable:
        if self._table is None or self._table.version != self._store.version():
            self._table = self._store.table(self._embedder.name)
        return self._table
