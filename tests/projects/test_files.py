"""A project's files: read as attachments are, text extracted once, chunked, searched per turn."""

from __future__ import annotations

import pytest

from backend.errors import InputTooLargeError, InvalidInputError
from backend.projects import read_document, single_chunk
from backend.projects.chunks import chunk_text
from backend.uploads import AttachmentLimits, read_attachment
from tests.support.tiny_pdf import pdf_with_text

pytestmark = pytest.mark.anyio
LIMITS = AttachmentLimits(max_file_bytes=64 * 1024)
PNG = b"\x89PNG\r\n\x1a\n" + b"\0" * 64


def test_chunks_keep_every_word_in_order_and_stay_within_the_size():
    text = "\n\n".join(f"paragraph {n} " + "word " * (n * 37 % 300) for n in range(60))
    chunks = chunk_text(text, 500)
    assert all(0 < len(chunk) <= 500 for chunk in chunks)
    assert " ".join(chunks).split() == text.split()
    assert chunk_text("x" * 1_001, 500) == ["x" * 500, "x" * 500, "x"]
    assert chunk_text("  \n\n ") == []


async def test_a_text_file_is_chunked_and_its_best_chunks_are_found(projects):
    garden = projects.create("Garden")
    body = "\n\n".join(["Tomatoes want water daily."] + ["Filler about soil. " * 60] * 3)
    upload = await read_document("notes.md", single_chunk(body.encode()), LIMITS)
    added = projects.files.add_upload(garden.id, upload)
    assert added.media_type == "text/markdown" and added.size == len(body.encode())
    assert len(projects.files.text_of(added.id)) > 1
    hits = projects.files.search(garden.id, "tomatoes water")
    assert hits[0].file_name == "notes.md" and "Tomatoes" in hits[0].text
    assert projects.files.list_files(garden.id) == [added]


async def test_a_pdfs_text_is_extracted_once_and_searchable(projects):
    garden = projects.create("Garden")
    upload = await read_document(
        "plan.pdf", single_chunk(pdf_with_text("Compost turns weekly")), LIMITS
    )
    projects.files.add_upload(garden.id, upload)
    assert projects.files.search(garden.id, "compost")[0].file_name == "plan.pdf"


async def test_a_file_over_the_attachment_limit_is_refused_before_anything_is_stored(projects):
    garden = projects.create("Garden")
    huge = b"a" * (LIMITS.max_file_bytes + 1)
    with pytest.raises(InputTooLargeError):
        await read_document("huge.txt", single_chunk(huge), LIMITS)
    assert projects.files.list_files(garden.id) == []


@pytest.mark.parametrize(
    ("name", "data"), [("photo.png", PNG), ("tool.exe", b"MZ..."), ("bad.txt", b"a\0b")]
)
async def test_images_and_other_types_are_refused_with_a_reason(name, data):
    with pytest.raises(InvalidInputError, match=name.split(".")[0]):
        await read_document(name, single_chunk(data), LIMITS)


async def test_an_image_read_as_an_attachment_is_refused_by_the_project(projects):
    """The app's panel reads an upload as the composer does; the project refuses an image."""
    garden = projects.create("Garden")
    upload = await read_attachment("photo.png", single_chunk(PNG), LIMITS)
    with pytest.raises(InvalidInputError, match=r"photo\.png is an image"):
        projects.files.add_upload(garden.id, upload)
    assert projects.files.list_files(garden.id) == []


def test_removing_a_file_removes_its_chunks_from_search(projects):
    garden = projects.create("Garden")
    added = projects.add_file(garden.id, "a.txt", "text/plain", b"rhubarb crumble")
    projects.files.remove(added.id)
    projects.files.remove(added.id)  # removed in another tab meanwhile: no error
    assert projects.files.search(garden.id, "rhubarb") == []
    assert projects.files.list_files(garden.id) == []


def test_a_turn_gets_the_best_chunks_within_its_budget_and_only_its_projects(projects):
    garden, taxes = projects.create("Garden"), projects.create("Taxes")
    projects.add_file(garden.id, "g.txt", "text/plain", ("beans " * 1_000).encode())
    projects.add_file(taxes.id, "t.txt", "text/plain", b"beans are deductible")
    chat = projects.create_chat(garden.id)
    turn = projects.turns.turn_context(chat.id, "beans", budget_tokens=400)
    assert turn is not None
    assert {hit.file_name for hit in turn.file_chunks} == {"g.txt"}
    assert sum(len(hit.text) for hit in turn.file_chunks) <= 400 * 4
    assert projects.turns.turn_context(chat.id, "beans", budget_tokens=0).file_chunks == ()


def test_deleting_a_project_removes_its_files(projects):
    garden = projects.create("Garden")
    projects.add_file(garden.id, "g.txt", "text/plain", b"kohlrabi")
    projects.delete(garden.id, "move_out")
    again = projects.create("Garden again")
    assert projects.files.search(again.id, "kohlrabi") == []
