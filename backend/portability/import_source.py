"""An import source on disk: a plain JSON file or a ``.zip``, read as streams.

Nothing is extracted to disk and nothing is read whole: members are opened as decompressing
streams, and :meth:`ImportSource.position` (bytes of the file consumed so far) drives
progress. Files beside the conversations (a ChatGPT export's images) are looked up by name
prefix and read only when a message points at them.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from backend.errors import InvalidInputError
from backend.storage.closing import Closing


class ImportSource(Closing):
    """A file to import from; use as a context manager."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
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

    def position(self) -> int:
        """Bytes of the file read so far (for a progress bar)."""
        try:
            return min(self._raw.tell(), self.size)
        except ValueError:  # closed
            return self.size

    def names(self) -> list[str]:
        """Member names of a zip (``[]`` for a plain file)."""
        return (
            [] if self.zip is None else [i.filename for i in self.zip.infolist() if not i.is_dir()]
        )

    @contextmanager
    def open(self, member: str | None = None) -> Iterator[IO[bytes]]:
        """A binary stream of ``member`` (of the plain file itself when ``None``)."""
        if member is None:
            if self.zip is not None:
                raise InvalidInputError(f"{self.path}: a zip, name a member")
            self._raw.seek(0)
            yield self._raw
            return
        if self.zip is None:
            raise InvalidInputError(f"{self.path}: not a zip")
        with self.zip.open(member) as stream:
            yield stream

    def read_member(self, member: str) -> bytes | None:
        if self.zip is None:
            return None
        try:
            return self.zip.read(member)
        except KeyError:
            return None

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
