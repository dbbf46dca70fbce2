"""A chat page's address is built and read in one place, and reading undoes building."""

from __future__ import annotations

import ast

from chatsapp.chat_route import CHAT_ROUTE, chat_id_of_path, chat_path
from tests.conftest import ROOT


def test_reading_a_built_address_gives_back_the_chat() -> None:
    assert chat_id_of_path(chat_path("c-123")) == "c-123"
    assert chat_id_of_path(chat_path("c-123", "m-9")) == "c-123"
    assert chat_path("c-123", "m-9") == "/chat/c-123?m=m-9"


def test_an_address_that_is_not_a_chat_page_names_no_chat() -> None:
    assert [chat_id_of_path(p) for p in ("/", "/sign-in", "/chats/x", "/chat/")] == [""] * 4


def test_the_route_reflex_declares_matches_the_built_addresses() -> None:
    assert CHAT_ROUTE.replace("[chat_id]", "c-1") == chat_path("c-1")


def test_no_other_module_spells_the_chat_address() -> None:
    spelled = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for path in (ROOT / "chatsapp").rglob("*.py")
        # exports.py: the download address ``/export/chat/<id>.<kind>``, not the page
        if path.name not in ("chat_route.py", "exports.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("/chat/")
    ]
    assert spelled == []
