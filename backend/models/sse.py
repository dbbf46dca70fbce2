"""Server-sent events framing: response bytes in, the ``data`` of each event out (no I/O).

The model server is untrusted input, so the framing is done here rather than by the HTTP
library's line iterator, which buffers a line whole however long it is (a 200 MB line cost
800 MB of memory). Invariants:

* No line is held past ``max_line_bytes``: the unfinished tail of the stream is checked on
  every read, so a line that never ends fails as soon as it passes the limit. The same limit
  holds for an event's data (many ``data:`` lines and no blank line to end the event).
* Each line must be UTF-8; anything else is a :class:`backend.errors.ModelProtocolError`,
  never a silently replaced character in the reply.
* Lines end in ``\\n``, ``\\r\\n`` or ``\\r`` (all three are standard), also when a ``\\r\\n``
  is split between two reads. Comments (``: keep-alive``) and fields other than ``data`` are
  ignored; multi-line data is joined with ``\\n``.
"""

from __future__ import annotations

from backend.errors import ModelProtocolError

_LINE_ENDS = (b"\n", b"\r")


class SSEParser:
    """Feed response bytes in order; get the data payloads of the events they complete."""

    def __init__(self, *, max_line_bytes: int, provider: str = "") -> None:
        self._max_line_bytes = max_line_bytes
        self._provider = provider
        self._tail = bytearray()  # the line being received, not yet ended
        self._skip_lf = False  # the last read ended in "\r": a leading "\n" belongs to it
        self._data: list[str] = []
        self._data_bytes = 0  # of the event being received
        self._started = False

    def feed(self, chunk: bytes) -> list[str]:
        if self._skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self._skip_lf = False
        if not chunk:
            return []
        if b"\n" not in chunk and b"\r" not in chunk:
            self._tail += chunk
            self._check_length(len(self._tail))
            return []
        if self._tail:
            chunk = bytes(self._tail) + chunk
            self._tail.clear()
        lines = chunk.splitlines()  # bytes split only at \n, \r\n and \r
        if chunk.endswith(_LINE_ENDS):
            self._skip_lf = chunk.endswith(b"\r")
        else:
            self._tail += lines.pop()
            self._check_length(len(self._tail))
        payloads: list[str] = []
        for line in lines:
            self._check_length(len(line))
            payload = self._line(line)
            if payload is not None:
                payloads.append(payload)
        return payloads

    def close(self) -> list[str]:
        """The stream ended: an unfinished last line and event still count (servers omit the
        final blank line)."""
        payloads: list[str] = []
        if self._tail:
            tail = bytes(self._tail)
            self._tail.clear()
            self._line(tail)
        if self._data:
            payloads.append(self._dispatch())
        return payloads

    def _line(self, raw: bytes) -> str | None:
        """Apply one line; the payload of the event it completes, if any."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ModelProtocolError(
                f"model stream sent bytes that are not UTF-8: {raw[:60]!r}",
                provider=self._provider,
            ) from exc
        if not self._started:
            self._started = True
            line = line.removeprefix("\ufeff")
        if not line:
            return self._dispatch() if self._data else None
        if line.startswith(":"):  # a comment, e.g. a keep-alive
            return None
        name, _, value = line.partition(":")
        if name == "data":
            self._data_bytes += len(raw)
            self._check_length(self._data_bytes, "an event")
            self._data.append(value[1:] if value.startswith(" ") else value)
        return None

    def _dispatch(self) -> str:
        payload = "\n".join(self._data)
        self._data = []
        self._data_bytes = 0
        return payload

    def _check_length(self, size: int, what: str = "a line") -> None:
        if size > self._max_line_bytes:
            raise ModelProtocolError(
                f"model stream sent {what} longer than {self._max_line_bytes:,} bytes",
                provider=self._provider,
            )
