"""Export → import into an empty directory → export gives the same document.

What an import may change, as ``docs/export-format.md`` says: ``chat.id`` (a new id is minted),
``conversation.id`` (it follows the chat id), and a ``source`` that was null becomes
``{"format": "chats", "id": <exported chat id>}``. Everything else is identical: content,
tree shape, sibling order, the active leaf, compactions, record, state, title and times.
"""

from __future__ import annotations

import json
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backend.chats import Chats
from backend.portability import all_chat_ids, import_file, write_zip_export
from tests.portability.round_trip import export_one, normalise, rich_chat


class TestRoundTrip:
    def test_export_import_export_gives_the_same_document(self, chats, other, tmp_path):
        chat_id = rich_chat(chats)
        first = export_one(chats, chat_id)
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(first))
        report = import_file(other, path)
        assert report.imported == 1 and report.ok
        second = export_one(other, report.chat_ids[0])
        assert normalise(second) == normalise(first)
        assert second["source"] == {"format": "chats", "id": chat_id}
        assert len(first["attachments"]) == 1  # the image, once, though two messages show it

    def test_the_active_leaf_and_sibling_order_survive(self, chats, other, tmp_path):
        chat_id = rich_chat(chats)
        path = tmp_path / "chat.json"
        path.write_text(json.dumps(export_one(chats, chat_id)))
        imported = other.get_chat(import_file(other, path).chat_ids[0]).session
        original = chats.get_chat(chat_id).session
        assert imported.get_history() == original.get_history()
        assert imported.get_branches("u2") == original.get_branches("u2")

    def test_a_zip_export_of_everything_round_trips(self, chats, other, tmp_path):
        rich_chat(chats)
        chats.create_chat("Empty one")
        path = tmp_path / "all.zip"
        write_zip_export(chats, all_chat_ids(chats), str(path))
        with zipfile.ZipFile(path) as archive:
            assert any(n.startswith("attachments/") for n in archive.namelist())
        report = import_file(other, path)
        assert (report.format, report.imported) == ("chats", 2)
        assert import_file(other, path).unchanged == 2
        firsts = sorted((normalise(export_one(chats, i)) for i in all_chat_ids(chats)), key=str)
        seconds = sorted((normalise(export_one(other, i)) for i in all_chat_ids(other)), key=str)
        assert firsts == seconds


# Random trees: each new message picks any earlier message (or none) as its parent.
trees = st.lists(
    st.tuples(st.integers(min_value=-1, max_value=30), st.text(min_size=1, max_size=20)),
    min_size=1,
    max_size=25,
)


class TestRoundTripProperty:
    @settings(
        max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
    )
    @given(tree=trees)
    def test_any_tree_round_trips_with_the_same_shape_and_order(self, tmp_path_factory, tree):
        root = tmp_path_factory.mktemp("rt")
        with Chats(root, "a") as source, Chats(root, "b") as target:
            chat_id = source.create_chat("t").id
            session = source.get_chat(chat_id).session
            for index, (parent, text) in enumerate(tree):
                parent_id = f"m{parent}" if 0 <= parent < index else None
                session.append_message(
                    {"id": f"m{index}", "role": "user", "parts": [{"type": "text", "text": text}]},
                    parent_id=parent_id,
                )
            first = export_one(source, chat_id)
            path = root / "c.json"
            path.write_text(json.dumps(first))
            new_id = import_file(target, path).chat_ids[0]
            assert normalise(export_one(target, new_id)) == normalise(first)
