"""What one import may cost, enforced on the bytes as they are read (issue 27, holes 3 and 5).

A hostile file must fail fast with a clear error, never by exhausting the server:

* **Nesting.** A streaming JSON parser builds a path per event, so 40 KB of ``[[[[...`` cost
  about 1 GiB. :class:`NestingCheck` follows the nesting depth of the raw bytes (a linear scan
  at C speed: strings and escapes removed with regular expressions, brackets summed) and
  refuses past :attr:`ImportLimits.max_depth` before the parser sees the chunk.
* **Unpacked size.** A zip member's declared size is never trusted: :class:`LimitedStream`
  counts the bytes it actually inflates, per member and for the whole file, and refuses a
  member that inflates past :attr:`ImportLimits.max_ratio` times its compressed bytes (a zip
  bomb; real exports stay far below).

Every refusal is an :class:`ImportLimitError` naming the member and the limit.
"""

from __future__ import annotations

import re
from array import array
from dataclasses import dataclass
from itertools import accumulate
from typing import IO

from backend.errors import InvalidInputError

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True, slots=True)
class ImportLimits:
    """Bounds on one import; the defaults fit the largest real exports with room to spare."""

    max_depth: int = 200  # real exports nest about 15 levels deep
    max_member_bytes: int = 8 * GiB  # one JSON member, streamed (ChatGPT's run to GBs)
    max_whole_bytes: int = 64 * MiB  # one member read whole: an image, an attachment
    max_total_bytes: int = 32 * GiB  # everything read from one file, unpacked
    max_ratio: int = 200  # unpacked / compressed bytes of a member (JSON packs ~5-20x)
    ratio_allowance: int = MiB  # a small member is never judged by its ratio


class ImportLimitError(InvalidInputError):
    """An import file past one of the :class:`ImportLimits`; nothing more is read from it."""


_ESCAPE = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')
_BRACKETS = bytes(range(256)).translate(
    bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")
)  # opening -> 1, closing -> -1 once read as signed bytes
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class NestingCheck:
    """The nesting depth of a JSON byte stream fed in chunks; raises past ``max_depth``.

    Linear in the bytes, whatever their shape: escapes and strings are removed by the regular
    expression engine, and the depth is a running sum of the remaining brackets. A string or
    escape cut by a chunk boundary is carried to the next chunk.
    """

    def __init__(self, name: str, max_depth: int) -> None:
        self._name = name
        self._max_depth = max_depth
        self.depth = 0
        self._in_string = False
        self._escaped = False

    def feed(self, chunk: bytes) -> None:
        if self._escaped and chunk:
            chunk, self._escaped = chunk[1:], False
        if self._in_string:
            chunk = b'"' + chunk
        text = _ESCAPE.sub(b"", chunk) if b"\\" in chunk else chunk
        if text.endswith(b"\\"):  # an escape cut by the chunk's end
            text, self._escaped = text[:-1], True
        text = _STRING.sub(b"", text)
        opened = text.find(b'"')  # a string that goes on in the next chunk
        self._in_string = opened >= 0
        if self._in_string:
            text = text[:opened]
        else:
            self._escaped = False  # a backslash outside a string: not JSON, nothing to carry
        steps = array("b", text.translate(_BRACKETS, _NOT_BRACKETS))
        if not steps:
            return
        deepest = max(accumulate(steps, initial=self.depth))
        if deepest > self._max_depth:
            raise ImportLimitError(
                f"{self._name}: nested deeper than {self._max_depth} levels; "
                "no export nests like that, so it was not read"
            )
        self.depth += sum(steps)

    def reset(self) -> None:
        self.depth, self._in_string, self._escaped = 0, False, False


class Budget:
    """Bytes unpacked from one import file so far, against ``max_total_bytes``."""

    def __init__(self, limits: ImportLimits, name: str) -> None:
        self.limits = limits
        self._name = name
        self.used = 0

    def spend(self, count: int) -> None:
        self.used += count
        if self.used > self.limits.max_total_bytes:
            raise ImportLimitError(
                f"{self._name}: unpacks to more than {_size(self.limits.max_total_bytes)}; "
                "the rest was not read"
            )


class LimitedStream:
    """A binary stream read through the limits: its bytes counted (per member, against the
    file's :class:`Budget` and, for a zip member, against its compressed size), and JSON
    checked for nesting, all before the caller sees them."""

    def __init__(
        self,
        inner: IO[bytes],
        name: str,
        budget: Budget,
        *,
        max_bytes: int,
        compressed_size: int | None = None,
        json: bool = True,
    ) -> None:
        self._inner = inner
        self._name = name
        self._budget = budget
        limits = budget.limits
        self._max_bytes = max_bytes
        if compressed_size is not None:
            by_ratio = limits.max_ratio * compressed_size + limits.ratio_allowance
            self._max_bytes = min(max_bytes, by_ratio)
        self._ratio_bound = compressed_size is not None and self._max_bytes < max_bytes
        self._nesting = NestingCheck(name, limits.max_depth) if json else None
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        # Never more than one past the cap in one read, so an unbounded read stays bounded.
        room = self._max_bytes - self.read_bytes + 1
        chunk = self._inner.read(room if size < 0 else min(size, room))
        self.read_bytes += len(chunk)
        self._budget.spend(len(chunk))
        if self.read_bytes > self._max_bytes:
            raise ImportLimitError(self._over_limit())
        if self._nesting is not None:
            self._nesting.feed(chunk)
        return chunk

    def _over_limit(self) -> str:
        if self._ratio_bound:
            return (
                f"{self._name}: unpacks to more than {self._budget.limits.max_ratio} times "
                "its compressed size (a zip bomb?); it was not read"
            )
        return f"{self._name}: larger than {_size(self._max_bytes)} unpacked; it was not read"

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._inner.seekable()

    def seek(self, offset: int, whence: int = 0) -> int:
        """Only back to the start (a peek at the first byte); the bytes count again."""
        if (offset, whence) != (0, 0):
            raise ValueError("a limited import stream only seeks back to its start")
        self.read_bytes = 0
        if self._nesting is not None:
            self._nesting.reset()
        return self._inner.seek(0)

    def close(self) -> None:
        self._inner.close()


def _size(count: int) -> str:
    return f"{count / GiB:g} GiB" if count >= GiB else f"{count / MiB:g} MiB"
