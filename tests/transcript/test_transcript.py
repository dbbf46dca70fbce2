"""Render-ready windows of a conversation: what a chat view receives."""

import base64

import pytest

from backend.errors import NotFoundError
from backend.models import ReplyUsage
from backend.sessions import Sessions
from backend.transcript import (
    chosen_leaf,
    entry_from_message,
    follow_branches,
    load_earlier,
    load_window,
    newest_leaf_below,
)


def msg(mid: str, role: str = "user", text: str | None = None, **extra) -> dict:
    return {"id": mid, "role": role, "parts": [{"type": "text", "text": text or mid}], **extra}


@pytest.fixture
def session(tmp_path):
    sessions = Sessions(tmp_path / "chat.sqlite")
    yield sessions.session()
    sessions.close()


class TestWindow:
    def test_a_small_conversation_fits_whole_with_nothing_earlier(self, session):
        for i in range(4):
            session.append_message(msg(f"m{i}", "user" if i % 2 == 0 else "assistant"))
        window = load_window(session)
        assert [e.id for e in window.entries] == ["m0", "m1", "m2", "m3"]
        assert not window.has_earlier
        assert window.leaf_id == "m3"

    def test_a_tight_budget_keeps_the_newest_and_reports_earlier(self, session):
        for i in range(10):
            session.append_message(msg(f"m{i}", text="x" * 1000))
        window = load_window(session, byte_budget=3000)
        assert window.entries[-1].id == "m9"
        assert window.has_earlier
        assert len(window.entries) < 10


class TestEarlierPages:
    def test_earlier_pages_walk_back_without_gaps_or_repeats(self, session):
        for i in range(30):
            session.append_message(msg(f"m{i}"))
        page, more = load_earlier(session, leaf_id="m29", before_id="m20", count=8)
        assert [e.id for e in page] == [f"m{i}" for i in range(12, 20)]
        assert more
        page, more = load_earlier(session, leaf_id="m29", before_id="m12", count=20)
        assert [e.id for e in page] == [f"m{i}" for i in range(12)]
        assert not more


class TestBranches:
    def test_regenerated_replies_show_their_position_among_siblings(self, session):
        session.append_message(msg("u1"))
        session.append_message(msg("a1", "assistant"))
        session.append_message(msg("a2", "assistant"), parent_id="u1")
        window = load_window(session)
        assert [e.id for e in window.entries] == ["u1", "a2"]
        reply = window.entries[-1]
        assert (reply.sibling_index, reply.sibling_count) == (2, 2)
        assert reply.prev_sibling_id == "a1" and reply.next_sibling_id == ""

    def test_choosing_a_sibling_shows_the_newest_leaf_below_it(self, session):
        session.append_message(msg("u1"))
        session.append_message(msg("a1", "assistant"))
        session.append_message(msg("u2"))
        session.append_message(msg("a2", "assistant"), parent_id="u1")
        assert newest_leaf_below(session, "a1") == "u2"
        window = load_window(session, leaf_id=newest_leaf_below(session, "a1"))
        assert [e.id for e in window.entries] == ["u1", "a1", "u2"]


class TestAChosenVersionMustBeAMessageOfTheChat:
    def test_a_message_of_the_chat_is_shown_at_its_newest_leaf(self, session):
        session.append_message(msg("u1"))
        session.append_message(msg("a1", "assistant"))
        session.append_message(msg("a2", "assistant"), parent_id="u1")
        assert chosen_leaf(session, "a1") == "a1"
        assert chosen_leaf(session, "u1") == "a2"

    @pytest.mark.parametrize(
        "hostile", ["another-chats-message", "../../directory.sqlite", "", "x" * 100_000]
    )
    def test_an_id_that_names_no_message_of_the_chat_is_not_found(self, session, hostile):
        session.append_message(msg("u1"))
        with pytest.raises(NotFoundError) as refused:
            chosen_leaf(session, hostile)
        assert len(str(refused.value)) < 200  # a 100 KB id is not repeated back whole

    @pytest.mark.parametrize("hostile", [["u1"], {"id": "u1"}, 7, None])
    def test_an_id_that_is_not_text_is_not_found(self, session, hostile):
        session.append_message(msg("u1"))
        with pytest.raises(NotFoundError):
            chosen_leaf(session, hostile)


class TestEachViewerFollowsItsOwnBranch:
    """Tabs look at branches of their own: only a reply in a tab's branch moves it."""

    @staticmethod
    def chat_with_one_reply(session):
        session.append_message(msg("u1"))
        session.append_message(msg("a1", "assistant"))

    def test_a_reply_in_the_branch_a_viewer_looks_at_moves_it_to_the_reply(self, session):
        self.chat_with_one_reply(session)
        session.append_message(msg("u2"))
        session.append_message(msg("a2", "assistant"))
        views = follow_branches(session, load_window(session), {"a1": "a1"})
        assert views.leaf_of == {"a1": "a2"}
        assert views.windows == {}

    def test_a_regenerated_reply_leaves_a_viewer_of_the_old_one_on_its_branch(self, session):
        self.chat_with_one_reply(session)
        session.append_message(msg("a1b", "assistant"), parent_id="u1")
        views = follow_branches(session, load_window(session), {"a1": "a1", "a1b": "a1b"})
        assert views.leaf_of == {"a1": "a1", "a1b": "a1b"}
        assert [e.id for e in views.windows["a1"].entries] == ["u1", "a1"]
        assert views.windows["a1"].entries[-1].sibling_count == 2
        assert set(views.windows) == {"a1"}  # the newest branch is the shared window

    def test_a_message_written_below_a_branch_off_the_newest_path_is_shown_there(self, session):
        self.chat_with_one_reply(session)
        session.append_message(msg("u2"), parent_id="a1")
        session.append_message(msg("a1b", "assistant"), parent_id="u1")  # newest elsewhere
        views = follow_branches(session, load_window(session), {"a1": "a1"})
        assert views.leaf_of == {"a1": "u2"}
        assert [e.id for e in views.windows["u2"].entries] == ["u1", "a1", "u2"]

    def test_a_viewer_of_an_empty_chat_follows_its_first_messages(self, session):
        self.chat_with_one_reply(session)
        assert follow_branches(session, load_window(session), {"": ""}).leaf_of == {"": "a1"}

    def test_a_leaf_that_is_gone_follows_the_newest(self, session):
        self.chat_with_one_reply(session)
        views = follow_branches(session, load_window(session), {"x": "gone"})
        assert (views.leaf_of, views.windows) == ({"x": "a1"}, {})


class TestProjection:
    def test_html_in_a_message_stays_plain_text_for_the_markdown_renderer(self):
        entry = entry_from_message(msg("m", text="<img src=x onerror=alert(1)><script>x</script>"))
        assert entry.text == "<img src=x onerror=alert(1)><script>x</script>"

    def test_images_tools_and_run_status_are_projected(self):
        entry = entry_from_message(
            {
                "id": "a",
                "role": "assistant",
                "parts": [
                    {"type": "text", "text": "done"},
                    {"type": "file", "mediaType": "image/png", "url": "data:image/png;base64,AA=="},
                    {
                        "type": "tool-remember",
                        "toolCallId": "t1",
                        "input": {"fact": "likes tea"},
                        "output": "ok",
                    },
                ],
                "metadata": {"status": "cancelled"},
            }
        )
        assert entry.images == ("data:image/png;base64,AA==",)
        assert entry.tool_calls[0].name == "remember"
        assert entry.status == "cancelled"

    def test_a_failed_reply_says_why_it_stopped(self):
        interrupted = "The app stopped while this reply was being written."
        entry = entry_from_message(
            {
                "id": "a",
                "role": "assistant",
                "parts": [{"type": "text", "text": "half a rep"}],
                "metadata": {"status": "failed", "error": interrupted},
            }
        )
        assert (entry.status, entry.error) == ("failed", interrupted)
        assert entry_from_message(msg("u", text="hi")).error == ""

    def test_an_assistant_reply_names_the_model_and_endpoint_that_wrote_it(self):
        entry = entry_from_message(
            msg(
                "a",
                "assistant",
                metadata={"status": "completed", "model": "gpt-x", "endpoint": "lab"},
            )
        )
        assert (entry.model, entry.endpoint) == ("gpt-x", "lab")

    def test_a_message_without_model_metadata_names_none(self):
        entry = entry_from_message(msg("u"))
        assert (entry.model, entry.endpoint) == ("", "")

    def test_compaction_overlays_are_marked_as_summaries(self):
        assert entry_from_message(msg("compaction_abc", "assistant")).is_summary


class TestEditedFirstMessage:
    def test_an_edited_first_message_is_navigable_among_the_roots(self, session):
        session.append_message(msg("u1"))
        session.append_message(msg("a1", "assistant"))
        session.append_message(msg("u1-edit"), parent_id=None)
        window = load_window(session)
        first = window.entries[0]
        assert first.id == "u1-edit"
        assert (first.sibling_index, first.sibling_count, first.prev_sibling_id) == (2, 2, "u1")
        assert newest_leaf_below(session, "u1") == "a1"


class TestWindowCount:
    def test_many_small_messages_are_capped_by_count_as_well_as_bytes(self, session):
        for i in range(100):
            session.append_message(msg(f"m{i}"))
        window = load_window(session, max_messages=30)
        assert [e.id for e in window.entries] == [f"m{i}" for i in range(70, 100)]
        assert window.has_earlier


class TestSendTimes:
    def test_each_entry_carries_the_time_its_message_was_stored(self, session):
        session.import_message(msg("u1"), parent_id=None, created_at=1_700_000_000_000)
        session.import_message(msg("a1", "assistant"), parent_id="u1", created_at=1_700_000_005_000)
        window = load_window(session, leaf_id="a1")
        assert [e.sent_at for e in window.entries] == [1_700_000_000_000, 1_700_000_005_000]

    def test_earlier_pages_carry_their_send_times_too(self, session):
        for i in range(5):
            parent = f"m{i - 1}" if i else None
            session.import_message(msg(f"m{i}"), parent_id=parent, created_at=1_000 * (i + 1))
        page, _ = load_earlier(session, leaf_id="m4", before_id="m2", count=5)
        assert [e.sent_at for e in page] == [1_000, 2_000]


class TestAttachedDocuments:
    def test_a_document_becomes_a_downloadable_file_with_its_name_and_size(self, session):
        url = "data:text/csv;base64," + base64.b64encode(b"city,total\nOslo,12\n").decode()
        part = {"type": "file", "mediaType": "text/csv", "filename": "sales.csv", "url": url}
        session.append_message({"id": "u1", "role": "user", "parts": [part]})
        [entry] = load_window(session).entries
        [document] = entry.files
        assert (document.name, document.media_type, document.size) == ("sales.csv", "text/csv", 19)
        assert document.url == url  # the stored bytes, served back whole
        assert entry.images == ()


class TestMessageCount:
    def test_the_count_covers_the_whole_shown_path_not_only_the_window(self, session):
        for i in range(10):
            session.append_message(msg(f"m{i}", text="x" * 1000))
        window = load_window(session, byte_budget=3000)
        assert window.has_earlier and len(window.entries) < 10
        assert window.message_count == 10

    def test_the_count_follows_the_branch_on_screen(self, session):
        for mid in ("u1", "a1", "u2", "a2"):
            session.append_message(msg(mid))
        session.append_message(msg("a1b", "assistant"), parent_id="u1")
        assert load_window(session, leaf_id="a2").message_count == 4
        assert load_window(session, leaf_id="a1b").message_count == 2

    def test_an_empty_conversation_counts_none(self, session):
        assert load_window(session).message_count == 0


class TestReplyUsage:
    def test_a_reply_carries_the_usage_its_metadata_records(self):
        usage = {"inputTokens": 412, "outputTokens": 96, "estimated": False}
        entry = entry_from_message(msg("a1", "assistant", metadata={"usage": usage}))
        assert entry.usage == ReplyUsage(412, 96, estimated=False)

    def test_a_reply_without_usage_carries_none(self):
        assert entry_from_message(msg("a1", "assistant")).usage is None
