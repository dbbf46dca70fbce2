"""The reading of an import runs in a child with memory and processor bounds (issue 27, hole 3).

Whatever a file makes the reader do, this process (the server) keeps its memory: the child
dies alone, the conversations written before stay whole, and the report says which bound
stopped the rest. Sizes here are small and the bounds smaller, so each test runs in seconds.
"""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from collections.abc import Iterable
from pathlib import Path

import pytest

from backend.errors import InvalidInputError
from backend.portability import import_file
from backend.portability.import_process import ProcessBounds, import_file_bounded
from backend.portability.limits import ImportLimits
from tests.portability.conftest import FIXTURES, visible

MiB = 1024 * 1024
LOOSE = ImportLimits(max_ratio=10**6)  # so the process bound, not the ratio, is what stops it
FIRST = json.loads((FIXTURES / "chatgpt_conversations.json").read_text())[0]


def _export(path: Path, *records: bytes | Iterable[bytes]) -> Path:
    """A ChatGPT export zip whose conversations.json holds ``records`` (each written as is:
    bytes, or pieces of bytes)."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive,
        archive.open("conversations.json", "w") as out,
    ):
        out.write(b"[")
        for index, record in enumerate(records):
            out.write(b"," if index else b"")
            pieces = [record] if isinstance(record, bytes) else record
            for piece in pieces:
                for start in range(0, len(piece), MiB):
                    out.write(piece[start : start + MiB])
        out.write(b"]")
    return path


def _huge_message(size: int) -> bytes:
    """A conversation whose one message is ``size`` bytes of text."""
    node = {"id": "n", "parent": None, "children": [], "message": {"author": {"role": "user"}}}
    node["message"]["content"] = {"content_type": "text", "parts": ["a" * size]}  # type: ignore[index]
    return json.dumps({"id": "huge", "title": "Huge", "mapping": {"n": node}}).encode()


class TestBoundedImport:
    def test_it_writes_what_an_import_in_this_process_writes(self, chats, other, chatgpt_zip):
        bounded = import_file_bounded(chats, chatgpt_zip)
        direct = import_file(other, chatgpt_zip)
        assert bounded.summary() == direct.summary()
        assert bounded.failures == direct.failures
        title = "Plotting sine waves"
        assert visible(chats, title) == visible(other, title)

    def test_a_conversation_over_the_memory_bound_stops_the_reader_not_this_process(
        self, chats, other, tmp_path
    ):
        path = _export(tmp_path / "export.zip", json.dumps(FIRST).encode(), _huge_message(64 * MiB))
        tracemalloc.start()
        try:
            report = import_file_bounded(
                chats, path, limits=LOOSE, bounds=ProcessBounds(max_memory_bytes=32 * MiB)
            )
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < 8 * MiB  # in this process the 64 MiB message cost 64+ MiB
        assert report.imported == 1
        [stopped] = report.failures
        assert (
            stopped.reason == "reading it needed more than 32 MiB of memory; the rest was not read"
        )
        whole = tmp_path / "first.json"
        whole.write_text(json.dumps([FIRST]))
        import_file(other, whole)
        assert [c.title for c in chats.list_chats()] == [FIRST["title"]]
        assert visible(chats, FIRST["title"]) == visible(other, FIRST["title"])  # written whole

    def test_over_the_bound_before_the_format_is_known_nothing_is_imported(self, chats, tmp_path):
        path = _export(tmp_path / "export.zip", _huge_message(64 * MiB))
        with pytest.raises(InvalidInputError, match="needed more than 32 MiB of memory; nothing"):
            import_file_bounded(
                chats, path, limits=LOOSE, bounds=ProcessBounds(max_memory_bytes=32 * MiB)
            )
        assert chats.list_chats() == []

    def test_a_file_over_the_processor_time_bound_stops_the_reader(self, chats, tmp_path):
        # A record of one key repeated: constant memory, 45 million parser events (about 6 s
        # of processor time here; the reader gets 1 s past its start-up).
        piece = b',"a":0' * (MiB // 6)
        busy = [b'{"a":0', *([piece] * 256), b"}"]
        path = _export(tmp_path / "export.zip", json.dumps(FIRST).encode(), busy)
        report = import_file_bounded(chats, path, limits=LOOSE, bounds=ProcessBounds(max_cpu_s=1))
        assert report.imported == 1
        [stopped] = report.failures
        assert "took more than 1 s of processor time" in stopped.reason

    def test_the_reader_refuses_deep_nesting_with_the_same_clear_error(self, chats, tmp_path):
        path = tmp_path / "deep.json"
        path.write_bytes(b"[" * 5_000 + b"]" * 5_000)
        with pytest.raises(InvalidInputError, match="nested deeper than 200 levels"):
            import_file_bounded(chats, path)

    def test_a_conversation_larger_than_this_process_may_hold_is_refused_the_next_imports(
        self, chats, tmp_path
    ):
        path = _export(tmp_path / "export.zip", _huge_message(2 * MiB), json.dumps(FIRST).encode())
        bounds = ProcessBounds(max_conversation_bytes=MiB)
        report = import_file_bounded(chats, path, limits=LOOSE, bounds=bounds)
        assert report.imported == 1
        [refused] = report.failures
        assert refused.item == "chatgpt conversation huge 'Huge'"
        assert refused.reason == "larger than 1 MiB, more than one import may hold"
