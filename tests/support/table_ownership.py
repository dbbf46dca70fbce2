"""Reading which tables a store makes and which modules name them in SQL: what the
table-ownership tests of every package share (tests/test_table_ownership.py)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from backend.chats import Chats
from backend.sessions import Sessions
from backend.storage import Database
from tests.conftest import ROOT

APPLICATION_FOLDERS = ("backend", "chatsapp")
"""Shipped code. A package's own tests may look at its tables to pin the schema."""

_TABLES = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
SQL_CONTEXT = (
    r"(?:\bFROM|\bJOIN|\bINTO|\bUPDATE|\bTABLE(?:\s+IF\s+(?:NOT\s+)?EXISTS)?)\s+[\"'`\[]?{name}\b"
    r"|\b{name}\s+MATCH\b"
)


def tables_of(path: Path) -> set[str]:
    database = Database(path)
    try:
        return {row[0] for row in database.query(_TABLES)} - {"_migrations"}
    finally:
        database.close()


def sessions_tables(folder: Path) -> set[str]:
    with Sessions(folder / "conversation.sqlite") as sessions:
        sessions.session().search("builds the lazily created FTS table too")
    return tables_of(folder / "conversation.sqlite")


def directory_tables(folder: Path) -> set[str]:
    with Chats(folder, "owner") as chats:
        path = chats.layout.database_path
    return tables_of(path)


def string_literals(path: Path) -> list[str]:
    """Every string constant of a module except docstrings (prose may name a table)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body
        and isinstance(node.body[0], ast.Expr)
        and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        if id(node) not in docstrings
    ]


def sql_mentions(tables: set[str], owner: Path) -> list[str]:
    """``file: table`` for each module outside ``owner`` whose SQL names one of ``tables``."""
    patterns = {
        table: re.compile(SQL_CONTEXT.format(name=re.escape(table)), re.IGNORECASE)
        for table in tables
    }
    found = []
    for folder in APPLICATION_FOLDERS:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path.is_relative_to(owner):
                continue
            for text in string_literals(path):
                for table, pattern in patterns.items():
                    # A bare name counts only when it cannot be an ordinary word (the CLI's
                    # program name is "chats", like the directory's table).
                    if (text == table and "_" in table) or pattern.search(text):
                        found.append(f"{path.relative_to(ROOT)}: {table}")
    return sorted(set(found))
