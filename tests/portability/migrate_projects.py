"""The projects of ``chats migrate``'s folder (tests/portability/test_migrate.py): how they
are made, read back through the projects service, and a kill in the middle of their copy."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from unittest import mock

from backend.chats import Chats
from backend.projects import ChunkHit, Projects
from backend.projects.pg_store import PgProjectStore
from backend.projects.store import ProjectStore

BOATHOUSE_NOTES = "\n\n".join(
    f"Shelf {n}: the paddles of rack {n} hang beside the spare oars and the life jackets."
    for n in range(40)
).encode()  # ~3 KB of markdown: three chunks


class Killed(Exception):
    """The simulated kill."""


def populate_projects(chats: Chats, chat_id: str) -> tuple[str, str]:
    """A project holding ``chat_id`` and a pinned chat, with instructions, a file and memory
    (the other chats stay loose), and one deleted with its chat, awaiting its undo."""
    projects = Projects(chats)
    boathouse = projects.create("Boathouse", instructions="Answer as the boathouse keeper.")
    projects.move_chat(chat_id, boathouse.id)
    pinned = chats.create_chat("Paddle plan")
    chats.pins.pin(pinned.id)
    projects.move_chat(pinned.id, boathouse.id)
    projects.add_file(boathouse.id, "boathouse.md", "text/markdown", BOATHOUSE_NOTES)
    projects.set_memory(boathouse.id, "The keeper is Ada.\n")
    projects.turns.remember(chat_id, "Ada locks up at six.")
    old = projects.create("Old trips")
    projects.create_chat(old.id, "Old trip")
    projects.delete(old.id, "delete")
    return boathouse.id, old.id


def project_contents(chats: Chats) -> dict[str, object]:
    """What the projects service shows of a person: projects, their chats, files with their
    text, instructions, memory; a search of the files (the target's own index); the pins."""
    projects = Projects(chats)
    seen: dict[str, object] = {"memberships": projects.memberships()}
    for project in projects.list_projects():
        files = projects.files.list_files(project.id)
        seen[project.id] = {
            "project": project,
            "chats": [summary.id for summary in projects.chats_of(project.id)],
            "files": [(file, projects.files.text_of(file.id)) for file in files],
            "memory": projects.memory(project.id),
            "search": _best_and_all(projects.files.search(project.id, "rack 17")),
        }
    seen["pinned"] = [summary.id for summary in chats.pins.pinned()]
    return seen


def _best_and_all(hits: list[ChunkHit]) -> tuple[object, list[tuple[str, int]]]:
    """The best hit and the set of hits (the order after the best is each engine's ranking:
    bm25 on SQLite, ``ts_rank`` on PostgreSQL)."""
    found = sorted((hit.file_id, hit.seq) for hit in hits)
    return ((hits[0].file_id, hits[0].seq) if hits else None), found


@contextlib.contextmanager
def kill_mid_projects() -> Iterator[None]:
    """Kill the run at its second project chunk indexed: inside a directory's projects copy,
    its rows written, its search half built (either engine's store)."""
    indexed = 0

    def dying(original: Callable[..., None]) -> Callable[..., None]:
        def index(store: ProjectStore, doc: int, project_id: str, text: str) -> None:
            nonlocal indexed
            indexed += 1
            if indexed == 2:
                raise Killed
            original(store, doc, project_id, text)

        return index

    with contextlib.ExitStack() as stack:
        for store in (ProjectStore, PgProjectStore):
            patched = dying(store._index_chunk)
            stack.enter_context(mock.patch.object(store, "_index_chunk", patched))
        yield
    assert indexed >= 2, "the run was never killed"
