"""What a message may carry: sizes, counts and types sniffed from the bytes (issue 10, item 7)."""

import asyncio
import base64
import dataclasses
import tracemalloc
from collections.abc import AsyncIterator

import pytest

from backend.config import Settings
from backend.errors import InputTooLargeError, InvalidInputError
from backend.uploads import (
    AttachmentLimits,
    accepted_extensions,
    check_message_files,
    check_message_text,
    decode_image_url,
    format_size,
    read_attachment,
    read_image,
    sniff_media_type,
)
from tests.support.tiny_pdf import pdf_with_text

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)
LIMITS = AttachmentLimits(max_file_bytes=1024 * 1024, max_files=3, max_total_bytes=2 * 1024 * 1024)


async def chunks_of(data: bytes, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


async def endless_chunks(total: int, size: int = 64 * 1024) -> AsyncIterator[bytes]:
    """A stream that would be ``total`` bytes: produced lazily, like a socket."""
    sent = 0
    while sent < total:
        yield PNG if sent == 0 else b"\0" * size
        sent += size


class TestTypeIsSniffedFromTheBytes:
    def test_a_png_is_recognised_by_its_signature(self):
        assert sniff_media_type(PNG) == "image/png"

    def test_text_named_like_an_image_is_refused(self):
        with pytest.raises(InvalidInputError, match="not a PNG, JPEG, GIF or WebP image"):
            asyncio.run(read_image("cat.png", chunks_of(b"<script>alert(1)</script>"), LIMITS))

    def test_a_pdf_is_not_an_image(self):
        with pytest.raises(InvalidInputError):
            asyncio.run(read_image("doc.png", chunks_of(b"%PDF-1.4\n" + b"x" * 100), LIMITS))

    def test_an_empty_file_has_no_type(self):
        assert sniff_media_type(b"") is None

    def test_an_accepted_image_carries_the_sniffed_type_not_the_claimed_one(self):
        upload = asyncio.run(read_image("photo.gif", chunks_of(PNG), LIMITS))
        assert upload.media_type == "image/png"
        assert upload.data_url() == "data:image/png;base64," + base64.b64encode(PNG).decode()


class TestOversizeUploadsStopEarly:
    def test_a_file_over_the_limit_is_refused_with_its_size_and_the_limit(self):
        with pytest.raises(InputTooLargeError) as caught:
            asyncio.run(read_image("big.png", endless_chunks(5 * 1024 * 1024), LIMITS))
        assert caught.value.limit == LIMITS.max_file_bytes

    def test_reading_a_100_mb_upload_holds_about_the_limit_not_the_file(self):
        tracemalloc.start()
        try:
            with pytest.raises(InputTooLargeError):
                asyncio.run(read_image("huge.png", endless_chunks(100 * 1024 * 1024), LIMITS))
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert peak < 4 * LIMITS.max_file_bytes


class TestAMessageHasACeiling:
    def test_more_files_than_allowed_are_refused(self):
        with pytest.raises(InvalidInputError, match="at most 3 attachments"):
            check_message_files([10, 10, 10, 10], LIMITS)

    def test_files_that_are_each_fine_but_too_large_together_are_refused(self):
        with pytest.raises(InputTooLargeError, match="the attachments of one message"):
            check_message_files([LIMITS.max_file_bytes] * 3, LIMITS)

    def test_a_message_within_both_limits_passes(self):
        check_message_files([1000, 2000], LIMITS)

    def test_a_text_over_the_byte_limit_is_refused_with_its_size_and_the_limit(self):
        settings = dataclasses.replace(Settings.from_env({}), max_message_bytes=10)
        check_message_text("é" * 5, settings)  # 10 bytes: at the limit
        with pytest.raises(InputTooLargeError, match="the message is 12 bytes; the limit is 10"):
            check_message_text("é" * 6, settings)

    def test_a_lone_surrogate_counts_its_bytes_and_is_no_error(self):
        settings = dataclasses.replace(Settings.from_env({}), max_message_bytes=3)
        check_message_text("\ud800", settings)
        with pytest.raises(InputTooLargeError):
            check_message_text("\ud800a", settings)


class TestImagesSentWithAMessage:
    def test_a_valid_data_url_is_accepted(self):
        url = "data:image/png;base64," + base64.b64encode(PNG).decode()
        assert decode_image_url(url, LIMITS).data == PNG

    def test_a_data_url_that_lies_about_its_type_is_refused(self):
        url = "data:image/png;base64," + base64.b64encode(b"MZ\x90\x00 not an image").decode()
        with pytest.raises(InvalidInputError, match="not a PNG"):
            decode_image_url(url, LIMITS)

    def test_an_oversize_data_url_is_refused_before_it_is_decoded(self):
        url = "data:image/png;base64," + "A" * (4 * LIMITS.max_file_bytes)
        with pytest.raises(InputTooLargeError):
            decode_image_url(url, LIMITS)

    @pytest.mark.parametrize(
        "url", ["https://example.com/x.png", "data:image/png,raw", "data:image/png;base64,@@@"]
    )
    def test_anything_but_base64_data_is_refused(self, url):
        with pytest.raises(InvalidInputError):
            decode_image_url(url, LIMITS)


class TestDocumentsAreAttachable:
    def test_a_csv_is_accepted_as_utf8_text_with_its_name(self):
        upload = asyncio.run(
            read_attachment("sales.csv", chunks_of(b"city,total\nOslo,12\n"), LIMITS)
        )
        assert (upload.media_type, upload.is_image) == ("text/csv", False)
        part = upload.file_part()
        assert part["filename"] == "sales.csv"
        assert part["url"].startswith("data:text/csv;base64,")

    def test_a_pdf_is_recognised_by_its_signature_whatever_its_name(self):
        upload = asyncio.run(read_attachment("report.txt", chunks_of(pdf_with_text("hi")), LIMITS))
        assert upload.media_type == "application/pdf"

    def test_an_image_is_still_an_image(self):
        upload = asyncio.run(read_attachment("dot.png", chunks_of(PNG), LIMITS))
        assert upload.is_image

    def test_an_executable_is_refused_naming_what_can_be_attached(self):
        with pytest.raises(InvalidInputError, match="cannot be attached: attach images"):
            asyncio.run(read_attachment("setup.exe", chunks_of(b"MZ\x90\x00" + b"\0" * 60), LIMITS))

    def test_binary_bytes_named_like_text_are_refused(self):
        with pytest.raises(InvalidInputError, match="not UTF-8 text"):
            asyncio.run(
                read_attachment("notes.txt", chunks_of(b"MZ\x90\x00\xff\xfe" + b"\0" * 60), LIMITS)
            )

    def test_an_oversize_document_is_refused_with_the_limit(self):
        with pytest.raises(InputTooLargeError):
            asyncio.run(
                read_attachment("big.csv", chunks_of(b"a," * (LIMITS.max_file_bytes)), LIMITS)
            )

    def test_the_picker_accepts_every_attachable_extension_and_not_exe(self):
        extensions = {e for names in accepted_extensions().values() for e in names}
        assert {".pdf", ".csv", ".json", ".md", ".py", ".txt", ".png"} <= extensions
        assert ".exe" not in extensions

    def test_sizes_read_as_a_person_reads_them(self):
        assert [format_size(n) for n in (812, 14_540, 3 * 1024 * 1024)] == [
            "812 B",
            "14.2 KB",
            "3.0 MB",
        ]
