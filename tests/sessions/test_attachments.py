"""Attachments: inline media is stored once by hash, outside the row, and read back verbatim."""

from __future__ import annotations

import base64
import hashlib
import json
import os

from backend.sessions import POINTER_PREFIX
from backend.sessions.attachments import extract_attachments
from tests.sessions.conftest import raw_db, text_message


def payload(size: int, seed: int = 0) -> bytes:
    return hashlib.sha256(str(seed).encode()).digest() * (size // 32) + os.urandom(size % 32)


def image_message(message_id: str, data: bytes, media_type: str = "image/png") -> dict:
    encoded = base64.b64encode(data).decode()
    return {
        "id": message_id,
        "role": "user",
        "parts": [
            {"type": "text", "text": "look"},
            {"type": "file", "mediaType": media_type, "url": f"data:{media_type};base64,{encoded}"},
        ],
    }


def stored_row(session, message_id: str) -> str:
    row = raw_db(session).query_one(
        "SELECT content FROM session_messages WHERE session_id = ? AND id = ?",
        (session.id, message_id),
    )
    return row["content"]


def payload_count(session) -> int:
    return raw_db(session).query_one("SELECT count(*) AS n FROM session_attachment_meta")["n"]


def reference_count(session) -> int:
    return raw_db(session).query_one("SELECT count(*) AS n FROM session_attachment_refs")["n"]


class TestExtraction:
    def test_stores_media_outside_the_row_and_reads_it_back_verbatim(self, session):
        message = image_message("img", payload(300_000))
        session.append_message(message)
        row = stored_row(session, "img")
        assert len(row.encode()) < 1_000
        assert POINTER_PREFIX in row
        assert session.get_message("img") == message
        assert session.get_history() == [message]
        assert list(session.history(newest_first=True)) == [message]

    def test_the_pointer_replaces_only_the_payload_and_keeps_the_parts_shape(self, session):
        data = payload(1_000)
        session.append_message(image_message("img", data))
        digest = hashlib.sha256(data).hexdigest()
        assert f'"url":"{POINTER_PREFIX}{digest}"' in stored_row(session, "img")
        assert '"mediaType":"image/png"' in stored_row(session, "img")

    def test_never_extracts_text_which_chunks_instead(self, session):
        message = image_message("doc", b"plain text " * 200_000, media_type="text/plain")
        session.append_message(message)
        assert payload_count(session) == 0
        assert session.get_message("doc") == message

    def test_leaves_a_non_base64_data_url_inline(self, session):
        message = {
            "id": "svg",
            "role": "user",
            "parts": [
                {"type": "file", "mediaType": "image/svg+xml", "url": "data:image/svg+xml,<svg/>"}
            ],
        }
        session.append_message(message)
        assert payload_count(session) == 0
        assert session.get_message("svg") == message

    def test_leaves_base64_that_would_not_re_encode_identically_inline(self, session):
        message = {
            "id": "m",
            "role": "user",
            "parts": [
                {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,aGk"}
            ],
        }
        session.append_message(message)
        assert payload_count(session) == 0
        assert session.get_message("m") == message

    def test_a_2_mib_image_goes_to_the_attachment_store_not_the_chunker(self, session):
        message = image_message("img", payload(2 * 1024 * 1024))
        session.append_message(message)
        row = raw_db(session).query_one(
            "SELECT content_chunks FROM session_messages WHERE id = 'img'"
        )
        assert row["content_chunks"] == 0
        chunks = raw_db(session).query_one("SELECT chunks FROM session_attachment_meta")["chunks"]
        assert chunks == 2
        assert session.get_message("img") == message

    def test_extracts_media_nested_in_tool_output(self, session):
        data = base64.b64encode(payload(5_000)).decode()
        message = {
            "id": "tool",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-screenshot",
                    "toolCallId": "c1",
                    "state": "output-available",
                    "output": {
                        "type": "content",
                        "value": [{"type": "media", "mediaType": "image/jpeg", "data": data}],
                    },
                }
            ],
        }
        session.append_message(message)
        assert payload_count(session) == 1
        assert data not in stored_row(session, "tool")
        assert session.get_message("tool") == message

    def test_bare_base64_data_needs_a_declared_media_type(self):
        data = base64.b64encode(payload(600)).decode()
        record = {"id": "m", "role": "user", "parts": [{"type": "x", "data": data}]}
        stored, payloads = extract_attachments(record)
        assert stored is record
        assert payloads == {}

    def test_a_data_url_without_a_media_type_key_reads_back_without_one(self, session):
        data = base64.b64encode(payload(700)).decode()
        message = {
            "id": "m",
            "role": "user",
            "parts": [{"type": "file", "url": f"data:image/webp;name=a.webp;base64,{data}"}],
        }
        session.append_message(message)
        assert payload_count(session) == 1
        assert session.get_message("m") == message

    def test_walks_at_most_eight_levels_deep(self):
        data = base64.b64encode(payload(100)).decode()
        record: dict = {"mediaType": "image/png", "data": data}
        shallow = {"id": "m", "role": "user", "parts": [record]}
        assert extract_attachments(shallow)[1]
        deep: dict = record
        for _ in range(9):
            deep = {"inner": deep}
        too_deep = {"id": "m", "role": "user", "parts": [deep]}
        assert extract_attachments(too_deep)[1] == {}


class TestDeduplication:
    def test_stores_one_record_when_the_same_payload_arrives_twice(self, session):
        data = payload(50_000)
        session.append_message(image_message("a", data))
        session.append_message(image_message("b", data))
        assert payload_count(session) == 1
        assert reference_count(session) == 2
        assert session.get_message("b") == image_message("b", data)

    def test_splits_a_payload_larger_than_one_row_across_chunks(self, session):
        session.append_message(image_message("a", payload(2_000_000)))
        rows = raw_db(session).query("SELECT idx FROM session_attachment_chunks ORDER BY idx")
        assert [row["idx"] for row in rows] == [0, 1]


class TestReferences:
    def test_keeps_a_pointers_reference_when_the_message_is_written_back(self, session):
        data = payload(10_000)
        session.append_message(image_message("a", data))
        pointer_form = stored_row(session, "a")
        session.update_message(json.loads(pointer_form))
        assert reference_count(session) == 1
        assert session.get_message("a") == image_message("a", data)

    def test_references_a_pointer_nested_inside_another_part(self, session):
        data = payload(10_000)
        session.append_message(image_message("a", data))
        digest = hashlib.sha256(data).hexdigest()
        session.append_message(
            {
                "id": "b",
                "role": "assistant",
                "parts": [{"type": "data-ref", "data": {"url": f"{POINTER_PREFIX}{digest}"}}],
            }
        )
        session.delete_messages(["a"])
        assert payload_count(session) == 1  # still referenced by b
        session.delete_messages(["b"])
        assert payload_count(session) == 0

    def test_returns_none_for_an_update_whose_target_is_gone_and_stores_nothing(self, session):
        assert session.update_message(image_message("ghost", payload(10_000))) is None
        assert payload_count(session) == 0

    def test_collects_a_payload_once_its_last_reference_goes(self, session):
        data = payload(10_000)
        session.append_message(image_message("a", data))
        session.append_message(image_message("b", data))
        session.delete_messages(["a"])
        assert payload_count(session) == 1
        session.delete_messages(["b"])
        assert payload_count(session) == 0
        assert (
            raw_db(session).query_one("SELECT count(*) AS n FROM session_attachment_chunks")["n"]
            == 0
        )

    def test_drops_payloads_a_message_stopped_referencing_on_update(self, session):
        session.append_message(image_message("a", payload(10_000, seed=1)))
        session.update_message(image_message("a", payload(10_000, seed=2)))
        assert payload_count(session) == 1
        assert reference_count(session) == 1
        session.update_message(text_message("a", "no image any more"))
        assert payload_count(session) == 0

    def test_treats_a_re_sent_identical_payload_as_an_unchanged_update(self, session, events):
        message = image_message("a", payload(10_000))
        session.append_message(message)
        session.update_message(
            image_message("a", base64.b64decode(message["parts"][1]["url"].split(",")[1]))
        )
        assert [e.type for e in events] == ["append"]
        assert payload_count(session) == 1

    def test_clears_every_payload_with_the_session(self, sessions):
        a = sessions.session("a")
        b = sessions.session("b")
        shared = payload(10_000, seed=7)
        a.append_message(image_message("x", shared))
        a.append_message(image_message("y", payload(10_000, seed=8)))
        b.append_message(image_message("z", shared))
        a.clear_messages()
        assert payload_count(a) == 1  # the payload b still references survives
        assert b.get_message("z") == image_message("z", shared)


class TestReadBudget:
    def test_charges_payload_bytes_to_the_read_budget(self, session):
        session.append_message(image_message("img", payload(600_000)))
        (stat,) = session.get_history_row_stats()
        assert stat.bytes > 700_000

    def test_a_run_of_media_heavy_messages_cannot_exceed_the_budget(self, session):
        for index in range(8):
            session.append_message(image_message(f"i{index}", payload(400_000, seed=index)))
        budget = 1_500_000
        recent = session.get_recent_history(budget)
        assert len(recent.messages) <= 3
        assert recent.truncated is True
        hydrated = sum(len(str(m).encode()) for m in recent.messages)
        assert hydrated < 1.1 * budget
