"""Issue 12 in the browser: the model picker, the agent library, the update banner, the
session-state drawer. The shared model app (tests/e2e/conftest.py), whose fake OpenAI server
lists two models; alice, who set it up, is its admin. Each story signs in someone new."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, FloatRect, Locator, Page, expect

from backend.agents import MAX_INSTRUCTIONS_CHARS
from backend.runtime import DEFAULT_MAX_STATE_BYTES
from chatsapp.states.agents import HISTORY_PAGE
from tests.e2e.helpers import agent_row, create_agent, create_chat, fill_agent_form, open_tab, send
from tests.support.app_server import AppServer
from tests.support.deadlines import WAIT_MS
from tests.support.fake_openai import FakeOpenAI, last_user_text
from tests.support.fake_replies import text

REPLY = "Answered by the fake."


@pytest.fixture(scope="module")
def fake_model(model_server: FakeOpenAI) -> Iterator[FakeOpenAI]:
    with model_server.replying(text(REPLY)):
        yield model_server


@pytest.fixture(scope="module")
def models_app(model_app: AppServer, fake_model: FakeOpenAI) -> AppServer:
    return model_app


@pytest.fixture
def person() -> str:
    """Someone new for each story (and for its rerun): the agents, default agent and chats one
    story saves are never in the next one's way."""
    return f"person-{uuid.uuid4().hex[:8]}"


def turn_request(fake: FakeOpenAI, words: str) -> dict[str, Any]:
    """The body of the completion that answered the turn ``words`` (not a title request)."""
    found = [
        r.body
        for r in list(fake.requests)
        if r.body.get("messages")
        and r.body["messages"][-1]["role"] == "user"
        and last_user_text(r.body) == words
    ]
    assert len(found) == 1, f"{len(found)} requests answered {words!r}"
    return found[0]


def middle(box: FloatRect | None) -> tuple[float, float]:
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def resting_box(toast: Locator) -> FloatRect:
    """Where a toast lies once it has stopped sliding (its entrance moves it for 400 ms)."""
    last = None
    for _ in range(100):
        box = toast.bounding_box()
        if box is not None and box == last:
            return box
        last = box
        toast.page.wait_for_timeout(100)
    raise AssertionError(f"the toast never came to rest: {last}")


def send_and_wait_for_reply(tab: Page, words: str) -> None:
    replies = tab.locator(".message-assistant .message-text")
    before = replies.count()
    send(tab, words)
    expect(replies).to_have_count(before + 1, timeout=WAIT_MS)
    expect(replies.last).to_have_text(REPLY, timeout=WAIT_MS)


def open_agents_page(browser: Browser, server: AppServer, user: str) -> Page:
    tab = server.signed_in_context(
        browser, user, viewport={"width": 1280, "height": 900}
    ).new_page()
    tab.goto(server.url + "/agents")
    expect(tab.locator("#agent-new")).to_be_visible(timeout=WAIT_MS)
    return tab


def start_chat_with(tab: Page, name: str) -> str:
    agent_row(tab, name).locator(".agent-new-chat").click()
    tab.wait_for_url("**/chat/*", timeout=WAIT_MS)
    expect(tab.locator("#agent-label")).to_contain_text(name, timeout=WAIT_MS)
    return tab.url.rsplit("/", 1)[-1]


class TestModelPicker:
    def test_the_picked_model_answers_the_next_turn(
        self, person: str, models_app: AppServer, fake_model: FakeOpenAI, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        picker = tab.locator("#model-picker")
        expect(picker.locator("option[value='default:other-model']")).to_have_count(
            1, timeout=WAIT_MS
        )
        expect(picker.locator("option", has_text="Offline assistant")).to_have_count(1)
        send_and_wait_for_reply(tab, "first, with the default model")
        assert turn_request(fake_model, "first, with the default model")["model"] == "fake-model"

        picker.select_option("default:other-model")
        expect(picker).to_have_attribute(
            "data-next-model", "other-model · default", timeout=WAIT_MS
        )
        send_and_wait_for_reply(tab, "second, with the picked model")

        assert turn_request(fake_model, "second, with the picked model")["model"] == "other-model"

    def test_a_pick_in_one_tab_shows_in_another_tab_of_the_same_chat(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, models_app, user=person)
        chat_id = create_chat(tab_a)
        tab_b = open_tab(browser, models_app, f"/chat/{chat_id}", user=person)
        expect(tab_b.locator("#model-picker")).to_have_value("auto", timeout=WAIT_MS)

        tab_a.locator("#model-picker").select_option("default:other-model")

        expect(tab_b.locator("#model-picker")).to_have_value("default:other-model", timeout=WAIT_MS)


class TestAgentLibrary:
    def test_a_chat_started_with_an_agent_sends_exactly_its_instructions(
        self, person: str, models_app: AppServer, fake_model: FakeOpenAI, browser: Browser
    ):
        instructions = "You are Pirate Pete.\nAnswer every question in pirate speak, briefly."
        tab = open_agents_page(browser, models_app, person)
        create_agent(tab, "Pirate", instructions)

        start_chat_with(tab, "Pirate")
        send_and_wait_for_reply(tab, "Where is the treasure?")

        messages = turn_request(fake_model, "Where is the treasure?")["messages"]
        assert messages[0] == {"role": "system", "content": instructions}

    def test_an_out_of_range_temperature_is_refused_on_the_form_and_nothing_is_saved(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, person)
        tab.locator("#agent-new").click()
        fill_agent_form(tab, name="Too hot", instructions="hi", temperature="7")
        tab.locator("#agent-save").click()

        expect(tab.locator("#agent-form-error")).to_contain_text("temperature", timeout=WAIT_MS)
        tab.reload()
        expect(tab.locator("#agent-new")).to_be_visible(timeout=WAIT_MS)
        expect(agent_row(tab, "Too hot")).to_have_count(0)

    def test_instructions_over_the_limit_are_refused_on_the_form(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, person)
        tab.locator("#agent-new").click()
        fill_agent_form(tab, name="Verbose", instructions="x" * (MAX_INSTRUCTIONS_CHARS + 1))
        tab.locator("#agent-save").click()

        expect(tab.locator("#agent-form-error")).to_contain_text("instructions", timeout=WAIT_MS)
        expect(agent_row(tab, "Verbose")).to_have_count(0)

    def test_each_save_is_a_version_and_the_history_pages_back_to_the_first(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, person)
        create_agent(tab, "Drafter", "draft 1")
        agent_row(tab, "Drafter").locator(".agent-edit").click()
        versions = tab.locator(".agent-version")
        for n in range(2, HISTORY_PAGE + 3):
            tab.locator("#agent-instructions").fill(f"draft {n}")
            tab.locator("#agent-save").click()
            expect(versions.first).to_contain_text(f"v{n} ", timeout=WAIT_MS)

        expect(versions).to_have_count(HISTORY_PAGE)
        tab.locator("#agent-more-versions").click()
        expect(versions).to_have_count(HISTORY_PAGE + 2, timeout=WAIT_MS)
        expect(versions.last).to_contain_text("v1 ")
        expect(tab.locator("#agent-more-versions")).to_have_count(0)

    def test_a_toast_lying_over_save_leaves_the_click_to_save(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        """On a laptop's screen "Saved … v1." comes to rest right on Save. A toast takes no
        click: one pressed on a button as a toast slid over it was lost (fresh-clone runs 23,
        24, 32 and 33 lost an agents-page click that way)."""
        tab = open_agents_page(browser, models_app, person)
        create_agent(tab, "Concierge", "Greet warmly.")
        toast = tab.locator("[data-sonner-toast]", has_text="Saved Concierge v1.")
        expect(toast).to_be_visible(timeout=WAIT_MS)
        # The toast library's key: the toast stays on screen from now on (else four seconds).
        tab.keyboard.press("Alt+T")

        save = tab.locator("#agent-save")
        window = tab.viewport_size
        assert window is not None
        save_y, toast_y = middle(save.bounding_box())[1], middle(resting_box(toast))[1]
        tab.set_viewport_size({"width": 1280, "height": round(window["height"] + save_y - toast_y)})
        x, y = middle(save.bounding_box())
        over = resting_box(toast)
        assert over["y"] < y < over["y"] + over["height"]
        assert over["x"] < x < over["x"] + over["width"]

        tab.mouse.click(x, y)  # every save is a version, an unchanged one too
        expect(agent_row(tab, "Concierge")).to_contain_text("v2", timeout=WAIT_MS)

    def test_a_pinned_chat_offers_the_new_version_and_one_click_moves_it(
        self, person: str, models_app: AppServer, fake_model: FakeOpenAI, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, person)
        create_agent(tab, "Critic", "Version one: be kind.")
        chat_id = start_chat_with(tab, "Critic")
        expect(tab.locator("#agent-update")).to_have_count(0)

        editor = open_agents_page(browser, models_app, person)
        agent_row(editor, "Critic").locator(".agent-edit").click()
        editor.locator("#agent-instructions").fill("Version two: be blunt.")
        editor.locator("#agent-save").click()
        expect(editor.locator(".agent-version")).to_have_count(2, timeout=WAIT_MS)

        tab.goto(models_app.url + f"/chat/{chat_id}")
        banner = tab.locator("#agent-update")
        expect(banner).to_contain_text("Agent updated to v2", timeout=WAIT_MS)
        banner.click()
        expect(banner).to_have_count(0, timeout=WAIT_MS)
        expect(tab.locator("#agent-label")).to_contain_text("v2")
        send_and_wait_for_reply(tab, "Review my essay")
        first = turn_request(fake_model, "Review my essay")["messages"][0]
        assert first == {"role": "system", "content": "Version two: be blunt."}


class TestSessionStatePanel:
    def test_a_stale_edit_is_refused_and_the_current_value_is_shown(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, models_app, user=person)
        chat_id = create_chat(tab_a)
        tab_b = open_tab(browser, models_app, f"/chat/{chat_id}", user=person)
        for tab in (tab_a, tab_b):
            tab.locator("#state-toggle").click()
            expect(tab.locator("#state-version")).to_have_text("0", timeout=WAIT_MS)

        tab_b.locator("#state-draft").fill('{"step": "from tab b"}')
        tab_b.locator("#state-save").click()
        expect(tab_b.locator("#state-version")).to_have_text("1", timeout=WAIT_MS)

        tab_a.locator("#state-draft").fill('{"step": "from tab a"}')
        tab_a.locator("#state-save").click()

        expect(tab_a.locator("#state-error")).to_contain_text(
            "changed since you opened it", timeout=WAIT_MS
        )
        expect(tab_a.locator("#state-current-value")).to_contain_text("from tab b")
        tab_a.locator("#state-reload").click()
        expect(tab_a.locator("#state-version")).to_have_text("1", timeout=WAIT_MS)

    def test_a_state_over_the_ceiling_is_refused_and_the_saved_one_stays(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        tab.locator("#state-toggle").click()
        expect(tab.locator("#state-panel")).to_contain_text(
            f"of {DEFAULT_MAX_STATE_BYTES} bytes", timeout=WAIT_MS
        )
        too_big = json.dumps({"notes": "x" * DEFAULT_MAX_STATE_BYTES})
        tab.locator("#state-draft").fill(too_big)
        tab.locator("#state-save").click()

        expect(tab.locator("#state-error")).to_contain_text("Too large", timeout=WAIT_MS)
        tab.locator("#state-reload").click()
        expect(tab.locator("#state-version")).to_have_text("0", timeout=WAIT_MS)
        expect(tab.locator("#state-draft")).to_have_value("{}")


class TestArchive:
    def test_archiving_from_the_header_shows_in_every_tab_and_can_be_undone(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab_a = open_tab(browser, models_app, user=person)
        chat_id = create_chat(tab_a)
        tab_b = open_tab(browser, models_app, f"/chat/{chat_id}", user=person)
        expect(tab_b.locator("#archive-toggle")).to_be_visible(timeout=WAIT_MS)

        tab_a.locator("#archive-toggle").click()
        expect(tab_b.locator("#archived-label")).to_be_visible(timeout=WAIT_MS)
        tab_b.reload()
        expect(tab_b.locator("#archived-label")).to_be_visible(timeout=WAIT_MS)

        tab_b.locator("#archive-toggle").click()
        expect(tab_a.locator("#archived-label")).to_have_count(0, timeout=WAIT_MS)


class TestAdminEndpoints:
    def test_an_endpoint_an_admin_adds_is_offered_in_the_picker_and_answers(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        with FakeOpenAI(default=text(REPLY)) as lab:
            lab.models = ["lab-model"]
            admin = open_agents_page(browser, models_app, "alice")  # she set the app up: an admin
            admin.goto(models_app.url + "/admin/models")
            admin.locator("#ep-name").fill("lab")
            admin.locator("#ep-url").fill(lab.base_url)
            admin.locator("#ep-key").fill("lab-key")
            admin.locator("#ep-save").click()
            row = admin.locator('.endpoint-row[data-endpoint="lab"]')
            expect(row).to_contain_text("answers", timeout=WAIT_MS)
            expect(row).not_to_contain_text("lab-key")

            tab = open_tab(browser, models_app, user=person)
            create_chat(tab)
            tab.locator("#model-picker").select_option("lab:lab-model")
            expect(tab.locator("#model-picker")).to_have_attribute(
                "data-next-model", "lab-model · lab", timeout=WAIT_MS
            )
            send_and_wait_for_reply(tab, "Hello, lab")

            request = turn_request(lab, "Hello, lab")
            assert request["model"] == "lab-model"

    def test_someone_who_is_not_an_admin_cannot_configure_endpoints(
        self, models_app: AppServer, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, "bob")
        tab.goto(models_app.url + "/admin/models")
        expect(tab.locator("#ep-not-allowed")).to_be_visible(timeout=WAIT_MS)
        expect(tab.locator("#ep-save")).to_have_count(0)


class TestDefaultAgent:
    def test_new_chats_start_with_the_default_agent_until_it_is_unset(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        library = open_agents_page(browser, models_app, person)
        create_agent(library, "Concierge", "Greet warmly.")
        agent_row(library, "Concierge").locator(".agent-set-default").click()
        expect(agent_row(library, "Concierge")).to_contain_text(
            "default for new chats", timeout=WAIT_MS
        )

        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        expect(tab.locator("#agent-label")).to_contain_text("Concierge", timeout=WAIT_MS)

        agent_row(library, "Concierge").locator(".agent-unset-default").click()
        expect(agent_row(library, "Concierge").locator(".agent-set-default")).to_be_visible(
            timeout=WAIT_MS
        )
        create_chat(tab)
        expect(tab.locator("#agent-label")).to_contain_text("Default assistant", timeout=WAIT_MS)


def last_reply_usage(tab: Page):
    return tab.locator(".message-assistant").last.locator(".reply-usage")


class TestReplyUsage:
    def test_a_reply_shows_the_usage_the_server_reported(
        self, person: str, models_app: AppServer, fake_model: FakeOpenAI, browser: Browser
    ):
        words = "How many tokens was that?"
        reported = {"prompt_tokens": 412, "completion_tokens": 96}
        # Keyed on the turn's words: a late title request of an earlier story takes the default.
        fake_model.responder = lambda body: (
            text(REPLY, usage=reported) if last_user_text(body) == words else fake_model.default
        )
        try:
            tab = open_tab(browser, models_app, user=person)
            create_chat(tab)
            send_and_wait_for_reply(tab, words)
            expect(last_reply_usage(tab)).to_have_text("412 tokens in · 96 out", timeout=WAIT_MS)
        finally:
            fake_model.responder = None

    def test_a_reply_without_server_usage_shows_an_estimate_labelled_as_one(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        send_and_wait_for_reply(tab, "No usage from the server this time")
        expect(last_reply_usage(tab)).to_contain_text("(estimate)", timeout=WAIT_MS)
        expect(last_reply_usage(tab)).to_contain_text("~")


class TestContextMeter:
    def test_the_composer_meter_grows_after_each_reply_and_marks_the_compaction_point(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        label = tab.locator("#context-meter-label")
        expect(label).to_contain_text("/ 8,000 tokens", timeout=WAIT_MS)
        expect(tab.locator("#compaction-threshold")).to_have_count(1)  # the default agent's
        expect(tab.locator("#compaction-due")).to_have_count(0)
        before = label.inner_text()

        send_and_wait_for_reply(tab, "A first question for the meter")

        expect(label).not_to_have_text(before, timeout=WAIT_MS)

    def test_a_thread_past_the_threshold_shows_that_the_next_reply_compacts(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        expect(tab.locator("#context-meter")).to_be_visible(timeout=WAIT_MS)
        # ~7,800 estimated tokens: past the default agent's 6,000-token compaction point.
        send_and_wait_for_reply(tab, "notes " * 6_000)

        expect(tab.locator("#compaction-due")).to_be_visible(timeout=WAIT_MS)


class TestHeader:
    def test_the_header_counts_the_messages_of_the_visible_conversation(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_tab(browser, models_app, user=person)
        create_chat(tab)
        count = tab.locator("#message-count")
        expect(count).to_have_text("0 messages", timeout=WAIT_MS)
        send_and_wait_for_reply(tab, "one")
        expect(count).to_have_text("2 messages", timeout=WAIT_MS)
        send_and_wait_for_reply(tab, "two")
        expect(count).to_have_text("4 messages", timeout=WAIT_MS)

    def test_an_agent_saved_in_another_tab_updates_the_header_without_a_reload(
        self, person: str, models_app: AppServer, browser: Browser
    ):
        tab = open_agents_page(browser, models_app, person)
        create_agent(tab, "Editor", "Version one: fix typos.")
        start_chat_with(tab, "Editor")
        expect(tab.locator("#agent-update")).to_have_count(0)

        editor = open_agents_page(browser, models_app, person)
        agent_row(editor, "Editor").locator(".agent-edit").click()
        editor.locator("#agent-instructions").fill("Version two: rewrite freely.")
        editor.locator("#agent-save").click()

        expect(tab.locator("#agent-update")).to_contain_text("Agent updated to v2", timeout=WAIT_MS)
