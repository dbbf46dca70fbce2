"""What the model reads of an attached document: its text, within a byte budget, cut visibly."""

import base64

from backend.attachment_text import DOCUMENT_TEXT_BUDGET_BYTES, document_text_for_model
from backend.runtime.prompt import to_model_messages
from tests.support.tiny_pdf import pdf_with_text


def file_part(name: str, media_type: str, data: bytes) -> dict:
    encoded = base64.b64encode(data).decode()
    return {
        "type": "file",
        "mediaType": media_type,
        "filename": name,
        "url": f"data:{media_type};base64,{encoded}",
    }


class TestDocumentText:
    def test_a_csv_is_given_whole_under_a_heading_naming_it(self):
        text = document_text_for_model(file_part("sales.csv", "text/csv", b"city,total\nOslo,12\n"))
        assert text is not None
        assert text.startswith("[attached file: sales.csv (text/csv, 19 B)]\n")
        assert "Oslo,12" in text and "cut" not in text

    def test_a_pdf_gives_its_extracted_text(self):
        pdf = pdf_with_text("Quarterly revenue grew", "by nine percent")
        text = document_text_for_model(file_part("q3.pdf", "application/pdf", pdf))
        assert text is not None and "Quarterly revenue grew" in text

    def test_a_document_over_the_budget_is_cut_with_a_note(self):
        big = ("é" * DOCUMENT_TEXT_BUDGET_BYTES).encode()  # 2 bytes per character
        text = document_text_for_model(file_part("big.txt", "text/plain", big))
        assert text is not None
        body, _, note = text.partition("\n")[2].rpartition("\n")
        assert len(body.encode()) <= DOCUMENT_TEXT_BUDGET_BYTES and body == "é" * len(body)
        assert note.startswith("[… cut: only the first 32.0 KB")

    def test_an_unreadable_pdf_says_so_instead_of_failing_the_turn(self):
        text = document_text_for_model(file_part("bad.pdf", "application/pdf", b"%PDF-1.4 garbage"))
        assert text is not None and "could not be read" in text

    def test_images_are_not_documents(self):
        assert document_text_for_model(file_part("a.png", "image/png", b"\x89PNG")) is None


class TestThePromptCarriesDocuments:
    def test_a_user_message_with_a_csv_gives_the_model_its_text(self):
        message = {
            "id": "u1",
            "role": "user",
            "parts": [
                file_part("sales.csv", "text/csv", b"city,total\nOslo,12\n"),
                {"type": "text", "text": "Sum it"},
            ],
        }
        [turn] = to_model_messages(message)
        assert "Oslo,12" in turn.content and turn.content.endswith("Sum it")
