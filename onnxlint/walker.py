"""A fast, read-only walk over a libcst tree.

libcst's own `visit` rebuilds every node on the way back up (it is built for transformers),
which costs as much as parsing. Rules only read the tree, so the engine walks the dataclass
fields directly, skipping whitespace and punctuation, and calls the rules' `visit_<Node>`
and `leave_<Node>` handlers with the ancestor stack. That is ~10x cheaper than `visit`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any, Literal

import libcst as cst

_SKIP_FIELDS = frozenset(
    {
        "lpar",
        "rpar",
        "leading_lines",
        "lines_after_decorators",
        "header",
        "footer",
        "comma",
        "semicolon",
        "trailing_whitespace",
        "empty_lines",
        "newline",
        "dot",
        "colon",
        "equal",
        "star",
        "walrus",
        "arrow",
        "asynchronous",
        "indent",
        "encoding",
        "default_indent",
        "default_newline",
        "has_trailing_newline",
    }
)
_FIELDS: dict[type, tuple[str, ...]] = {}


_LEAF_TYPES = (str, bool, int, float, type(None))


def _may_hold_nodes(annotation: object) -> bool:
    """False for fields typed as plain values (`value: str`, `star: Literal["*"]`)."""
    if annotation in _LEAF_TYPES:
        return False
    return getattr(annotation, "__origin__", None) is not Literal


def child_fields(tp: type) -> tuple[str, ...]:
    """Field names of a node type that can hold child nodes worth visiting."""
    names = _FIELDS.get(tp)
    if names is None:
        names = tuple(
            f.name
            for f in dataclasses.fields(tp)
            if f.name not in _SKIP_FIELDS
            and not f.name.startswith("whitespace")
            and _may_hold_nodes(f.type)
        )
        _FIELDS[tp] = names
    return names


_IS_NODE: dict[type, bool] = {}


def _is_node(tp: type) -> bool:
    # isinstance() against libcst's ABC-based classes is slow; cache per concrete type.
    known = _IS_NODE.get(tp)
    if known is None:
        known = _IS_NODE[tp] = isinstance(tp, type) and issubclass(tp, cst.CSTNode)
    return known


def children(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The meaningful children of `node`, in source order."""
    out: list[cst.CSTNode] = []
    for name in child_fields(type(node)):
        value = getattr(node, name)
        tp = type(value)
        if tp is tuple or tp is list:
            for item in value:
                if _is_node(type(item)):
                    out.append(item)
        elif _is_node(tp):
            out.append(value)
    return out


def iter_children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    return iter(children(node))


def iter_descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """All meaningful nodes under `node` (not `node` itself), in source order."""
    stack = children(node)
    stack.reverse()
    while stack:
        current = stack.pop()
        yield current
        kids = children(current)
        if kids:
            kids.reverse()
            stack.extend(kids)


Handler = Callable[[Any], None]


def walk(
    root: cst.CSTNode,
    enter: dict[type, list[Handler]],
    leave: dict[type, list[Handler]],
    ancestors: list[cst.CSTNode],
    prune: Callable[[cst.CSTNode], bool] | None = None,
) -> None:
    """Depth-first walk calling `enter[type]` before and `leave[type]` after the children.

    `ancestors` is maintained in place (the parent of the node being handled is
    `ancestors[-1]`), so handlers can look up the tree without parent metadata. When
    `prune(node)` is true after the enter handlers ran, the node's children are skipped
    (its leave handlers still run).
    """
    stack: list[tuple[cst.CSTNode, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        tp = type(node)
        if leaving:
            ancestors.pop()
            for handler in leave.get(tp, ()):
                handler(node)
            continue
        for handler in enter.get(tp, ()):
            handler(node)
        stack.append((node, True))
        ancestors.append(node)
        if child_fields(tp) and not (prune is not None and prune(node)):
            kids = children(node)
            for child in reversed(kids):
                stack.append((child, False))
