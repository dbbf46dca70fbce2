"""``/agents``: the person's agent library: list, create, edit (a new version), history."""

from __future__ import annotations

import reflex as rx

from chatsapp.components.model_picker import model_option
from chatsapp.states.agents import AgentRow, AgentsTabState, VersionRow
from chatsapp.states.models import AUTO_KEY

FIELD_STYLE = {"width": "100%"}


def _agent(agent: AgentRow) -> rx.Component:
    return rx.hstack(
        rx.vstack(
            rx.text(agent.name, weight="bold", class_name="agent-name wrap-anywhere"),
            rx.text("v", agent.latest_version.to_string(), size="1", color_scheme="gray"),
            spacing="0",
            flex="1",
        ),
        rx.cond(agent.is_default, rx.badge("default for new chats", color_scheme="green")),
        rx.button(
            "New chat",
            size="1",
            on_click=AgentsTabState.new_chat_with(agent.id),
            class_name="agent-new-chat",
        ),
        rx.button(
            "Edit",
            size="1",
            variant="soft",
            on_click=AgentsTabState.edit_agent(agent.id),
            class_name="agent-edit",
        ),
        rx.cond(
            agent.is_default,
            rx.button(
                "Unset default",
                size="1",
                variant="ghost",
                on_click=AgentsTabState.set_default(""),
                class_name="agent-unset-default",
            ),
            rx.button(
                "Make default",
                size="1",
                variant="ghost",
                on_click=AgentsTabState.set_default(agent.id),
                class_name="agent-set-default",
            ),
        ),
        width="100%",
        align="center",
        padding="0.5rem 0",
        border_bottom="1px solid var(--gray-a4)",
        class_name="agent-row",  # on a phone the name gets a line of its own (layout.css)
        custom_attrs={"data-agent-id": agent.id},
    )


def _tool(tool: str) -> rx.Component:
    return rx.checkbox(
        tool,
        checked=AgentsTabState.tools.contains(tool),
        on_change=lambda _checked: AgentsTabState.toggle_tool(tool),
    )


def _version(version: VersionRow) -> rx.Component:
    return rx.text(
        "v",
        version.version.to_string(),
        " · ",
        version.name,
        " · ",
        version.created_iso,
        size="1",
        class_name="agent-version",
    )


def _labelled(
    label: str, field: rx.Component, hint: rx.Var | str = "", *, field_id: str = ""
) -> rx.Component:
    """``label`` above ``field``: a <label> of the field named ``field_id``, else a caption
    (a group of checkboxes has none to point at)."""
    caption = (
        rx.el.label(label, html_for=field_id, font_size="var(--font-size-2)", font_weight="500")
        if field_id
        else rx.text(label, size="2", weight="medium")
    )
    return rx.vstack(
        caption,
        field,
        rx.cond(hint != "", rx.text(hint, size="1", color_scheme="gray")),
        spacing="1",
        width="100%",
    )


def _form() -> rx.Component:
    return rx.vstack(
        rx.heading(rx.cond(AgentsTabState.agent_id == "", "New agent", "Edit agent"), size="4"),
        # The typed fields are not bound to the state (``default_value``): their text travels
        # with Save, so a late echo cannot erase what was typed after a pause. A new key per
        # opened agent remounts them with that agent's values.
        rx.form(
            rx.vstack(
                _labelled(
                    "Name",
                    rx.input(
                        name="name",
                        default_value=AgentsTabState.name,
                        id="agent-name",
                        style=FIELD_STYLE,
                    ),
                    field_id="agent-name",
                ),
                _labelled(
                    "Instructions (the system prompt, sent exactly as written)",
                    rx.text_area(
                        name="instructions",
                        default_value=AgentsTabState.instructions,
                        rows="8",
                        id="agent-instructions",
                        style=FIELD_STYLE,
                    ),
                    "At most " + AgentsTabState.max_instructions.to_string() + " characters.",
                    field_id="agent-instructions",
                ),
                _labelled(
                    "Model",
                    rx.el.select(
                        rx.el.option("The chat's model or the default", value=AUTO_KEY),
                        rx.foreach(AgentsTabState.choices, model_option),
                        value=AgentsTabState.model,
                        on_change=AgentsTabState.set_model,
                        # Named, so the form submits it by name (Reflex 0.11 stops submitting
                        # controls by id); Save ignores it: the model is set as it changes.
                        name="model",
                        id="agent-model",
                        # else as wide as its longest model name, past a phone's edge
                        style=FIELD_STYLE,
                    ),
                    field_id="agent-model",
                ),
                rx.hstack(
                    _labelled(
                        "Temperature",
                        rx.input(
                            name="temperature",
                            default_value=AgentsTabState.temperature,
                            id="agent-temperature",
                            style=FIELD_STYLE,
                        ),
                        AgentsTabState.temperature_hint,
                        field_id="agent-temperature",
                    ),
                    _labelled(
                        "Max output tokens",
                        rx.input(
                            name="max_output_tokens",
                            default_value=AgentsTabState.max_output_tokens,
                            id="agent-max-tokens",
                            style=FIELD_STYLE,
                        ),
                        AgentsTabState.tokens_hint,
                        field_id="agent-max-tokens",
                    ),
                    width="100%",
                    class_name="form-row",
                ),
                _labelled(
                    "Tools", rx.hstack(rx.foreach(AgentsTabState.known_tools, _tool), wrap="wrap")
                ),
                rx.cond(
                    AgentsTabState.form_error != "",
                    rx.callout(
                        AgentsTabState.form_error, color_scheme="red", id="agent-form-error"
                    ),
                ),
                rx.hstack(
                    rx.button(
                        "Cancel", type="button", variant="soft", on_click=AgentsTabState.cancel
                    ),
                    rx.button("Save", type="submit", id="agent-save"),
                    justify="end",
                    width="100%",
                ),
                spacing="3",
                width="100%",
            ),
            on_submit=AgentsTabState.save_form,
            key=AgentsTabState.form_generation,
            width="100%",
        ),
        rx.cond(
            AgentsTabState.versions.length() > 0,
            rx.vstack(
                rx.text("History", weight="bold", size="2"),
                rx.foreach(AgentsTabState.versions, _version),
                rx.cond(
                    AgentsTabState.versions_more,
                    rx.button(
                        "Older versions",
                        size="1",
                        variant="ghost",
                        on_click=AgentsTabState.more_versions,
                        id="agent-more-versions",
                    ),
                ),
                spacing="1",
                width="100%",
                id="agent-history",
            ),
        ),
        width="100%",
        padding="1rem",
        border="1px solid var(--gray-a5)",
        border_radius="var(--radius-3)",
        id="agent-form",
    )


def agents_page_body() -> rx.Component:
    return rx.container(
        rx.vstack(
            rx.hstack(
                rx.heading("Agents", size="6"),
                rx.spacer(),
                rx.link("Back to your chats", href="/"),
                width="100%",
                align="center",
            ),
            rx.text(
                "An agent is a name, instructions, a model and tools. Every save is a new "
                "version; a chat stays on the version it was started with until you move it.",
                color_scheme="gray",
                size="2",
            ),
            rx.button("New agent", on_click=AgentsTabState.new_agent, id="agent-new"),
            rx.cond(AgentsTabState.editing, _form()),
            rx.vstack(rx.foreach(AgentsTabState.agents, _agent), width="100%", id="agent-list"),
            width="100%",
            spacing="4",
            padding_y="2rem",
        ),
        size="3",
    )
