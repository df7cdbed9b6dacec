"""Code lens "Analyze export" over nn.Module subclasses, export calls and analysis targets.

Classes and export calls come from the engine's semantic model (`onnxlint.semantic.FileModel`,
built from the engine's cached blocks, so nothing is parsed twice); targets come from the
deep analyzer's `targets_in_file`. Each lens runs `onnxlint.analyzeExport` with
`[uri, {"line": n, "kind": ..., "name"/"target": ...}]`.
"""

from __future__ import annotations

import logging
from typing import Any

from lsprotocol import types

from onnxlint.server.server import OnnxlintServer

log = logging.getLogger("onnxlint.server")

ANALYZE = "onnxlint.analyzeExport"


def anchors(ls: OnnxlintServer, uri: str, text: str) -> list[tuple[int, str, dict[str, Any]]]:
    """On the engine thread: (1-based line, title, argument) for each lens."""
    from onnxlint.blocks import split_blocks
    from onnxlint.positions import node_span
    from onnxlint.project.facts import file_context
    from onnxlint.semantic import block_index

    blocks = split_blocks(text, ls.engine.parse_cache)
    parsed = [b for b in blocks if b.module is not None]
    indexes = [block_index(b) for b in parsed]
    cfg, _, _ = ls.config_for(uri)
    model = file_context(uri, text, cfg, parsed).model
    block_of: dict[int, Any] = {}
    for b, idx in zip(parsed, indexes, strict=True):
        for c in idx.classes:
            block_of[id(c.node)] = b
        for site in idx.call_sites:
            block_of[id(site.node)] = b
    out: list[tuple[int, str, dict[str, Any]]] = []
    module_classes = [c.name for c in model.module_classes()]
    imported = [n for n in model.imports if n[:1].isupper()]
    for c in model.module_classes():
        block = block_of.get(id(c.node))
        span = node_span(block, c.node) if block is not None else None
        if span is not None:
            line = span.line
            out.append((line, "Analyze export", {"line": line, "kind": "class", "name": c.name}))
    for e in model.export_calls:
        block = block_of.get(id(e.node))
        span = node_span(block, e.node) if block is not None else None
        if span is not None:
            out.append(
                (
                    span.line,
                    "Analyze export",
                    {
                        "line": span.line,
                        "kind": "export",
                        "call": e.qualname,
                        "names": [*module_classes, *imported],
                    },
                )
            )
    return out


async def code_lens(ls: OnnxlintServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    doc = ls.document(uri)
    text = doc.source
    if not ls.settings_for(uri).enable:
        return []
    found = await ls.run_check(lambda: anchors(ls, uri, text))
    targets: list[tuple[Any, int]] = []
    if ls.deep is not None and ls.is_file(uri):
        targets = await ls.get_loop().run_in_executor(None, ls.deep.targets_in_file, uri)
    lines = ls.lines(text)
    lenses: dict[int, types.CodeLens] = {}

    def add(line: int, title: str, arg: dict[str, Any]) -> None:
        pos = lines.position(line, 1)
        lenses[line] = types.CodeLens(
            range=types.Range(pos, pos),
            command=types.Command(title=title, command=ANALYZE, arguments=[uri, arg]),
        )

    for line, title, arg in found:
        add(line, title, arg)
    for target, line in targets:  # a declared target is more precise: it wins on its line
        add(line, f"Analyze export ({target.name})", {"line": line, "target": target.name})
    return [lenses[k] for k in sorted(lenses)]


def register(server: OnnxlintServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(
        code_lens
    )
