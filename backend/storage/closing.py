"""``with`` support for anything that owns files and has a ``close()``: one definition."""

from __future__ import annotations

from types import TracebackType
from typing import Self


class Closing:
    """Mix-in: ``with X(...) as x:`` closes ``x`` on the way out, error or not."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
