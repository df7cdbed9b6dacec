"""The chain that explains a finding whose pieces are spread over calls and files.

A `Link` is one step of it: a node of a file (`validate(net, loader)` in export.py, then
`net.train()` in loop.py) and what happens there. The analyses that follow a model or a
value through the project's own functions (`modes`, `values`) record the links they cross;
a rule names the chain in its message ("`validate()` in engine/loop.py:9 calls
`net.train()`") and gives each link as a related location (LSP `relatedInformation`,
JSON `related`). Positions are looked up only when a finding is reported (`locate`).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.source.positions import node_span
from onnxlint.source.walker import iter_children

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView


@dataclass(frozen=True)
class Link:
    """One step of a chain: `node` in the file of `view`, and what happens there."""

    text: str  # "`validate()` {at} calls `net.train()`" (`describe` fills in `{at}`)
    view: FileAnalysis
    node: cst.CSTNode
    quiet: bool = False  # a related location only, not named in the message


Chain = tuple[Link, ...]


def analysis_of(view: FileView) -> FileAnalysis:
    """The `FileAnalysis` behind a view (a rule's `Context` holds one)."""
    found = getattr(view, "analysis", None)
    return found if found is not None else view  # type: ignore[return-value]


def locate(view: FileAnalysis, node: cst.CSTNode) -> tuple[int, int] | None:
    """The 1-based line and column of `node` in its file (None when it is not found)."""
    memo = view.semantic.memo
    key = ("located", id(node))
    if key in memo:
        return memo[key]  # type: ignore[return-value]
    found: tuple[int, int] | None = None
    for block in view.blocks:
        if block.module is not None and _holds(block.module, node):
            span = node_span(block, node)
            if span is not None:
                found = (span.line, span.column)
            break
    memo[key] = found
    return found


def _holds(root: cst.CSTNode, target: cst.CSTNode) -> bool:
    stack = [root]
    while stack:
        node = stack.pop()
        if node is target:
            return True
        stack.extend(iter_children(node))
    return False


def where(here: FileView, view: FileAnalysis, line: int) -> str:
    """`engine/loop.py:9` (relative to the project root), or `line 9` in `here`'s file."""
    return where_path(here, view.path, line)


def where_path(here: FileView, path: str, line: int) -> str:
    """`where` for a file given by its path."""
    if os.path.abspath(path) == os.path.abspath(here.path):
        return f"line {line}"
    root = here.config.root
    base = str(root) if root is not None else os.path.dirname(os.path.abspath(here.path))
    try:
        rel = os.path.relpath(os.path.abspath(path), base)
    except ValueError:
        rel = path
    if rel.startswith(".."):
        rel = os.path.abspath(path)
    return f"{rel.replace(os.sep, '/')}:{line}"


@dataclass(frozen=True)
class Step:
    """A located link: for a message (`where`) and a related location."""

    text: str
    path: str  # absolute
    line: int
    column: int
    where: str


def steps(here: FileView, chain: Sequence[Link]) -> list[Step]:
    """The links of a chain that can be located, in order."""
    out: list[Step] = []
    for link in chain:
        pos = locate(link.view, link.node)
        if pos is None:
            continue
        path = os.path.abspath(link.view.path)
        out.append(Step(link.text, path, pos[0], pos[1], where(here, link.view, pos[0])))
    return out


def describe(here: FileView, chain: Sequence[Link]) -> str:
    """The chain in words, each link's text with its place: a link writes `{at}` where
    the place goes (`"`validate()` {at} calls `net.train()`"` -> "`validate()` in
    engine/loop.py:9 calls `net.train()`", or "at line 9" in the file itself)."""
    parts = []
    for s in steps(here, [link for link in chain if not link.quiet]):
        at = f"at {s.where}" if s.where.startswith("line ") else f"in {s.where}"
        parts.append(s.text.replace("{at}", at))
    if len(parts) > 1:
        return ", ".join(parts[:-1]) + " and " + parts[-1]
    return "".join(parts)
