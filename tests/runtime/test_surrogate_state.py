"""Issue 10: session state holding a lone UTF-16 surrogate is stored and read back exactly.

State is exact JSON like a stored message: a string UTF-8 cannot carry is escaped (``\\ud800``)
instead of failing the write (or the whole run that proposed it).
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from backend.runtime.state import SessionStateStore
from backend.runtime.state_schema import check_state
from backend.runtime.store import RuntimeStore
from backend.storage import Database
from tests.support.unicode_text import any_text


class TestStateWithSurrogates:
    def test_a_document_with_a_lone_surrogate_is_stored_and_read_back_exactly(self, tmp_path):
        db = Database(tmp_path / "chat.sqlite")
        store = RuntimeStore(db)
        store.ensure_conversation(
            "c1",
            tenant_id="t",
            owner_principal_id="u",
            participant_ids=("u",),
            agent_id="assistant",
            agent_version_policy="pinned",
            agent_version=1,
            title="odd \ud800 title",
            now=1,
        )
        states = SessionStateStore(store, clock=lambda: 5)
        states.put("c1", expected_version=0, state={"note": "half \ud83d of a pair"})
        assert states.get("c1").data == {"note": "half \ud83d of a pair"}
        assert store.load_conversation("c1").title == "odd \ufffd title"
        db.close()

    def test_well_formed_documents_keep_their_readable_encoding(self):
        assert check_state({"note": "héllo 😀"}, None) == '{"note":"héllo 😀"}'

    @given(st.dictionaries(st.sampled_from("abcd"), st.lists(any_text, max_size=3), max_size=4))
    def test_any_text_encodes_to_utf8_json_that_reads_back_as_the_same_data(self, data):
        encoded = check_state(data, None, max_bytes=1 << 20)
        encoded.encode("utf-8")
        # The same data, as far as JSON can tell (it spells a pair and its character alike).
        assert json.loads(encoded) == json.loads(json.dumps(data))
