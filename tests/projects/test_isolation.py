"""1,000 random turns across 3 projects: no memory, file or search hit ever crosses a project.

Each project has its own word (in its chats' messages, its file, the facts its chats
remember); every message also carries a word all projects share, so a search for it finds
every project's messages and only the scoping keeps them apart. A seeded random walk sends
turns to the projects' chats through the real runtime with the scripted test model, which
asks retrieval for the turn's words and, on some turns, calls ``remember``. Every request the
model receives is checked: no other project's word anywhere in it (instructions, memory,
file chunks, retrieved messages, history), and the person's own memory absent (each
project's switch is off). The checks are shown not to be vacuous: retrieval, file chunks
and project memory each reached the prompt on many turns.

On PostgreSQL the walk is shorter (:data:`POSTGRES_TURNS`: 1,000 turns there take minutes on
the shared test machine); the scoping it checks is the same statements with the scope first,
and the full walk runs on SQLite.
"""

from __future__ import annotations

import random

import pytest

from backend.models import ModelRequest, ToolCall
from backend.projects import Projects
from tests.runtime.helpers import events_until_done, make_runtime
from tests.support.scripted_model import ScriptedModel

pytestmark = pytest.mark.anyio

TURNS = 1_000
POSTGRES_TURNS = 150
SEED = 29
WORDS = ("aardvark", "bison", "cheetah")  # one per project, in everything it owns
SHARED = "harvest"  # in every message of every project
PERSONAL = "zeppelin"  # the person's own memory: no project here uses it


def _prompt_text(request: ModelRequest) -> str:
    messages = " ".join(m.content for m in request.messages)
    return f"{request.system_prompt()} {messages}".lower()


async def test_a_thousand_turns_never_reach_another_projects_memory_files_or_chats(
    tmp_path, chats, storage
):
    turns = TURNS if storage == "sqlite" else POSTGRES_TURNS
    projects = Projects(chats)
    chats.append_shared_context("user_memory", f"- {PERSONAL} is the person's own fact\n")
    owned: list[tuple[str, list[str]]] = []
    for word in WORDS:
        project = projects.create(f"Project {word}", instructions=f"Keep to {word} matters.")
        projects.set_use_personal_memory(project.id, False)
        note = f"{word} notes\n\n{SHARED} of the {word} season, {word} care."
        projects.add_file(project.id, f"{word}.md", "text/markdown", note.encode())
        owned.append((project.id, [projects.create_chat(project.id).id for _ in range(2)]))

    model = ScriptedModel(retrieval=lambda text: text)
    runtime = make_runtime(tmp_path, chats, model, projects=projects.turns)
    rng = random.Random(SEED)
    seen = {"retrieval": 0, "files": 0, "memory": 0}
    try:
        for turn in range(turns):
            index = rng.randrange(len(WORDS))
            word, (_, chat_ids) = WORDS[index], owned[index]
            chat_id = rng.choice(chat_ids)
            if rng.random() < 0.2:
                model.script([ToolCall(f"r{turn}", "remember", {"fact": f"{word} fact {turn}"})])
            asked = len(model.requests)
            ticket = await runtime.send_message(chat_id, f"{SHARED} {word} turn {turn}")
            events = await events_until_done(runtime, chat_id, ticket.run_id)
            assert events[-1].type == "run.completed"
            for request in model.requests[asked:]:
                text = _prompt_text(request)
                others = [other for other in WORDS if other != word and other in text]
                assert others == [], f"turn {turn} in project {word} saw {others}"
                assert PERSONAL not in text
                for kind, title in (
                    ("retrieval", "From the user's past chats"),
                    ("files", "From the project's files"),
                    ("memory", "Project memory"),
                ):
                    seen[kind] += any(s.title == title for s in request.context)
    finally:
        await runtime.aclose()

    assert min(seen.values()) > turns // 10, seen  # every path was exercised, many times
    for index, (project_id, chat_ids) in enumerate(owned):
        word, others = WORDS[index], [w for w in WORDS if w != WORDS[index]]
        memory = projects.memory(project_id)
        assert word in memory and not any(other in memory for other in others)
        found = projects.turns.search(project_id, SHARED, only=True, limit=50)
        assert found.messages and {hit.chat_id for hit in found.messages} <= set(chat_ids)
        assert found.files and {hit.file_name for hit in found.files} == {f"{word}.md"}
        assert found.elsewhere == ()
        first = projects.turns.search(project_id, SHARED, limit=50)
        assert {hit.chat_id for hit in first.messages} <= set(chat_ids)
        assert all(hit.chat_id not in chat_ids for hit in first.elsewhere)
    assert chats.get_shared_context("user_memory") == f"- {PERSONAL} is the person's own fact\n"
