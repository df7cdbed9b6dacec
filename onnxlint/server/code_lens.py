"""Code lens "Analyze export (<target>)" over export calls, model classes and target factories.

Which target each lens runs is decided in targets.py (`lenses_for`); this feature shows the
lenses, with the last analysis's memory figures in their tooltips.
"""

from __future__ import annotations

from lsprotocol import types

from onnxlint.server import documents
from onnxlint.server.app import OnnxlintServer
from onnxlint.server.protocol import ANALYZE_EXPORT
from onnxlint.server.targets import Lens, cell_lenses, deep_targets_of, lenses_for, shown_at


async def code_lens(ls: OnnxlintServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    doc = ls.document(uri)
    text, version = doc.source, documents.lens_version(ls, uri)
    if not ls.settings_for(uri).enable:
        return []
    notebook = documents.notebook_of(ls, uri)
    if notebook is not None:  # a cell: the lenses of its notebook, run as one script
        nb = notebook
        found = await ls.run_check(lambda: cell_lenses(ls, uri, nb, deep_targets_of(ls)))
    else:
        found = await ls.run_check(lambda: lenses_for(ls, uri, text, deep_targets_of(ls)))
    lines = ls.lines(text)
    out = []
    for lens in shown_at(found, version):
        pos = lines.position(lens.line, 1)
        out.append(
            types.CodeLens(
                range=types.Range(pos, pos),
                command=types.Command(
                    title=lens.title,
                    command=lens.command,
                    arguments=[uri, lens.argument],
                    tooltip=_memory_tooltip(ls, lens),
                ),
            )
        )
    return out


def _memory_tooltip(ls: OnnxlintServer, lens: Lens) -> str | None:
    """The memory figures of the target's last analysis (the lens's hover), if any."""
    if ls.deep is None or lens.command != ANALYZE_EXPORT:
        return None
    name = lens.argument.get("target")
    result = next((r for r in reversed(ls.deep.results) if r.target.name == name), None)
    if result is None:
        return None
    from onnxlint.deep.report import memory_lines

    found = memory_lines(result)
    return f"{name}: " + "\n".join(found) if found else None


def register(server: OnnxlintServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_LENS, types.CodeLensOptions(resolve_provider=False))(
        code_lens
    )
