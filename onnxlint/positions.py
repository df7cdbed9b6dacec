"""Positions of nodes, computed only for blocks that report something.

libcst's PositionProvider costs about twice a parse, so it is never run on a whole file:
the engine asks for positions only when a rule reports in a block, and keeps them with
the block (an edit elsewhere in the file does not recompute them).
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider

from onnxlint.blocks import Block
from onnxlint.violation import Span

_KEY = "positions"


def block_positions(block: Block) -> dict[cst.CSTNode, CodeRange]:
    """Node -> range within the block (1-based lines, 0-based columns), memoised."""
    cached = block.memo.get(_KEY)
    if cached is None:
        assert block.module is not None
        wrapper = MetadataWrapper(block.module, unsafe_skip_copy=True)
        cached = dict(wrapper.resolve(PositionProvider))
        block.memo[_KEY] = cached
    return cached  # type: ignore[no-any-return,unused-ignore]


def node_span(block: Block, node: cst.CSTNode) -> Span | None:
    """The file span of `node` if it belongs to `block`."""
    rng = block_positions(block).get(node)
    if rng is None:
        return None
    offset = block.start_line - 1
    return Span(
        rng.start.line + offset,
        rng.start.column + 1,
        rng.end.line + offset,
        rng.end.column + 1,
    )
