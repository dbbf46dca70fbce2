"""Hostile import files fail fast with a clear error, at a bounded cost (issue 27, holes 3, 5).

Memory is measured with ``tracemalloc`` around the import in this process: every Python object
the parser or the zip reader builds is counted, which is where both holes spent it.
"""

from __future__ import annotations

import json
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from backend.errors import InvalidInputError
from backend.portability import ImportReport, import_file
from backend.portability.document import MANIFEST_NAME, ZIP_EXPORT_FORMAT
from backend.portability.formats.reading import READ_BYTES
from backend.portability.importer import MAX_FAILURES
from backend.portability.limits import ImportLimitError, ImportLimits, NestingCheck
from tests.portability.conftest import FIXTURES

MiB = 1024 * 1024


def _peak_mib(run: Callable[[], object]) -> float:
    tracemalloc.start()
    try:
        run()
    except InvalidInputError:
        pass
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak / MiB


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _chatgpt_records() -> list[dict]:
    return json.loads((FIXTURES / "chatgpt_conversations.json").read_text())


GOOD = 2  # conversations the ChatGPT fixture imports (its third is broken on purpose)


class TestDeepNesting:
    def test_ten_kilobytes_of_brackets_are_refused_before_parsing_at_bounded_memory(
        self, chats, tmp_path
    ):
        # Before: the streaming parser built a path per event, 5,000 levels cost 60 MiB
        # (40 KB: about 1 GiB; 400 KB took the server down).
        path = tmp_path / "deep.json"
        path.write_bytes(_nested(5_000))
        with pytest.raises(ImportLimitError, match="nested deeper than 200 levels"):
            import_file(chats, path)
        assert _peak_mib(lambda: import_file(chats, path)) < 4
        assert chats.list_chats() == []

    def test_a_deep_conversations_json_in_a_zip_is_refused_by_the_detector(self, chats, tmp_path):
        path = tmp_path / "export.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            archive.writestr("conversations.json", _nested(5_000))
        with pytest.raises(ImportLimitError, match=r"conversations\.json: nested deeper"):
            import_file(chats, path)

    def test_a_deep_record_after_good_ones_keeps_them_and_refuses_the_rest(self, chats, tmp_path):
        records = json.dumps(_chatgpt_records()).encode()[:-1]
        padding = b" " * 2 * READ_BYTES  # the deep part well past what the detector reads
        path = tmp_path / "conversations.json"
        path.write_bytes(records + padding + b"," + _nested(5_000) + b"]")
        report = import_file(chats, path)
        assert report.imported == GOOD
        assert "nested deeper than 200 levels" in report.failures[-1].reason
        assert report.failures[-1].item == f"{path.name} (from the refused part on)"
        assert len(chats.list_chats()) == GOOD

    def test_a_real_export_nests_well_inside_the_limit(self, chats):
        report = import_file(chats, FIXTURES / "chatgpt_conversations.json")
        assert report.imported == GOOD


class TestNestingCheck:
    DOCUMENT = (
        b'{"a": ["[[[[", {"b": "\\"[[[\\\\"}, [[1, 2], {"c": "}}}\\u005b"}]], '
        b'"d": {"e": [[[["x"]]]]}}'
    )

    def test_brackets_inside_strings_and_escapes_do_not_count(self):
        check = NestingCheck("doc", max_depth=6)
        check.feed(self.DOCUMENT)
        assert check.depth == 0
        with pytest.raises(ImportLimitError):
            NestingCheck("doc", max_depth=5).feed(self.DOCUMENT)

    def test_any_chunking_gives_the_same_answer(self):
        for cut in range(1, len(self.DOCUMENT)):
            for limit, refused in ((6, False), (5, True)):
                check = NestingCheck("doc", max_depth=limit)
                try:
                    for start in range(0, len(self.DOCUMENT), cut):
                        check.feed(self.DOCUMENT[start : start + cut])
                except ImportLimitError:
                    assert refused, f"refused at limit {limit} in chunks of {cut}"
                else:
                    assert not refused and check.depth == 0, f"chunks of {cut}"


def _bomb(path: Path, member: str, prefix: bytes, size: int, suffix: bytes) -> Path:
    """``member`` holding ``size`` bytes that deflate about 1,000 to 1."""
    with (
        zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open(member, "w") as out,
    ):
        out.write(prefix)
        block = b"a" * MiB
        for _ in range(size // MiB):
            out.write(block)
        out.write(suffix)
    return path


class TestZipBombs:
    def test_a_manifest_that_inflates_past_the_ratio_is_refused_at_bounded_memory(
        self, chats, tmp_path
    ):
        # Before: detection read manifest.json whole, then json.loads it: 64 MiB unpacked
        # from 64 KB cost 128+ MiB here (a 1 MB zip raised the server by 1.9 GiB).
        path = _bomb(
            tmp_path / "bomb.zip",
            MANIFEST_NAME,
            b'{"format": "' + ZIP_EXPORT_FORMAT.encode() + b'", "pad": "',
            64 * MiB,
            b'"}',
        )
        assert path.stat().st_size < MiB
        with pytest.raises(ImportLimitError, match="200 times its compressed size"):
            import_file(chats, path)
        assert _peak_mib(lambda: import_file(chats, path)) < 40

    def test_a_chat_document_that_inflates_past_the_ratio_is_refused_the_others_import(
        self, chats, tmp_path
    ):
        path = tmp_path / "archive.zip"
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
            manifest = {
                "format": ZIP_EXPORT_FORMAT,
                "version": 1,
                "chats": [{"path": "chats/bomb.json"}, {"path": "chats/missing.json"}],
            }
            archive.writestr(MANIFEST_NAME, json.dumps(manifest))
            with archive.open("chats/bomb.json", "w") as out:
                out.write(b'{"pad": "' + b"a" * (16 * MiB) + b'"}')
        report = import_file(chats, path)
        assert [f.item for f in report.failures] == [
            "chats/bomb.json (from the refused part on)",
            "chats/missing.json",
        ]
        assert "times its compressed size" in report.failures[0].reason

    def test_an_image_over_the_whole_member_cap_is_refused_not_loaded(self, chats, tmp_path):
        limits = ImportLimits(max_whole_bytes=MiB)
        path = tmp_path / "chatgpt.zip"
        with zipfile.ZipFile(path, "w") as archive:  # stored: no ratio to judge
            archive.write(FIXTURES / "chatgpt_conversations.json", "conversations.json")
            archive.writestr("file-Plot123-sine.png", b"\x89PNG" + b"\x00" * (2 * MiB))
        report = import_file(chats, path, limits=limits)
        [failure] = [f for f in report.failures if "sine" in f.reason]
        assert "larger than 1 MiB unpacked" in failure.reason
        assert report.imported == GOOD - 1

    def test_everything_unpacked_from_one_file_is_capped(self, chats, tmp_path):
        limits = ImportLimits(max_total_bytes=4 * MiB)  # detection reads 1 MiB of it first
        path = tmp_path / "chatgpt.zip"
        with zipfile.ZipFile(path, "w") as archive:  # the fixture, then padding past the cap
            archive.writestr("conversations.json", json.dumps(_chatgpt_records()) + " " * 8 * MiB)
        report: ImportReport = import_file(chats, path, limits=limits)
        assert report.imported == GOOD
        assert "unpacks to more than 4 MiB" in report.failures[-1].reason


class TestRefusalCap:
    def test_past_a_thousand_refused_records_the_rest_of_the_file_is_not_read(
        self, chats, tmp_path
    ):
        # Millions of unreadable records made a report of millions of lines in the server.
        first = json.dumps(_chatgpt_records()[0])
        path = tmp_path / "conversations.json"
        path.write_text(f"[{first}," + ",".join(["1"] * 5_000) + "]")
        report = import_file(chats, path)
        assert report.imported == 1
        assert len(report.failures) == MAX_FAILURES + 1
        assert report.failures[-1].item == "the rest of the file"
