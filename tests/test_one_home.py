"""Each fact below is written in one module of ``backend/`` and ``chatsapp/``; everyone else
imports it. A second copy is how two places drift apart (the backup once forgot
``settings.sqlite``; the composer and the runtime once worded the size limit differently).

Read from the source (AST): string constants outside docstrings, and settings read by
attribute. Tests and benches may spell values out: they check them.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT

# value -> the one module that may spell it
LITERAL_HOMES = {
    "user_memory": "backend/chats/shared.py",  # the person's memory block
    "remember": "backend/models/types.py",  # tool names
    "update_session_state": "backend/models/types.py",
    "search_chats": "backend/models/types.py",
    "tool-": "backend/sessions/tool_parts.py",  # a tool part's type is tool-<name>
    "Chat — ": "backend/chats/text.py",  # the default-title rule
    "accounts.sqlite": "backend/data_folder.py",  # the files of a data folder
    "settings.sqlite": "backend/data_folder.py",
    "setup-code.txt": "backend/data_folder.py",
    "directory.sqlite": "backend/data_folder.py",
}
# setting -> the one module that reads it (besides backend/config.py, which defines it)
SETTING_READERS = {
    "max_message_bytes": "backend/uploads.py",  # the message size check
    "sqlite_synchronous": "backend/storage/durability.py",  # durability set-up
}


@cache
def scan(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    literals: dict[str, set[str]] = defaultdict(set)
    reads: dict[str, set[str]] = defaultdict(set)
    for package in ("backend", "chatsapp"):
        for path in sorted((root / package).rglob("*.py")):
            module = path.relative_to(root).as_posix()
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = {
                id(node.value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    if id(node) not in docstrings and node.value in LITERAL_HOMES:
                        literals[node.value].add(module)
                elif isinstance(node, ast.Attribute) and node.attr in SETTING_READERS:
                    reads[node.attr].add(module)
    return literals, reads


@pytest.mark.parametrize("value", sorted(LITERAL_HOMES))
def test_a_fact_is_spelled_out_in_one_module(value: str):
    assert scan()[0][value] == {LITERAL_HOMES[value]}


@pytest.mark.parametrize("setting", sorted(SETTING_READERS))
def test_a_setting_is_read_by_the_one_rule_that_uses_it(setting: str):
    assert scan()[1][setting] - {"backend/config.py"} == {SETTING_READERS[setting]}


def test_a_copy_is_found_and_a_docstring_is_not(tmp_path: Path):
    (tmp_path / "chatsapp").mkdir()
    (tmp_path / "chatsapp" / "memory.py").write_text(
        '"""Edits user_memory."""\n\nLABEL = "user_memory"\nlimit = settings.max_message_bytes\n'
    )
    (tmp_path / "chatsapp" / "notes.py").write_text('"""user_memory"""\n')
    literals, reads = scan(tmp_path)
    assert literals["user_memory"] == {"chatsapp/memory.py"}
    assert reads["max_message_bytes"] == {"chatsapp/memory.py"}
