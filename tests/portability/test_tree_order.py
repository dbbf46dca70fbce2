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
