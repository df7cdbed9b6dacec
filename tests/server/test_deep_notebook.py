"""Issue 29 in a notebook: the deep analysis of a notebook's cells, and its proven fix, in cells.

A real client opens a notebook (LSP 3.17 notebook sync) whose third cell defines a model
with a tensor-dependent `if` and whose last cell exports it. The export cell has the
"Analyze export" lens; the analysis (the real worker runs the code cells as one script)
publishes its findings on the model's cell at the cell's own lines; once the fix is proven,
the code action on that cell's diagnostic edits that cell (and no other), and the next
analysis of the saved notebook is clean.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, analyze_export, code_actions, start, wait_for
from .test_notebooks import Notebook, capabilities

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.deep,
    pytest.mark.slow,
]

MODEL = """\
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y
"""
CELLS = [
    (types.NotebookCellKind.Code, "%matplotlib inline\n!pip install onnx\nimport torch\n"),
    (types.NotebookCellKind.Markup, "# The model"),
    (types.NotebookCellKind.Code, MODEL),
    (
        types.NotebookCellKind.Code,
        "model = M().eval()\n"
        'torch.onnx.export(model, (torch.randn(3, 4),), "m.onnx", dynamo=True)\n',
    ),
]
IF_LINE, EXPORT_LINE = 8, 2  # 1-based, in their cells


def ipynb(cells: list[tuple[types.NotebookCellKind, str]]) -> str:
    """The notebook as Jupyter saves it."""
    out = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": t}
        if kind == types.NotebookCellKind.Code
        else {"cell_type": "markdown", "metadata": {}, "source": t}
        for kind, t in cells
    ]
    return json.dumps({"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


async def _lens(lsp: Client, cell: str) -> list[types.CodeLens]:
    found = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(cell))
    )
    return list(found or [])


def _at_the_if(lsp: Client, cell: str, *, fixed: bool) -> types.Diagnostic | None:
    """The last diagnostic published for the model's cell at the `if` that carries the deep
    OLX802 (folded into the static OLX101 of the same line: one cause, one diagnostic)."""
    for p in reversed(lsp.publishes):
        if p.uri != cell:
            continue
        for d in p.diagnostics:
            said = [d.message, *(r.message for r in d.related_information or [])]
            at_the_if = d.range.start.line == IF_LINE - 1 and any("OLX802" in m for m in said)
            if at_the_if and (not fixed or (isinstance(d.data, dict) and "fix" in d.data)):
                return d
        return None
    return None


async def test_lens_findings_and_proven_fix_in_a_notebook_cell(lsp: Client, tmp_path: Path) -> None:
    pytest.importorskip("torch")
    path = tmp_path / "export.ipynb"
    path.write_text(ipynb(CELLS))
    await start(lsp, "vscode", capabilities=capabilities(pull=False), folders=[tmp_path])
    nb = Notebook(lsp, path, CELLS)
    nb.open()
    first, _markdown, model, export = nb.cells

    # the lens is on the export call, in the export cell, at the cell's line
    (lens,) = await _lens(lsp, export)
    assert lens.range.start.line == EXPORT_LINE - 1
    assert lens.command is not None and lens.command.command == "onnxlint.analyzeExport"
    assert lens.command.title == ("Analyze export (M, dynamo exporter: runs this notebook)"), (
        lens.command.title
    )
    assert await _lens(lsp, model) == [] and await _lens(lsp, first) == []

    out = await analyze_export(lsp, list(lens.command.arguments or []))
    assert out["status"] == "ok" and out["target"] == "export.ipynb:cell 4:2", out
    # the findings on the model's cell, at its line 8, then again with the proven fix
    await wait_for(lambda: _at_the_if(lsp, model, fixed=False), 60, "the deep finding")
    finding = await wait_for(lambda: _at_the_if(lsp, model, fixed=True), 300, "its fix")
    assert not [p for p in lsp.publishes if p.uri == nb.uri]  # nothing on the .ipynb file

    actions = [
        a for a in await code_actions(lsp, model, finding) if isinstance(a, types.CodeAction)
    ]
    (fix,) = [a for a in actions if "torch.where" in a.title]
    assert fix.title.startswith("onnxlint (OLX101): Rewrite with torch.where (exports; outputs")
    assert fix.edit is not None
    nb.apply(fix.edit)  # (asserts that it edits a cell of the notebook)
    assert lsp.texts[model] == MODEL.replace(
        "        if y.sum() > 0:\n            y = y * 2\n        else:\n            y = y - 1\n",
        "        y = torch.where(y.sum() > 0, y * 2, y - 1)\n",
    )
    assert [lsp.texts[c] for c in (first, export)] == [CELLS[0][1], CELLS[3][1]]

    # saved, and analysed again from the lens: no deep finding is left
    path.write_text(ipynb([(k, lsp.texts[c]) for (k, _), c in zip(CELLS, nb.cells, strict=True)]))
    lsp.notebook_document_did_save(
        types.DidSaveNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=nb.uri)
        )
    )
    # with the lens as first shown (its notebook line is 3 lines off now: an editor that has
    # not redrawn it yet), and with the lens as it is now
    (now,) = await _lens(lsp, export)
    for shown in (lens, now):
        assert shown.command is not None
        uri, argument = shown.command.arguments or [None, {}]
        out = await analyze_export(lsp, [uri, {**argument, "proveFixes": False}])
        assert out["status"] == "ok" and out["target"] == "export.ipynb:cell 4:2", out
        assert out["findings"] == 0, out


async def test_lens_on_an_export_in_a_function_no_cell_calls(lsp: Client, tmp_path: Path) -> None:
    # A notebook that defines its export in a function and never calls it (the user runs it
    # by hand, or from another notebook): the lens runs the cells, then the function.
    pytest.importorskip("torch")
    cells = [
        CELLS[0],
        CELLS[2],
        (
            types.NotebookCellKind.Code,
            "def export_model():\n"
            "    model = M().eval()\n"
            '    torch.onnx.export(model, (torch.randn(3, 4),), "m.onnx", dynamo=True)\n',
        ),
    ]
    path = tmp_path / "define_only.ipynb"
    path.write_text(ipynb(cells))
    await start(lsp, "vscode", capabilities=capabilities(pull=False), folders=[tmp_path])
    nb = Notebook(lsp, path, cells)
    nb.open()
    _first, model, export = nb.cells

    (lens,) = await _lens(lsp, export)
    assert lens.range.start.line == 2
    assert lens.command is not None
    assert lens.command.title == (
        "Analyze export (M, dynamo exporter: runs this notebook, then export_model())"
    ), lens.command.title
    args = list(lens.command.arguments or [])
    out = await analyze_export(lsp, [args[0], {**args[1], "proveFixes": False}])
    assert out["status"] == "ok" and out["target"] == "define_only.ipynb:cell 3:3", out
    # the export in the function ran: the model's data-dependent `if` is found in its cell
    await wait_for(lambda: _at_the_if(lsp, model, fixed=False), 60, "the deep finding")
    assert not (tmp_path / "m.onnx").exists()  # (the analysis writes no file)
