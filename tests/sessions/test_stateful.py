"""A model-based test: random appends, branches, updates, deletes, imports, compactions and
reopenings against a plain in-memory model of the tree; every read is checked against it."""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from backend.sessions import (
    COMPACTION_PREFIX,
    SessionChangeEvent,
    Sessions,
    StoredCompaction,
    estimate_string_tokens,
)
from backend.sessions.tokens import estimate_row_tokens

IDS = st.sampled_from([f"m{i}" for i in range(12)])
TEXTS = st.sampled_from(["", "hi", "hello world", "ünïcödé ✓", "a b c d e f", "😀" * 3])


def message(message_id: str, text: str, role: str = "user") -> dict[str, Any]:
    return {"id": message_id, "role": role, "parts": [{"type": "text", "text": text}]}


@dataclass
class Row:
    parent: str | None
    seq: int
    message: dict[str, Any]


@dataclass
class Model:
    """The tree as the specification describes it, with no caches and no cleverness."""

    rows: dict[str, Row] = field(default_factory=dict)
    next_seq: int = 1
    compactions: list[StoredCompaction] = field(default_factory=list)

    def leaf(self) -> str | None:
        if not self.rows:
            return None
        return max(self.rows, key=lambda i: self.rows[i].seq)

    def insert(self, msg: dict[str, Any], parent: str | None) -> None:
        self.rows[msg["id"]] = Row(parent, self.next_seq, msg)
        self.next_seq += 1

    def path(self, leaf: str | None) -> list[str]:
        result: list[str] = []
        while leaf is not None and leaf in self.rows:
            result.append(leaf)
            leaf = self.rows[leaf].parent
        return result[::-1]

    def children(self, parent: str) -> list[str]:
        kids = [i for i, row in self.rows.items() if row.parent == parent]
        return sorted(kids, key=lambda i: self.rows[i].seq)

    def delete(self, ids: set[str]) -> None:
        for child_id, row in self.rows.items():
            if child_id in ids:
                continue
            parent = row.parent
            while parent is not None and parent in ids:
                parent = self.rows[parent].parent
            row.parent = parent
        for message_id in ids:
            self.rows.pop(message_id, None)

    def visible(self, leaf: str | None) -> list[dict[str, Any] | StoredCompaction]:
        return self.overlaid(self.path(leaf))

    def overlaid(self, path: list[str]) -> list[dict[str, Any] | StoredCompaction]:
        """``path`` with overlays: at each index the newest compaction from it that ends on
        the path at or after it covers the span."""
        out: list[dict[str, Any] | StoredCompaction] = []
        index = 0
        while index < len(path):
            chosen = None
            for compaction in self.compactions:
                if compaction.from_message_id == path[index] and (
                    compaction.to_message_id in path[index:]
                ):
                    chosen = compaction
            if chosen is None:
                out.append(self.rows[path[index]].message)
                index += 1
            else:
                out.append(chosen)
                index = path.index(chosen.to_message_id, index) + 1
        return out

    def history(self, leaf: str | None) -> list[dict[str, Any]]:
        return self.render(self.visible(leaf))

    @staticmethod
    def render(items: list[dict[str, Any] | StoredCompaction]) -> list[dict[str, Any]]:
        return [
            {
                "id": COMPACTION_PREFIX + item.id,
                "role": "assistant",
                "parts": [{"type": "text", "text": item.summary}],
                "createdAt": item.created_at,
            }
            if isinstance(item, StoredCompaction)
            else item
            for item in items
        ]

    def tokens(self) -> int:
        total = 0
        for item in self.visible(self.leaf()):
            if isinstance(item, StoredCompaction):
                total += estimate_string_tokens(item.summary)
            else:
                total += estimate_row_tokens(item)
        return total


def stored_bytes(msg: dict[str, Any]) -> int:
    return len(json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode())


class SessionMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="sessions-stateful-"))
        self.path = self.directory / "s.sqlite"
        self.model = Model()
        self.events: list[SessionChangeEvent] = []
        self.open()

    def open(self) -> None:
        self.store = Sessions(self.path)
        self.store.subscribe(self.events.append)
        self.session = self.store.session("chat")

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.directory, ignore_errors=True)

    def expect_events(self, *types: str) -> None:
        assert [e.type for e in self.events] == list(types), self.events
        self.events.clear()

    # ── writes ──────────────────────────────────────────────────────

    @rule(message_id=IDS, text=TEXTS)
    def append_to_the_leaf(self, message_id: str, text: str) -> None:
        msg = message(message_id, text)
        result = self.session.append_message(msg)
        if message_id in self.model.rows:
            assert not result.inserted
            assert result.message == self.model.rows[message_id].message
            self.expect_events("append")
            return
        assert result.inserted
        self.model.insert(msg, self.model.leaf())
        self.expect_events("append")

    @rule(message_id=IDS, text=TEXTS, parent=st.one_of(st.none(), IDS, st.just("ghost")))
    def append_with_an_explicit_parent(self, message_id: str, text: str, parent: str | None):
        msg = message(message_id, text, role="assistant")
        result = self.session.append_message(msg, parent_id=parent)
        self.expect_events("append")
        if message_id in self.model.rows:
            assert not result.inserted
            return
        self.model.insert(msg, parent if parent in self.model.rows else None)

    @rule(message_id=IDS, text=TEXTS)
    def update(self, message_id: str, text: str) -> None:
        msg = message(message_id, text)
        returned = self.session.update_message(msg)
        row = self.model.rows.get(message_id)
        if row is None:
            assert returned is None
            self.expect_events()
            return
        assert returned == msg
        changed = row.message != msg
        row.message = msg
        self.expect_events(*(["update"] if changed else []))

    @rule(message_id=IDS, text=TEXTS, parent=st.one_of(st.none(), IDS))
    def import_verbatim(self, message_id: str, text: str, parent: str | None) -> None:
        if parent is not None and parent not in self.model.rows:
            parent = None  # the store trusts import parents; the model only imports real ones
        msg = message(message_id, text)
        self.session.import_message(msg, parent_id=parent, created_at=7)
        if message_id in self.model.rows:
            self.expect_events()
            return
        self.model.insert(msg, parent)
        self.expect_events("import")

    @rule(doomed=st.sets(st.one_of(IDS, st.just("ghost")), min_size=1, max_size=4))
    def delete(self, doomed: set[str]) -> None:
        self.session.delete_messages(sorted(doomed))
        self.model.delete(doomed)
        self.expect_events("delete")

    @precondition(lambda self: len(self.model.rows) >= 2)
    @rule(data=st.data(), summary=TEXTS)
    def compact_a_span_of_the_active_path(self, data: st.DataObject, summary: str) -> None:
        path = self.model.path(self.model.leaf())
        if not path:
            return
        start = data.draw(st.integers(0, len(path) - 1))
        end = data.draw(st.integers(start, len(path) - 1))
        compaction = self.session.add_compaction(summary or "s", path[start], path[end])
        self.model.compactions.append(compaction)
        self.expect_events("compaction")

    @rule(from_id=IDS, to_id=IDS)
    def add_a_compaction_that_may_not_apply(self, from_id: str, to_id: str) -> None:
        self.model.compactions.append(self.session.add_compaction("loose", from_id, to_id))
        self.expect_events("compaction")

    @precondition(lambda self: len(self.model.rows) > 3)
    @rule()
    def clear(self) -> None:
        self.session.clear_messages()
        self.model = Model(next_seq=self.model.next_seq)
        self.expect_events("clear")

    @rule()
    def reopen(self) -> None:
        self.store.close()
        self.open()

    # ── reads ───────────────────────────────────────────────────────

    @invariant()
    def history_matches_the_model(self) -> None:
        expected = self.model.history(self.model.leaf())
        assert self.session.get_history() == expected
        assert list(self.session.history(newest_first=True)) == expected[::-1]

    @rule(leaf=IDS)
    def read_a_branch(self, leaf: str) -> None:
        expected = self.model.history(leaf) if leaf in self.model.rows else []
        assert self.session.get_history(leaf_id=leaf) == expected
        assert list(self.session.history(leaf_id=leaf, newest_first=True)) == expected[::-1]

    @invariant()
    def leaf_branches_and_point_reads_match(self) -> None:
        leaf = self.model.leaf()
        latest = self.session.get_latest_leaf()
        assert (latest["id"] if latest else None) == leaf
        for message_id, row in self.model.rows.items():
            assert self.session.get_message(message_id) == row.message
            assert [m["id"] for m in self.session.get_branches(message_id)] == (
                self.model.children(message_id)
            )

    @invariant()
    def token_estimate_matches(self) -> None:
        assert self.session.token_estimate() == self.model.tokens()

    @invariant()
    def row_stats_and_recent_history_match(self) -> None:
        path = self.model.path(self.model.leaf())
        stats = self.session.get_history_row_stats()
        assert [s.id for s in stats] == path
        sizes = [stored_bytes(self.model.rows[i].message) for i in path]
        assert [s.bytes for s in stats] == sizes
        if not path:
            return
        budget = sum(sizes[-3:])
        recent = self.session.get_recent_history(budget)
        assert recent.total_content_bytes == sum(sizes)
        assert recent.truncated == (len(path) > 3)
        # the window is the newest three rows; only overlays lying inside it apply
        assert recent.messages == self.model.render(self.model.overlaid(path[-3:]))


def test_random_operations_keep_the_store_equal_to_the_model():
    """Runs on the engine of the package's fixture (``CHATS_STORAGE``)."""
    run_state_machine_as_test(
        SessionMachine,
        settings=settings(
            max_examples=100,
            stateful_step_count=30,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
