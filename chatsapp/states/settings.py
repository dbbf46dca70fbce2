"""Settings → Import: a person's export file, streamed to disk, imported on a worker thread.

The upload arrives as chunks (``rx.upload_files_chunk``) written straight to a temporary
file, so a file of any size costs one chunk of memory; past ``CHATS_MAX_IMPORT_BYTES`` reading
stops and nothing is imported. The import (:func:`backend.portability.import_file_bounded`,
which detects the format and reads the file in a child process under memory and processor
bounds, so no file can take the server down) then writes on a worker thread into the
signed-in person's directory, while this background handler shows its progress; the state
lock is taken only to show a step.
New chats reach every tab's sidebar through the directory's own change events.

Export needs no state: its links are plain downloads (:mod:`chatsapp.routes.exports`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import tempfile
import time
from pathlib import Path

import reflex as rx

from backend.errors import ChatsError
from backend.portability import ImportReport, import_file_bounded
from chatsapp.auth.identity import current_user_id
from chatsapp.services import offload, services

SHOW_EVERY_S = 0.25  # how often progress reaches the page (each step is a delta to the tab)
MAX_REFUSED_SHOWN = 200  # a broken export can refuse thousands; the count says how many


@dataclasses.dataclass
class RefusedRow:
    item: str = ""
    reason: str = ""


def size_label(size: int) -> str:
    """A byte count as people read it (decimal units, as file managers show them)."""
    for unit, scale in (("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if size >= scale:
            return f"{size / scale:,.1f} {unit}"
    return f"{size} bytes"


class SettingsTabState(rx.State):
    """Per tab: the import in progress here and what the last one did."""

    phase: str = ""  # "" | "uploading" | "importing" | "done" | "failed"
    received_bytes: int = 0
    progress_percent: int = 0
    summary: str = ""
    refused: list[RefusedRow] = []
    refused_count: int = 0
    error: str = ""
    first_chat_id: str = ""
    max_import_label: str = ""

    @rx.var
    def busy(self) -> bool:
        return self.phase in ("uploading", "importing")

    @rx.var
    def received_label(self) -> str:
        return size_label(self.received_bytes)

    @rx.event
    def load(self) -> None:
        self.max_import_label = size_label(services().settings.max_import_bytes)

    @rx.event(background=True)
    async def upload_import(self, chunks: rx.UploadChunkIterator):  # noqa: ANN201
        user_id = current_user_id()
        limit = services().settings.max_import_bytes
        async with self:
            if self.busy:
                return rx.toast.error("An import is already running in this tab.")
            self.phase, self.received_bytes, self.progress_percent = "uploading", 0, 0
            self.summary, self.refused, self.refused_count = "", [], 0
            self.error, self.first_chat_id = "", ""
        folder = Path(tempfile.mkdtemp(prefix="chats-import-"))
        received: tuple[Path, str] | None = None
        try:
            received = await self._receive(chunks, folder, limit)
            if received is None:
                return None
            report = await self._import(user_id, received[0])
        except ChatsError as exc:  # not an export this app reads; nothing was imported
            # The message names the temporary file: name the person's file instead.
            reason = str(exc).replace(str(received[0]), received[1]) if received else str(exc)
            await self._refuse(reason)
            return None
        except Exception:
            await self._refuse("The import failed unexpectedly.")
            raise
        finally:
            await offload(shutil.rmtree, folder, ignore_errors=True)
        async with self:
            self._show_report(report)
        return None

    async def _receive(
        self, chunks: rx.UploadChunkIterator, folder: Path, limit: int
    ) -> tuple[Path, str] | None:
        """(where the upload was written, its name); ``None`` (the reason shown) if refused."""
        path: Path | None = None
        name = ""
        received, shown_at = 0, time.monotonic()
        out = None
        try:
            async for chunk in chunks:
                if out is None:
                    # Only the extension is kept: the detector reads the content, not the name.
                    suffix = ".zip" if chunk.filename.lower().endswith(".zip") else ".json"
                    path, name = folder / f"upload{suffix}", chunk.filename
                    out = await offload(path.open, "wb")
                elif chunk.offset == 0:
                    return await self._refuse("Choose one file to import.")
                received += len(chunk.data)
                if received > limit:
                    return await self._refuse(
                        f"This file is over the import limit of {size_label(limit)}."
                    )
                await offload(out.write, chunk.data)
                if time.monotonic() - shown_at >= SHOW_EVERY_S:
                    shown_at = time.monotonic()
                    async with self:
                        self.received_bytes = received
        finally:
            if out is not None:
                await offload(out.close)
        if path is None:
            return await self._refuse("The upload held no file.")
        async with self:
            self.received_bytes, self.phase = received, "importing"
        return path, name

    async def _refuse(self, reason: str) -> None:
        async with self:
            self.phase, self.error = "failed", f"{reason.rstrip('.')}. Nothing was imported."

    async def _import(self, user_id: str, path: Path) -> ImportReport:
        """Run the import on a worker thread, showing its progress while it runs."""
        fraction = [0.0]

        def progress(done: int, total: int) -> None:
            fraction[0] = done / total if total else 1.0

        with services().hold(user_id) as chats:  # not released while the import runs
            task = asyncio.ensure_future(
                offload(import_file_bounded, chats, path, progress=progress)
            )
            while not task.done():
                await asyncio.wait([task], timeout=SHOW_EVERY_S)
                async with self:
                    self.progress_percent = int(fraction[0] * 100)
            return task.result()

    def _show_report(self, report: ImportReport) -> None:
        self.phase, self.progress_percent = "done", 100
        self.summary = report.summary()
        self.refused_count = len(report.failures)
        self.refused = [RefusedRow(f.item, f.reason) for f in report.failures[:MAX_REFUSED_SHOWN]]
        self.first_chat_id = report.chat_ids[0] if report.chat_ids else ""
