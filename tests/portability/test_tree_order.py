"""import_order: parents before children, siblings in source order, the visible leaf last."""

from __future__ import annotations

from backend.portability.formats.tree import import_order

PARENTS = {"root": None, "a": "root", "b": "a", "c": "a", "d": "c"}
CHILDREN = {"root": ["a"], "a": ["b", "c"], "c": ["d"]}


class TestImportOrder:
    def test_the_visible_leaf_is_last_and_siblings_keep_their_order(self):
        order, leaf = import_order(PARENTS, CHILDREN, {"a", "b", "c", "d"}, "b")
        assert order == [("a", None), ("c", "a"), ("d", "c"), ("b", "a")]
        assert leaf == "b"

    def test_a_skipped_node_hands_its_children_to_the_nearest_kept_ancestor(self):
        order, _ = import_order(PARENTS, CHILDREN, {"a", "b", "d"}, "d")
        assert order == [("a", None), ("b", "a"), ("d", "a")]

    def test_a_skipped_leaf_makes_its_nearest_kept_ancestor_visible(self):
        _, leaf = import_order(PARENTS, CHILDREN, {"a", "b"}, "d")
        assert leaf == "a"

    def test_a_parent_cycle_or_a_dangling_parent_becomes_a_root(self):
        parents = {"x": "y", "y": "x", "z": "missing"}
        order, _ = import_order(parents, {"x": ["y"], "y": ["x"]}, {"x", "y", "z"}, None)
        assert sorted(order) == [("x", None), ("y", None), ("z", None)]

    def test_without_a_leaf_the_last_node_in_order_stays_last(self):
        order, leaf = import_order(PARENTS, CHILDREN, {"a", "b", "c"}, None)
        assert leaf == order[-1][0] == "c"


class _CountingParents(dict[str, str | None]):
    """A parent map that counts lookups: the work ``import_order`` does walking ancestors."""

    lookups = 0

    def get(self, key, default=None):
        self.lookups += 1
        return super().get(key, default)


def _messages_under_a_chain_of_empty_nodes(messages: int, empty: int) -> _CountingParents:
    """``empty`` skipped nodes in a chain, then ``messages`` kept siblings under its end."""
    parents = _CountingParents({"e0": None})
    for index in range(1, empty):
        parents[f"e{index}"] = f"e{index - 1}"
    for index in range(messages):
        parents[f"m{index}"] = f"e{empty - 1}"
    return parents


class TestImportOrderCost:
    def test_work_grows_linearly_with_messages_under_a_chain_of_skipped_nodes(self):
        # Issue 27, hole 7: every kept sibling walked the whole skipped chain again, so
        # 3,000 messages under 12,000 empty nodes took 18 s (1.1 s as one thread).
        def lookups(messages: int, empty: int) -> int:
            parents = _messages_under_a_chain_of_empty_nodes(messages, empty)
            kept = {node for node in parents if node.startswith("m")}
            order, _ = import_order(parents, {}, kept, None)
            assert sorted(order) == sorted((node, None) for node in kept)
            return parents.lookups

        small, large = lookups(300, 1_200), lookups(1_200, 4_800)
        assert large / small < 6, f"{small} -> {large} lookups for 4x the nodes"
