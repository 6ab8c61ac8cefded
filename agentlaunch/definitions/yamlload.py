"""Reading the YAML people write (agent.yaml, skill front matter, pricing.yaml) within fixed bounds.

PyYAML's safe loader accepts three things a hostile or broken file can use
against the process reading it: aliases (``*a``) that expand a 500-byte file
into millions of values once something walks the result (a JSON dump, a
pydantic check, a ``repr`` in an error message); nesting thousands of levels
deep, which ends in ``RecursionError``; and a key given twice, which it
silently resolves to the last one. :class:`BoundedLoader` refuses all three
while composing, before any value is built, with the line where it stopped.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 64
"""Collections nested deeper than this are refused (agent.yaml needs three levels)."""
MAX_WEIGHT = 2_000_000
"""The most a document may weigh with every alias expanded: one per node plus one per scalar character.

A file without aliases weighs about its size in bytes, so every file within
the 1 MiB limit passes; aliases may repeat what they name up to this total.
"""


class BoundedLoader(yaml.SafeLoader):
    """A ``SafeLoader`` that refuses deep nesting, alias bombs and duplicate keys (all as ``ComposerError``)."""

    def __init__(self, stream: str | bytes, *, duplicates_ok: bool = False) -> None:
        super().__init__(stream)
        self._duplicates_ok = duplicates_ok  # for a caller that walks the nodes and names duplicates itself
        self._depth = 0
        # Expanded weight of every node composed so far, by id: an alias adds the weight of what it names.
        self._weights: dict[int, int] = {}
        self._keep: list[yaml.Node] = []  # keeps the ids above from being reused while composing

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if not isinstance(event, yaml.AliasEvent | yaml.ScalarEvent) and self._depth >= MAX_DEPTH:
            raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if isinstance(event, yaml.AliasEvent):
            return node  # its weight is counted where it is used (see _weigh)
        if node is not None:
            self._weigh(node)
        return node

    def _weigh(self, node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode):
            weight = 1 + len(node.value)
        elif isinstance(node, yaml.SequenceNode):
            weight = 1 + sum(self._weights.get(id(child), 1) for child in node.value)
        else:
            weight = 1 + sum(self._weights.get(id(k), 1) + self._weights.get(id(v), 1) for k, v in node.value)
            if not self._duplicates_ok:
                self._refuse_duplicates(node)
        if weight > MAX_WEIGHT:
            raise yaml.composer.ComposerError(
                None,
                None,
                f"aliases expand this document beyond {MAX_WEIGHT:,} nodes and characters (an alias bomb?)",
                node.start_mark,
            )
        self._weights[id(node)] = weight
        self._keep.append(node)

    @staticmethod
    def _refuse_duplicates(node: yaml.Node) -> None:
        seen: dict[str, int] = {}
        for key, _ in node.value:
            if not isinstance(key, yaml.ScalarNode):
                continue
            if key.value in seen:
                raise yaml.composer.ComposerError(
                    None, None, f"duplicate key {key.value!r} (first given on line {seen[key.value] + 1})", key.start_mark
                )
            seen[key.value] = key.start_mark.line


def safe_load(text: str) -> Any:
    """``yaml.safe_load`` within the bounds above; problems raise ``yaml.YAMLError`` with a mark."""
    loader = BoundedLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()
