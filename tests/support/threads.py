"""Work that must run at the same time, each piece in a thread of its own."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import TypeVar

from tests.support.deadlines import WAIT_S

T = TypeVar("T")


def run_at_once(work: Callable[[T], object], arguments: Iterable[T]) -> None:
    """``work(a)`` for each ``a`` of ``arguments``, each in a thread, all started before any
    is waited for. Returns once every one has returned; raises what the first one that
    failed raised (a thread's error would otherwise be only a warning), or when one is still
    running after ``WAIT_S`` (a deadlock)."""
    errors: list[BaseException] = []

    def guarded(argument: T) -> None:
        try:
            work(argument)
        except BaseException as error:  # handed to the test's thread below
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(a,), daemon=True) for a in arguments]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT_S)
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"a thread running {work.__qualname__} did not return in {WAIT_S:g}s")
    if errors:
        raise errors[0]
