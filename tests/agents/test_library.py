"""The agent library: every save is a new immutable version, versions load one at a time,
and bad input is refused before anything is written."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.agents import (
    MAX_INSTRUCTIONS_CHARS,
    AgentLibrary,
    AgentSpec,
    AgentVersion,
)
from backend.config import StorageChoice
from backend.errors import (
    AgentNotFoundError,
    InvalidAgentError,
    StaleVersionError,
    UnknownModelError,
)
from backend.models import ModelRef
from backend.storage import Scope
from tests.support.storage_engines import directory_scope


def refuse_unlisted(ref: ModelRef) -> None:
    if ref.model != "listed":
        raise UnknownModelError(ref.endpoint, ref.model)


@pytest.fixture
def database(tmp_path: Path, storage: StorageChoice) -> Iterator[Scope]:
    """The person's directory database, on each engine in turn."""
    with directory_scope(storage, tmp_path) as db:
        yield db


@pytest.fixture
def library(database: Scope) -> AgentLibrary:
    return AgentLibrary(database, check_model=refuse_unlisted)


def spec(**changes: object) -> AgentSpec:
    base: dict[str, object] = {"name": "Editor", "instructions": "Edit my prose."}
    return AgentSpec(**(base | changes))  # type: ignore[arg-type]


class TestVersioning:
    def test_creating_an_agent_gives_version_one(self, library: AgentLibrary):
        created = library.create(spec(tools=("search_chats", "remember")))
        assert created.version == 1
        assert library.load(created.agent_id) == created
        assert created.spec.tools == ("remember", "search_chats")  # the known order

    def test_every_save_is_a_new_version_and_old_versions_stay_readable(
        self, library: AgentLibrary
    ):
        first = library.create(spec(instructions="v1"))
        second = library.save(first.agent_id, spec(instructions="v2"))
        assert second.version == 2
        assert library.load(first.agent_id, 1).spec.instructions == "v1"
        assert library.load(first.agent_id).spec.instructions == "v2"
        assert library.latest_version(first.agent_id) == 2

    def test_every_save_of_any_agent_grows_the_save_count_another_process_reads(
        self, library: AgentLibrary, tmp_path: Path, storage: StorageChoice
    ):
        # another process's connection
        with directory_scope(storage, tmp_path) as other:
            seen = [AgentLibrary(other, check_model=refuse_unlisted).versions_saved()]
            first = library.create(spec())
            seen.append(AgentLibrary(other, check_model=refuse_unlisted).versions_saved())
            library.save(first.agent_id, spec(instructions="v2"))
            library.create(spec(name="Second"))
            seen.append(AgentLibrary(other, check_model=refuse_unlisted).versions_saved())
        assert seen == [0, 1, 3]

    def test_a_save_from_a_stale_form_is_refused(self, library: AgentLibrary):
        agent = library.create(spec())
        library.save(agent.agent_id, spec(instructions="other tab"), expected_version=1)
        with pytest.raises(StaleVersionError):
            library.save(agent.agent_id, spec(instructions="stale"), expected_version=1)
        assert library.latest_version(agent.agent_id) == 2

    def test_history_is_paged_newest_first(self, library: AgentLibrary):
        agent = library.create(spec(name="n1"))
        for n in range(2, 8):
            library.save(agent.agent_id, spec(name=f"n{n}"))
        page = library.versions(agent.agent_id, limit=3)
        assert [v.version for v in page] == [7, 6, 5]
        rest = library.versions(agent.agent_id, before=page[-1].version, limit=10)
        assert [v.version for v in rest] == [4, 3, 2, 1]

    def test_loading_one_version_of_a_long_history_reads_one_row(
        self, library: AgentLibrary, database: Scope
    ):
        agent = library.create(spec())
        for _ in range(124):
            library.save(agent.agent_id, spec())
        before = database.stats
        library.load(agent.agent_id)
        library.load(agent.agent_id, 3)
        assert (database.stats - before).rows_read <= 2

    def test_a_deleted_agent_leaves_the_list_but_its_versions_stay_loadable(
        self, library: AgentLibrary
    ):
        agent = library.create(spec())
        library.set_default(agent.agent_id)
        library.delete(agent.agent_id)
        assert library.list_agents() == []
        assert library.default_agent_id() is None
        assert library.load(agent.agent_id, 1).spec.name == "Editor"
        with pytest.raises(AgentNotFoundError):
            library.save(agent.agent_id, spec())

    def test_the_default_agent_is_marked_in_the_list(self, library: AgentLibrary):
        one, two = library.create(spec(name="One")), library.create(spec(name="Two"))
        library.set_default(two.agent_id)
        assert {a.name: a.is_default for a in library.list_agents()} == {"One": False, "Two": True}
        assert library.default_agent_id() == two.agent_id
        assert one.agent_id != two.agent_id

    def test_an_unknown_agent_or_version_is_not_found(self, library: AgentLibrary):
        agent = library.create(spec())
        with pytest.raises(AgentNotFoundError):
            library.load(agent.agent_id, 2)
        with pytest.raises(AgentNotFoundError):
            library.load("agent_missing")


# A function, not a method: hypothesis runs it once per engine (a parameter), and a method
# would be called from a different test object for each, which it refuses.
# ``storage`` only names the engine; each example opens a directory of its own.
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.lists(st.text(max_size=40), min_size=1, max_size=12))
def test_version_n_is_always_exactly_the_nth_save(
    tmp_path_factory, storage: StorageChoice, texts: list[str]
):
    with directory_scope(storage, tmp_path_factory.mktemp("lib")) as db:
        library = AgentLibrary(db)
        saved: list[AgentVersion] = [library.create(spec(instructions=texts[0]))]
        for text in texts[1:]:
            saved.append(library.save(saved[0].agent_id, spec(instructions=text)))
        assert [v.version for v in saved] == list(range(1, len(texts) + 1))
        for version in saved:
            assert library.load(version.agent_id, version.version) == version
        assert library.load(saved[0].agent_id) == saved[-1]


class TestBadAgentInput:
    @pytest.mark.parametrize(
        ("changes", "field"),
        [
            ({"name": "  "}, "name"),
            ({"name": "x" * 81}, "name"),
            ({"instructions": "x" * (MAX_INSTRUCTIONS_CHARS + 1)}, "instructions"),
            ({"temperature": 2.5}, "temperature"),
            ({"temperature": -0.1}, "temperature"),
            ({"temperature": float("nan")}, "temperature"),
            ({"max_output_tokens": 0}, "max_output_tokens"),
            ({"max_output_tokens": 10**9}, "max_output_tokens"),
            ({"tools": ("remember", "shell")}, "tools"),
            ({"starter_prompts": ("",)}, "starter_prompts"),
            ({"starter_prompts": tuple(f"p{n}" for n in range(7))}, "starter_prompts"),
        ],
    )
    def test_a_bad_field_is_a_clear_error_and_nothing_is_saved(
        self, library: AgentLibrary, changes: dict[str, object], field: str
    ):
        agent = library.create(spec())
        with pytest.raises(InvalidAgentError) as caught:
            library.save(agent.agent_id, spec(**changes))
        assert caught.value.field == field
        with pytest.raises(InvalidAgentError):
            library.create(spec(**changes))
        assert library.latest_version(agent.agent_id) == 1
        assert len(library.list_agents()) == 1

    def test_a_model_its_endpoint_does_not_list_is_refused_and_nothing_is_saved(
        self, library: AgentLibrary
    ):
        with pytest.raises(UnknownModelError):
            library.create(spec(model=ModelRef("default", "unlisted")))
        assert library.list_agents() == []
        created = library.create(spec(model=ModelRef("default", "listed")))
        assert created.spec.model == ModelRef("default", "listed")

    def test_instructions_at_the_limit_are_kept_exactly(self, library: AgentLibrary):
        text = " padded \n" + "x" * (MAX_INSTRUCTIONS_CHARS - 9)
        agent = library.create(spec(instructions=text))
        assert library.load(agent.agent_id).spec.instructions == text
