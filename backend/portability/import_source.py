"""An import source on disk: a plain JSON file or a ``.zip``, read as streams.

Nothing is extracted to disk: JSON is read as (decompressing) streams, and
:meth:`ImportSource.position` (bytes of the file consumed so far) drives progress. Files beside
the conversations (a ChatGPT export's images, a zip export's attachments) are looked up by name
and read whole only when a message points at them. Every byte is read through
:mod:`backend.portability.limits`: counted against per-member and whole-file caps and the
member's compressed size, and JSON checked for nesting, so a zip bomb or a deeply nested file
is refused (:class:`~backend.portability.limits.ImportLimitError`) before it costs memory.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, cast

from backend.errors import InvalidInputError
from backend.portability.limits import Budget, ImportLimits, LimitedStream
from backend.storage.closing import Closing


class ImportSource(Closing):
    """A file to import from; use as a context manager."""

    def __init__(self, path: str | Path, limits: ImportLimits | None = None) -> None:
        self.path = Path(path)
        self.limits = limits or ImportLimits()
        if not self.path.is_file():
            raise InvalidInputError(f"{self.path}: no such file")
        self.size = self.path.stat().st_size
        self._raw: IO[bytes] = self.path.open("rb")
        self.zip: zipfile.ZipFile | None = None
        if zipfile.is_zipfile(self._raw):
            self._raw.seek(0)
            try:
                self.zip = zipfile.ZipFile(self._raw)
            except zipfile.BadZipFile as exc:
                self._raw.close()
                raise InvalidInputError(f"{self.path}: not a readable zip ({exc})") from exc
        self._raw.seek(0)
        self._prefix_index: dict[str, str] | None = None
        self._names: list[str] | None = None
        self._name_set: set[str] | None = None
        self._budget = Budget(self.limits, str(self.path))

    def position(self) -> int:
        """Bytes of the file read so far (for a progress bar)."""
        try:
            return min(self._raw.tell(), self.size)
        except ValueError:  # closed
            return self.size

    def names(self) -> list[str]:
        """Member names of a zip (``[]`` for a plain file)."""
        if self._names is None:
            self._names = (
                []
                if self.zip is None
                else [i.filename for i in self.zip.infolist() if not i.is_dir()]
            )
        return self._names

    def has(self, member: str) -> bool:
        if self._name_set is None:
            self._name_set = set(self.names())
        return member in self._name_set

    @contextmanager
    def open(self, member: str | None = None) -> Iterator[IO[bytes]]:
        """A binary stream of JSON ``member`` (of the plain file itself when ``None``), read
        through the limits (nesting, unpacked size)."""
        if member is None:
            if self.zip is not None:
                raise InvalidInputError(f"{self.path}: a zip, name a member")
            self._raw.seek(0)
            yield self._limited(self._raw, str(self.path), None, json=True)
            return
        if self.zip is None:
            raise InvalidInputError(f"{self.path}: not a zip")
        info = self.zip.getinfo(member)
        with self.zip.open(info) as stream:
            yield self._limited(stream, member, info.compress_size, json=True)

    def read_member(self, member: str) -> bytes | None:
        """The bytes of ``member`` (an image, an attachment), None when the zip has no such
        member; :class:`~backend.portability.limits.ImportLimitError` past the limits."""
        if self.zip is None:
            return None
        try:
            info = self.zip.getinfo(member)
        except KeyError:
            return None
        with self.zip.open(info) as stream:
            return self._limited(stream, member, info.compress_size, json=False).read()

    def _limited(
        self, stream: IO[bytes], name: str, compressed_size: int | None, *, json: bool
    ) -> IO[bytes]:
        limits = self.limits
        limited = LimitedStream(
            stream,
            name,
            self._budget,
            max_bytes=limits.max_member_bytes if json else limits.max_whole_bytes,
            compressed_size=compressed_size,
            json=json,
        )
        return cast(IO[bytes], limited)  # read / seek / close: all a reader here calls

    def find_by_prefix(self, file_id: str) -> str | None:
        """The member whose base name starts with ``file_id`` (a ChatGPT ``file-...`` id)."""
        if self.zip is None or not file_id:
            return None
        if self._prefix_index is None:
            self._prefix_index = {}
            for name in self.names():
                base = name.rsplit("/", 1)[-1]
                key = base.split("-", 2)
                # "file-AbC123-name.png" -> "file-AbC123"; "file_00..-uuid.png" -> "file_00.."
                stem = "-".join(key[:2]) if base.startswith("file-") else key[0]
                self._prefix_index.setdefault(stem, name)
                self._prefix_index.setdefault(base.rsplit(".", 1)[0], name)
        return self._prefix_index.get(file_id)

    def close(self) -> None:
        if self.zip is not None:
            self.zip.close()
        self._raw.close()
