"""Ordering a parent-linked message tree for import (pure).

Every format hands over nodes with a parent (possibly skipped, or missing from the source)
and their children's order. :func:`import_order` returns the kept nodes with each one's
nearest kept ancestor as parent, parents before children, siblings in source order, and the
visible leaf last, because the store's active leaf is the newest row. Cycles and dangling
parents never loop or fail: a node whose ancestry cannot be followed becomes a root.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def import_order(
    parents: Mapping[str, str | None],
    children: Mapping[str, Sequence[str]],
    kept: set[str],
    leaf: str | None,
) -> tuple[list[tuple[str, str | None]], str | None]:
    """``([(node, kept parent)], visible leaf)`` for the ``kept`` nodes; see the module doc.

    ``parents`` holds every node (kept or not); ``children`` lists each node's children in
    source order; ``leaf`` is the source's visible node, moved to its nearest kept ancestor.
    """
    kept_parent: dict[str, str | None] = {}
    nearest_kept = _NearestKept(parents, kept)
    for node in kept:
        parent = nearest_kept(parents.get(node))
        kept_parent[node] = parent if parent != node else None
    ordered_children: dict[str | None, list[str]] = {}
    position: dict[str, int] = {}
    counter = 0
    roots = [n for n, p in parents.items() if p is None or p not in parents]
    stack = list(reversed(roots))
    seen_walk: set[str] = set()
    while stack:
        node = stack.pop()
        if node in seen_walk:
            continue
        seen_walk.add(node)
        position[node] = counter
        counter += 1
        stack.extend(reversed([c for c in children.get(node, ()) if c in parents]))
    for node in kept:  # on a parent cycle, unreachable from any root: a root, at the end
        if node not in position:
            position[node] = counter
            counter += 1
            kept_parent[node] = None
    for node in sorted(kept, key=position.__getitem__):
        ordered_children.setdefault(kept_parent[node], []).append(node)
    order: list[tuple[str, str | None]] = []
    walk: list[str] = list(reversed(ordered_children.get(None, [])))
    emitted: set[str] = set()
    while walk:
        node = walk.pop()
        if node in emitted:
            continue
        emitted.add(node)
        order.append((node, kept_parent[node]))
        walk.extend(reversed(ordered_children.get(node, [])))
    for node in sorted(kept - emitted, key=position.__getitem__):  # parent chain was a cycle
        order.append((node, None))
    visible = nearest_kept(leaf) if leaf is not None else None
    if visible is None and order:
        visible = order[-1][0]
    if visible is not None:
        index = next(i for i, (n, _) in enumerate(order) if n == visible)
        order.append(order.pop(index))
    return order, visible


class _NearestKept:
    """The nearest kept ancestor-or-self of a node, each skipped node walked once overall.

    Every skipped node on a walk is remembered with the answer, so siblings under one long
    chain of skipped nodes (a ChatGPT export's empty placeholders) cost one walk, not one
    each: linear in the tree, where walking again per node was quadratic.
    """

    def __init__(self, parents: Mapping[str, str | None], kept: set[str]) -> None:
        self._parents = parents
        self._kept = kept
        self._known: dict[str, str | None] = {}

    def __call__(self, node: str | None) -> str | None:
        path: list[str] = []
        on_path: set[str] = set()
        found: str | None = None
        while node is not None and node not in self._kept:
            if node in self._known:
                found = self._known[node]
                break
            if node in on_path or node not in self._parents:
                break  # a cycle, or a dangling parent: no kept ancestor (found stays None)
            path.append(node)
            on_path.add(node)
            node = self._parents.get(node)
        else:
            found = node
        for skipped in path:
            self._known[skipped] = found
        return found
