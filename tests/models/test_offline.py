"""The built-in offline assistant: honest, deterministic, and useful from structured context."""

import json

import pytest

from backend.models import (
    OFFLINE_LABEL,
    REMEMBER_TOOL,
    ContextItem,
    ContextSection,
    Finish,
    ModelMessage,
    ModelRequest,
    OfflineAssistant,
    TextDelta,
    ToolCall,
    ToolSpec,
    extractive_summary,
    heuristic_title,
    keywords,
)

pytestmark = pytest.mark.anyio

REMEMBER = ToolSpec(REMEMBER_TOOL, "Save a fact", {"type": "object"})
MEMORY = ContextSection(
    "memory",
    "Shared memory",
    items=(ContextItem("My sister is called Ana"), ContextItem("I am vegetarian")),
)


def ask(text, *context, tools=(REMEMBER,), history=()):
    return ModelRequest(
        messages=(*history, ModelMessage("user", text)), context=tuple(context), tools=tools
    )


async def reply(request, model=None):
    model = model or OfflineAssistant(chunk_delay_s=0)
    events = [e async for e in model.stream(request)]
    assert isinstance(events[-1], Finish)
    return events


async def reply_text(request):
    return "".join(e.text for e in await reply(request) if isinstance(e, TextDelta))


def test_it_is_clearly_labelled_as_offline():
    model = OfflineAssistant()
    assert model.offline is True
    assert model.label == OFFLINE_LABEL
    assert "offline" in model.label.lower() and "no model" in model.label.lower()


async def test_the_same_request_always_streams_the_same_chunks():
    request = ask("tell me a joke")
    first, second = await reply(request), await reply(request)
    assert first == second
    assert len([e for e in first if isinstance(e, TextDelta)]) > 3  # streamed, not one blob


async def test_a_general_question_gets_an_honest_helpful_answer():
    text = await reply_text(ask("What is the capital of Peru?"))
    assert "offline assistant" in text
    assert "no language model is configured" in text
    assert "remember that" in text  # says what it *can* do
    assert "CHATS_MODEL_BASE_URL" in text


async def test_remember_that_calls_the_remember_tool_with_the_fact():
    events = await reply(ask("Please remember that my cat is called Miso."))
    assert isinstance(events[0], ToolCall)
    assert events[0].name == REMEMBER_TOOL
    assert events[0].arguments == {"fact": "my cat is called Miso"}
    assert events[-1] == Finish("tool_calls")


async def test_without_the_remember_tool_it_does_not_call_it():
    events = await reply(ask("remember that x is y", tools=()))
    assert not any(isinstance(e, ToolCall) for e in events)


async def test_after_the_tool_result_it_confirms_what_it_saved():
    call = ToolCall("c1", REMEMBER_TOOL, {"fact": "my cat is called Miso"})
    request = ModelRequest(
        messages=(
            ModelMessage("user", "remember that my cat is called Miso"),
            ModelMessage("assistant", "", tool_calls=(call,)),
            ModelMessage("tool", json.dumps({"saved": True}), tool_call_id="c1"),
        ),
        tools=(REMEMBER,),
    )
    text = await reply_text(request)
    assert "I'll remember that my cat is called Miso" in text


async def test_a_failed_tool_result_is_reported_not_hidden():
    call = ToolCall("c1", REMEMBER_TOOL, {"fact": "x"})
    request = ModelRequest(
        messages=(
            ModelMessage("assistant", "", tool_calls=(call,)),
            ModelMessage("tool", json.dumps({"error": "memory unavailable"}), tool_call_id="c1"),
        )
    )
    assert "couldn't save" in await reply_text(request)


async def test_what_did_i_say_quotes_past_messages_with_their_chat_titles():
    retrieved = ContextSection(
        "retrieval",
        "From your past chats",
        items=(
            ContextItem("We fly to Lisbon on May 3rd", source="Trip planning", ref="c1/m1"),
            ContextItem("Book the Lisbon hotel near Alfama", source="Todo", ref="c2/m9"),
        ),
    )
    text = await reply_text(ask("What did I say about Lisbon?", MEMORY, retrieved))
    assert "In “Trip planning”: “We fly to Lisbon on May 3rd”" in text
    assert "In “Todo”: “Book the Lisbon hotel near Alfama”" in text


async def test_earlier_recall_questions_are_not_quoted_as_answers():
    retrieved = ContextSection(
        "retrieval",
        "From your past chats",
        items=(
            ContextItem("what did I say about Lisbon?", source="Old chat"),
            ContextItem("Lisbon trip is in May", source="Trip"),
        ),
    )
    text = await reply_text(ask("What did I say about Lisbon?", retrieved))
    assert "In “Trip”: “Lisbon trip is in May”" in text
    assert "Old chat" not in text


async def test_recall_also_answers_from_shared_memory():
    text = await reply_text(ask("what did I tell you about my sister?", MEMORY))
    assert "My sister is called Ana" in text
    assert "vegetarian" not in text


async def test_recall_with_nothing_found_says_so():
    text = await reply_text(ask("what did I say about quantum physics", MEMORY))
    assert "found nothing about “quantum physics”" in text


async def test_what_do_you_know_about_me_lists_shared_memory():
    text = await reply_text(ask("What do you know about me?", MEMORY))
    assert "My sister is called Ana" in text and "I am vegetarian" in text
    empty = await reply_text(ask("what do you remember?"))
    assert "don't remember anything" in empty


def test_it_asks_the_runtime_to_search_past_chats_for_the_topic():
    model = OfflineAssistant()
    assert model.retrieval_query("What did I say about the Lisbon trip?") == "lisbon trip"
    assert model.retrieval_query("remember that I like tea") is None
    assert model.retrieval_query("the the the") is None


async def test_the_chunk_delay_paces_the_stream():
    model = OfflineAssistant(chunk_delay_s=0.001, words_per_chunk=1)
    events = await reply(ask("hello"), model)
    assert len(events) > 10


class TestPureHelpers:
    def test_keywords_drop_stopwords_and_duplicates(self):
        assert keywords("What did I say about the trip, the TRIP to Lisbon?") == [
            "trip",
            "lisbon",
        ]

    def test_heuristic_titles_are_short_and_capitalised(self):
        assert heuristic_title("can you help me plan a trip to Lisbon? thanks") == (
            "Plan a trip to Lisbon"
        )
        assert heuristic_title("   \n  ") == ""
        assert len(heuristic_title("word " * 100)) <= 60

    def test_extractive_summaries_quote_first_sentences_in_order(self):
        summary = extractive_summary(
            [("user", "We fly on May 3rd. Hotel is booked."), ("assistant", "Great. Enjoy!")]
        )
        assert summary.splitlines()[1:] == ["- User: We fly on May 3rd.", "- Assistant: Great."]

    def test_a_long_extractive_summary_keeps_both_ends_and_counts_the_middle(self):
        turns = [("user", f"Turn number {i} is here.") for i in range(200)]
        summary = extractive_summary(turns, max_chars=500)
        assert len(summary) <= 500
        assert "Turn number 0 is here." in summary
        assert "Turn number 199 is here." in summary
        assert "more turns" in summary
