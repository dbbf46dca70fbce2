"""Compaction: overlays applied at read time, compact(), auto-compaction, the reference
compaction function, and overlay echoes that must never become rows (#1984)."""

from __future__ import annotations

import logging

import pytest

from backend.sessions import (
    COMPACTION_PREFIX,
    MAX_PATH_DEPTH,
    CompactResult,
    create_compact_function,
    estimate_message_tokens,
    estimate_string_tokens,
)
from backend.sessions.compaction import (
    align_boundary_backward,
    align_boundary_forward,
    build_summary_prompt,
)
from backend.sessions.overlays import plan_overlays
from backend.sessions.records import StoredCompaction
from tests.sessions.conftest import append_chain, ids, text_message


def chain(session, count: int) -> list[str]:
    names = [f"m{i}" for i in range(count)]
    append_chain(session, *names)
    return names


def fixed(from_id: str, to_id: str, summary: str = "summary"):
    return lambda messages: CompactResult(from_id, to_id, summary)


class TestOverlays:
    def test_an_overlay_replaces_its_range_at_read_time_without_deleting_rows(self, session):
        chain(session, 6)
        compaction = session.add_compaction("first three", "m1", "m3")
        history = session.get_history()
        assert ids(history) == ["m0", COMPACTION_PREFIX + compaction.id, "m4", "m5"]
        assert history[1] == {
            "id": COMPACTION_PREFIX + compaction.id,
            "role": "assistant",
            "parts": [{"type": "text", "text": "first three"}],
            "createdAt": compaction.created_at,
        }
        assert session.get_message("m2") == text_message("m2")
        assert len(session.get_history_row_stats()) == 6

    def test_a_newer_overlay_from_the_same_start_supersedes_the_older(self, session):
        chain(session, 14)
        session.add_compaction("short", "m1", "m3")
        newer = session.add_compaction("long", "m1", "m12")
        assert ids(session.get_history()) == ["m0", COMPACTION_PREFIX + newer.id, "m13"]

    def test_equal_timestamps_resolve_by_insertion_order(self, session):
        chain(session, 5)
        first = StoredCompaction("a", "one", "m1", "m2", 7)
        second = StoredCompaction("b", "two", "m1", "m2", 7)
        spans = plan_overlays(["m0", "m1", "m2", "m3"], [first, second])
        assert [span.compaction.id for span in spans] == ["b"]

    def test_sibling_branches_keep_their_own_overlays_even_from_a_shared_start(self, session):
        append_chain(session, "root", "start", "a1", "a2")
        session.append_message(text_message("b1"), parent_id="start")
        session.append_message(text_message("b2"))
        session.add_compaction("Branch A summary", "start", "a1")
        session.add_compaction("Branch A summary 2", "start", "a2")
        session.add_compaction("Branch B summary", "start", "b1")
        a = session.get_history(leaf_id="a2")
        b = session.get_history(leaf_id="b2")
        assert a[1]["parts"][0]["text"] == "Branch A summary 2"
        assert len(a) == 2
        assert b[1]["parts"][0]["text"] == "Branch B summary"
        assert ids(b)[2:] == ["b2"]

    def test_an_overlay_with_an_endpoint_off_the_path_is_ignored(self, session):
        chain(session, 4)
        session.add_compaction("dangling", "m1", "ghost")
        assert ids(session.get_history()) == ["m0", "m1", "m2", "m3"]

    def test_an_overlay_spanning_content_windows_reads_correctly(self, session):
        names = chain(session, 120)
        compaction = session.add_compaction("middle", "m30", "m80")
        expected = [*names[:30], COMPACTION_PREFIX + compaction.id, *names[81:]]
        assert ids(session.get_history()) == expected
        assert ids(session.history(newest_first=True)) == expected[::-1]

    def test_newest_first_honours_overlays_and_equals_the_reversed_forward_read(self, session):
        chain(session, 30)
        session.add_compaction("one", "m2", "m9")
        session.add_compaction("two", "m12", "m20")
        forward = session.get_history()
        assert list(session.history(newest_first=True)) == forward[::-1]

    def test_get_compactions_lists_overlays_in_insertion_order(self, session):
        chain(session, 4)
        first = session.add_compaction("one", "m0", "m1")
        second = session.add_compaction("two", "m2", "m3")
        assert session.get_compactions() == [first, second]
        assert isinstance(first.created_at, int)

    def test_a_direct_compaction_is_reported_on_the_feed(self, session, events):
        chain(session, 3)
        compaction = session.add_compaction("s", "m0", "m1")
        assert events[-1].type == "compaction"
        assert events[-1].compaction == compaction


class TestOverlayEchoes:
    """#1984: a client echoing an overlay back must never create a row; old echoes are hidden."""

    def store_echo(self, session, compaction_id: str, parent: str) -> str:
        echo_id = COMPACTION_PREFIX + compaction_id
        session.import_message(
            text_message(echo_id, "echoed summary", role="assistant"),
            parent_id=parent,
            created_at=1,
        )
        return echo_id

    def test_hides_echo_rows_stored_before_the_guard_and_reparents_their_children(self, session):
        append_chain(session, "m1", "m2", "m3")
        compaction = session.add_compaction("summary", "m1", "m2")
        self.store_echo(session, compaction.id, parent="m3")
        session.append_message(text_message("m4"))
        visible = ids(session.get_history())
        assert visible == [COMPACTION_PREFIX + compaction.id, "m3", "m4"]
        assert visible.count(COMPACTION_PREFIX + compaction.id) == 1  # the overlay, not the row
        assert session.get_latest_leaf()["id"] == "m4"
        assert [s.id for s in session.get_history_row_stats()] == ["m1", "m2", "m3", "m4"]
        assert session.search("echoed summary") == []

    def test_keeps_an_imported_summary_this_session_has_no_overlay_for(self, session):
        append_chain(session, "m1")
        session.import_message(
            text_message("compaction_foreign", "carried over", role="assistant"),
            parent_id="m1",
            created_at=1,
        )
        assert ids(session.get_history()) == ["m1", "compaction_foreign"]
        assert [r.id for r in session.search("carried over")] == ["compaction_foreign"]

    def test_lists_an_echo_rows_children_among_their_siblings_in_order(self, session):
        append_chain(session, "root", "x")
        compaction = session.add_compaction("s", "root", "x")
        echo = self.store_echo(session, compaction.id, parent="root")
        session.append_message(text_message("alt"), parent_id=echo)
        session.append_message(text_message("next"), parent_id="root")
        assert ids(session.get_branches("root")) == ["x", "alt", "next"]

    def test_an_echo_leaf_yields_to_its_nearest_visible_parent(self, session):
        append_chain(session, "m1", "m2")
        compaction = session.add_compaction("s", "m1", "m1")
        self.store_echo(session, compaction.id, parent="m2")
        assert session.get_latest_leaf()["id"] == "m2"

    def test_hides_an_echo_before_a_later_compaction_on_a_newest_first_read(self, session):
        append_chain(session, "m1", "m2")
        first = session.add_compaction("first", "m1", "m1")
        echo = self.store_echo(session, first.id, parent="m2")
        session.append_message(text_message("m3"), parent_id=echo)
        session.append_message(text_message("m4"))
        session.add_compaction("later", "m3", "m3")
        forward = session.get_history()
        backward = list(session.history(newest_first=True))
        assert backward == forward[::-1]
        assert len(forward) == 4
        assert echo not in [m["id"] for m in forward if m["parts"][0]["text"] == "echoed summary"]


class TestCompact:
    def test_refuses_without_a_registered_function(self, session):
        with pytest.raises(RuntimeError, match="on_compaction"):
            session.compact()

    def test_stores_the_proposed_overlay_and_reports_it(self, session, events):
        chain(session, 6)
        session.on_compaction(fixed("m1", "m3"))
        result = session.compact()
        assert result == CompactResult("m1", "m3", "summary")
        history = session.get_history()
        assert ids(history)[0] == "m0" and ids(history)[2:] == ["m4", "m5"]
        assert events[-1].type == "compact"
        assert events[-1].compaction.from_message_id == "m1"

    def test_extends_an_overlay_visible_on_this_branch_iteratively(self, session):
        append_chain(session, "m1", "m2", "m3", "m4")
        session.add_compaction("first", "m1", "m2")
        assert len(session.get_history()) == 3
        session.on_compaction(fixed("m3", "m3", "second"))
        result = session.compact()
        assert result.from_message_id == "m1"
        history = session.get_history()
        assert len(history) == 2
        assert history[0]["id"].startswith(COMPACTION_PREFIX)
        assert history[0]["parts"][0]["text"] == "second"
        assert ids(history)[1:] == ["m4"]

    def test_an_explicit_branch_does_not_extend_a_sibling_overlay(self, session):
        append_chain(session, "root", "a1", "a2", "a3")
        session.append_message(text_message("b1"), parent_id="root")
        session.append_message(text_message("b2"))
        session.add_compaction("A", "a1", "a2")
        session.on_compaction(fixed("b1", "b1", "B"))
        result = session.compact(leaf_id="b2")
        assert result.from_message_id == "b1"
        assert session.get_history(leaf_id="a3")[1]["parts"][0]["text"] == "A"

    def test_a_function_proposing_nothing_stores_nothing(self, session):
        chain(session, 6)
        session.on_compaction(lambda messages: None)
        assert session.compact() is None
        assert session.get_compactions() == []

    def test_a_range_ending_off_the_branch_is_ignored(self, session):
        chain(session, 6)
        session.on_compaction(fixed("m1", "ghost"))
        assert session.compact() is None
        assert session.get_compactions() == []

    def test_a_failing_function_is_logged_and_stores_nothing(self, session, caplog):
        chain(session, 6)

        def broken(messages):
            raise RuntimeError("model down")

        session.on_compaction(broken)
        with caplog.at_level(logging.WARNING, logger="backend.sessions"):
            assert session.compact() is None
        assert "compaction" in caplog.text
        assert session.get_compactions() == []

    def test_the_function_sees_the_branch_with_overlays_applied(self, session):
        chain(session, 6)
        session.add_compaction("earlier", "m1", "m2")
        seen: list[list[str]] = []
        session.on_compaction(lambda messages: seen.append(ids(messages)))
        session.compact()
        assert seen[0][0] == "m0" and seen[0][1].startswith(COMPACTION_PREFIX)


class TestAutoCompaction:
    def test_compacts_after_an_append_that_crosses_the_threshold(self, session):
        session.on_compaction(create_compact_function(lambda prompt: "the summary", 1))
        session.compact_after(100)
        for index in range(6):
            session.append_message(text_message(f"m{index}", "short"))
        assert session.get_compactions() == []
        session.append_message(text_message("big", "y" * 600))
        assert len(session.get_compactions()) == 1
        history = session.get_history()
        assert any(m["parts"][0]["text"] == "the summary" for m in history)

    def test_the_threshold_is_strict(self, session):
        session.on_compaction(fixed("m0", "m0"))
        append_chain(session, "m0", "m1", "m2")
        session.compact_after(session.token_estimate())
        session.update_message(text_message("m2"))  # nothing changes, nothing crosses
        session.append_message(text_message("m3", ""))  # +4 framing tokens: now above
        assert len(session.get_compactions()) == 1

    def test_exactly_at_the_threshold_does_not_compact(self, session):
        session.on_compaction(fixed("m0", "m0"))
        append_chain(session, "m0")
        estimate_after_next = session.token_estimate() + estimate_message_tokens(
            [text_message("m1")]
        )
        session.compact_after(estimate_after_next)
        append_chain(session, "m1")
        assert session.token_estimate() == estimate_after_next
        assert session.get_compactions() == []

    def test_updates_imports_and_duplicates_never_trigger_it(self, session):
        calls: list[int] = []
        session.on_compaction(lambda messages: calls.append(1))
        session.compact_after(0)
        session.import_message(text_message("i"), parent_id=None, created_at=1)
        append_chain(session, "a")
        assert calls == [1]
        session.update_message(text_message("a", "changed " * 100))
        session.append_message(text_message("a"))
        assert calls == [1]

    def test_without_a_threshold_or_function_nothing_happens(self, session):
        session.compact_after(0)
        append_chain(session, "a", "b")
        assert session.get_compactions() == []

    def test_a_failure_is_non_fatal_and_the_append_stands(self, session, caplog):
        def broken(messages):
            raise RuntimeError("boom")

        session.on_compaction(broken).compact_after(0)
        with caplog.at_level(logging.WARNING, logger="backend.sessions"):
            result = session.append_message(text_message("a"))
        assert result.inserted
        assert ids(session.get_history()) == ["a"]

    def test_configuration_survives_asking_for_the_handle_again(self, sessions):
        sessions.session("s").on_compaction(fixed("m0", "m0")).compact_after(0)
        append_chain(sessions.session("s"), "m0", "m1")
        assert len(sessions.session("s").get_compactions()) >= 1


class TestTokenEstimate:
    def test_an_empty_session_estimates_zero(self, session):
        assert session.token_estimate() == 0

    def test_sums_the_stamped_row_estimates_of_the_active_path(self, session):
        messages = [text_message(f"m{i}", "word " * (i * 10)) for i in range(5)]
        for message in messages:
            session.append_message(message)
        assert session.token_estimate() == estimate_message_tokens(messages)
        assert sum(s.token_estimate for s in session.get_history_row_stats()) == (
            session.token_estimate()
        )

    def test_an_update_moves_the_estimate(self, session):
        append_chain(session, "a", "b")
        before = session.token_estimate()
        session.update_message(text_message("a", "much longer text " * 50))
        assert session.token_estimate() > before

    def test_a_branch_append_re_derives_the_estimate_for_the_new_branch(self, session):
        session.append_message(text_message("root", "r"))
        session.append_message(text_message("long", "word " * 500))
        long_estimate = session.token_estimate()
        session.append_message(text_message("short", "s"), parent_id="root")
        assert session.token_estimate() < long_estimate
        assert session.token_estimate() == estimate_message_tokens(
            [text_message("root", "r"), text_message("short", "s")]
        )

    def test_overlays_replace_their_rows_estimates_with_the_summarys(self, session):
        messages = [text_message(f"m{i}", "word " * 100) for i in range(4)]
        for message in messages:
            session.append_message(message)
        session.add_compaction("tiny", "m1", "m2")
        expected = estimate_message_tokens([messages[0], messages[3]]) + estimate_string_tokens(
            "tiny"
        )
        assert session.token_estimate() == expected

    def test_inline_images_are_charged_a_flat_rate(self, session):
        import base64

        url = "data:image/png;base64," + base64.b64encode(b"\x89PNG" * 1000).decode()
        session.append_message(
            {
                "id": "i",
                "role": "user",
                "parts": [{"type": "file", "mediaType": "image/png", "url": url}],
            }
        )
        assert session.token_estimate() == 4 + 1_600

    @pytest.mark.slow
    def test_stops_growing_at_the_walk_cap(self, session):
        with session._db.transaction():
            parent = None
            for index in range(MAX_PATH_DEPTH + 1):
                session.import_message(
                    text_message(f"m{index}", "x"), parent_id=parent, created_at=index
                )
                parent = f"m{index}"
        at_cap = session.token_estimate()
        session.append_message(text_message("over", "x"))
        assert session.token_estimate() == at_cap


class TestCompactFunction:
    def turns(self, count: int) -> list[dict]:
        return [
            text_message(f"m{i}", f"turn {i} " * 20, role="user" if i % 2 == 0 else "assistant")
            for i in range(count)
        ]

    def test_five_messages_are_too_few_and_the_model_is_not_called(self):
        calls: list[str] = []
        compact = create_compact_function(lambda prompt: calls.append(prompt) or "s")
        assert compact(self.turns(5)) is None
        assert calls == []

    def test_keeps_three_head_and_at_least_two_tail_messages(self):
        prompts: list[str] = []
        compact = create_compact_function(lambda p: prompts.append(p) or "summary", 1)
        result = compact(self.turns(12))
        assert result.from_message_id == "m3"
        assert result.to_message_id != "m11"
        assert result.to_message_id == "m9"
        assert "turn 3" in prompts[0]
        assert "turn 11" not in prompts[0]

    def test_a_large_tail_budget_keeps_more_messages_verbatim(self):
        compact = create_compact_function(lambda p: "summary", keep_recent_tokens=200)
        result = compact(self.turns(12))  # ~56 tokens a turn: m9, m10, m11 fit in 200
        assert result == CompactResult("m3", "m8", "summary")

    def test_an_overlay_in_the_input_is_never_a_range_endpoint_but_its_text_is_kept(self):
        messages = self.turns(12)
        messages[3] = text_message("compaction_old", "PREVIOUS SUMMARY TEXT", role="assistant")
        prompts: list[str] = []
        result = create_compact_function(lambda p: prompts.append(p) or "s", 1)(messages)
        assert not result.from_message_id.startswith(COMPACTION_PREFIX)
        assert not result.to_message_id.startswith(COMPACTION_PREFIX)
        assert "PREVIOUS SUMMARY TEXT" in prompts[0]

    def test_a_blank_summary_proposes_nothing(self):
        assert create_compact_function(lambda p: "   ", 1)(self.turns(12)) is None

    def test_the_prompt_renders_tool_payloads_as_json(self):
        message = {
            "id": "t",
            "role": "assistant",
            "parts": [
                {
                    "type": "tool-crm",
                    "toolCallId": "c",
                    "input": {"q": "acme"},
                    "output": {"customer": "ACME", "amount": 1200},
                }
            ],
        }
        prompt = build_summary_prompt([message], None, 100)
        assert "[Tool: crm]" in prompt
        assert 'Input: {"q":"acme"}' in prompt
        assert 'Output: {"customer":"ACME","amount":1200}' in prompt
        assert "[object Object]" not in prompt
        for section in ("## Topic", "## Key Points", "## Current State", "## Open Items"):
            assert section in prompt

    def test_boundaries_never_separate_a_tool_call_from_its_result(self):
        call = {
            "id": "call",
            "role": "assistant",
            "parts": [{"type": "dynamic-tool", "toolName": "t", "toolCallId": "c1", "input": {}}],
        }
        result = {  # a result carried by its own message (role "tool", legacy transcripts)
            "id": "result",
            "role": "tool",
            "parts": [{"type": "dynamic-tool", "toolCallId": "c1", "output": "done"}],
        }
        messages = [text_message("u0"), text_message("u1"), call, result, text_message("u4")]
        assert align_boundary_forward(messages, 3) == 4
        assert align_boundary_backward(messages, 3) == 2
