"""One file's facts as the rules and the project model see them: its parsed blocks, its
semantic model (`SemanticModel`) and the `FileAnalysis` the per-file analyses read.

`file_analysis` builds them from parsed blocks; the engine uses it for the file it checks,
the project index for the project's other files (read as text, never imported).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import libcst as cst

from onnxlint.analysis.file import FileAnalysis, ProjectLookup
from onnxlint.analysis.scope import STATEMENT_WORDS, block_words
from onnxlint.core.config import Config
from onnxlint.semantic.index import FunctionInfo, block_index
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import Block


def file_analysis(
    path: str,
    text: str,
    config: Config,
    parsed: list[Block],
    resolve_base: Callable[[str], bool | None] | None = None,
    project: ProjectLookup | None = None,
) -> FileAnalysis:
    """The semantic model of a file and its other facts, from its parsed blocks."""
    indexes = [block_index(b) for b in parsed]
    body: list[cst.BaseStatement] = [s for b in parsed if b.module for s in b.module.body]
    model = SemanticModel.build(indexes, body, config.exporter, resolve_base)
    # Built when the export data-flow first asks (`analysis.scope`): most files have no
    # export call, and the words of every block cost ~3% of a cold check.
    model.memo[STATEMENT_WORDS] = partial(statement_words, parsed)
    functions: dict[int, FunctionInfo] = {}
    for idx in indexes:
        for f in idx.functions:
            functions[id(f.node)] = f
        for c in idx.classes:
            for m in c.methods.values():
                functions[id(m.node)] = m
    return FileAnalysis(path, text, config, model, functions, project, tuple(parsed))


def statement_words(parsed: list[Block]) -> dict[int, frozenset[str]]:
    """{id(top-level statement): the identifiers of its block's text} (`block_words`)."""
    words: dict[int, frozenset[str]] = {}
    for b in parsed:
        found = b.memo.get(STATEMENT_WORDS)  # kept with the block, like its parse
        if found is None:
            found = b.memo[STATEMENT_WORDS] = block_words(b.text)
        if b.module is not None:
            for stmt in b.module.body:
                words[id(stmt)] = found
    return words


@dataclass
class FileFacts:
    """A project file read by the project model: kept per path and content hash."""

    path: str  # absolute
    digest: str
    blocks: list[Block]  # the parsed ones
    analysis: FileAnalysis
    # Built by the project index and not yet used by an engine check: the engine's check
    # of this very text may take it as its own (one context per file and check).
    fresh: bool = True

    @property
    def semantic(self) -> SemanticModel:
        return self.analysis.semantic

    def block_of(self, node: cst.CSTNode) -> Block | None:
        """The block whose tree holds the top-level statement `node` belongs to (by the
        statement identity of each block's call sites, cheap for export calls)."""
        for b in self.blocks:
            idx = block_index(b)
            if any(site.node is node for site in idx.call_sites):
                return b
        return None
