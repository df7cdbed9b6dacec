"""Notebook documents over LSP 3.17 notebook sync (issue 16): a real client opens a notebook,
gets each cell's findings on that cell, applies quick fixes and Fix all in a cell, and
hovers there; an edit in one cell changes another's findings."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from .conftest import Client, apply_text_edits, start, uri_of, wait_for
from .test_actions import actions_at

pytestmark = pytest.mark.asyncio(loop_scope="module")

CELLS = [
    (types.NotebookCellKind.Code, "%matplotlib inline\nimport torch\nimport torch.nn as nn"),
    (types.NotebookCellKind.Markup, "# The model"),
    (
        types.NotebookCellKind.Code,
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        if x.sum() > 0:\n            return x\n        return -x",
    ),
    (
        types.NotebookCellKind.Code,
        "model = Net().eval()\nx = torch.randn(1, 2)\n"
        "torch.onnx.export(model, (x,), 'm.onnx', dynamo=False)\n"
        "program = torch.onnx.dynamo_export(model, x)",
    ),
]


def capabilities(pull: bool) -> types.ClientCapabilities:
    caps = client_capabilities("visual_studio_code")
    caps.notebook_document = types.NotebookDocumentClientCapabilities(
        synchronization=types.NotebookDocumentSyncClientCapabilities(
            dynamic_registration=False, execution_summary_support=True
        )
    )
    assert caps.text_document is not None
    caps.text_document.diagnostic = (
        types.DiagnosticClientCapabilities(dynamic_registration=False) if pull else None
    )
    return caps


class Notebook:
    """The client's side of one open notebook: cell URIs, texts and versions."""

    def __init__(
        self,
        client: Client,
        path: Path,
        cells: list[tuple[types.NotebookCellKind, str]] = CELLS,
    ) -> None:
        self.client = client
        self.uri = uri_of(path)
        self.version = 1
        self.kinds_texts = cells
        # Cell URIs as VS Code makes them: the notebook's path, a fragment per cell.
        self.cells = [
            f"vscode-notebook-cell:{path.as_posix()}#W{i}sZmlsZQ%3D%3D" for i in range(len(cells))
        ]
        for cell, (_, text) in zip(self.cells, cells, strict=True):
            client.texts[cell] = text
            client.versions[cell] = 1

    def open(self) -> None:
        self.client.notebook_document_did_open(
            types.DidOpenNotebookDocumentParams(
                notebook_document=types.NotebookDocument(
                    uri=self.uri,
                    notebook_type="jupyter-notebook",
                    version=self.version,
                    cells=[
                        types.NotebookCell(kind=kind, document=cell)
                        for cell, (kind, _) in zip(self.cells, self.kinds_texts, strict=True)
                    ],
                ),
                cell_text_documents=[
                    types.TextDocumentItem(
                        uri=cell,
                        language_id="python" if kind == types.NotebookCellKind.Code else "markdown",
                        version=1,
                        text=text,
                    )
                    for cell, (kind, text) in zip(self.cells, self.kinds_texts, strict=True)
                ],
            )
        )

    def edit(self, cell: str, edits: list[types.TextEdit]) -> None:
        """Change a cell's text the way VS Code does: a notebook change with text content."""
        old = self.client.texts[cell]
        self.client.texts[cell] = apply_text_edits(old, edits)
        self.client.versions[cell] += 1
        self.version += 1
        self.client.notebook_document_did_change(
            types.DidChangeNotebookDocumentParams(
                notebook_document=types.VersionedNotebookDocumentIdentifier(
                    version=self.version, uri=self.uri
                ),
                change=types.NotebookDocumentChangeEvent(
                    cells=types.NotebookDocumentCellChanges(
                        text_content=[
                            types.NotebookDocumentCellContentChanges(
                                document=types.VersionedTextDocumentIdentifier(
                                    uri=cell, version=self.client.versions[cell]
                                ),
                                changes=[
                                    types.TextDocumentContentChangePartial(
                                        range=e.range, text=e.new_text
                                    )
                                    for e in edits
                                ],
                            )
                        ]
                    )
                ),
            )
        )

    def apply(self, edit: types.WorkspaceEdit) -> None:
        """Apply a server's workspace edit (to one cell) like the editor."""
        for dc in edit.document_changes or []:
            assert isinstance(dc, types.TextDocumentEdit)
            uri = dc.text_document.uri
            assert uri in self.cells
            assert dc.text_document.version == self.client.versions[uri], "edit for an old version"
            self.edit(uri, [e for e in dc.edits if isinstance(e, types.TextEdit)])
        for uri, edits in (edit.changes or {}).items():
            self.edit(uri, list(edits))


def latest(client: Client, uri: str) -> list[types.Diagnostic] | None:
    for p in reversed(client.publishes):
        if p.uri == uri:
            return list(p.diagnostics)
    return None


def codes(diags: list[types.Diagnostic] | None) -> list[str]:
    return sorted(str(d.code) for d in diags or [])


async def pushed(client: Client, uri: str, want: list[str]) -> list[types.Diagnostic]:
    await wait_for(lambda: codes(latest(client, uri)) == want, what=f"{want} on {uri}")
    return latest(client, uri) or []


async def test_push_findings_fixes_and_hover_per_cell(lsp: Client, tmp_path: Path) -> None:
    result = await start(lsp, "vscode", capabilities=capabilities(pull=False))
    sync = result.capabilities.notebook_document_sync
    assert isinstance(sync, types.NotebookDocumentSyncOptions)
    nb = Notebook(lsp, tmp_path / "nb.ipynb")
    nb.open()
    first, markdown, model, export = nb.cells
    (branch,) = await pushed(lsp, model, ["OLX101"])
    assert branch.range.start == types.Position(2, 11)  # line 3 of the cell, not the module
    diags = await pushed(lsp, export, ["OLX401", "OLX402"])
    assert codes(latest(lsp, first)) == [] and codes(latest(lsp, markdown)) == []
    legacy = next(d for d in diags if d.code == "OLX401")
    assert legacy.range.start.line == 2

    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(export), legacy.range.start)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**OLX401**")

    # Over the class line in cell 3: the export in cell 4 (cells are one module), named by
    # its cell (the notebook is saved on disk, as an editor opens it).
    (tmp_path / "nb.ipynb").write_text(_as_ipynb())
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(model), types.Position(0, 7))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert "`Net` is exported by 2 exports" in hover.contents.value
    assert "nb.ipynb:cell 4:3" in hover.contents.value, hover.contents.value

    # The quick fix edits the cell, at the cell's positions, for the cell's version.
    actions = await actions_at(lsp, export, legacy)
    fix = next(a for a in actions if "dynamo" in a.title.lower() and "Suppress" not in a.title)
    assert fix.edit is not None
    nb.apply(fix.edit)
    assert "dynamo=True" in lsp.texts[export]
    await pushed(lsp, export, ["OLX402"])

    # Suppress on this line, in a cell.
    (removed,) = latest(lsp, export) or []
    actions = await actions_at(lsp, export, removed)
    suppress = next(a for a in actions if "Suppress" in a.title)
    assert suppress.edit is not None
    before = lsp.texts[export]
    nb.apply(suppress.edit)
    assert "# onnxlint: ignore[OLX402]" in lsp.texts[export]
    await pushed(lsp, export, [])
    nb.edit(export, [types.TextEdit(_whole(lsp.texts[export]), before)])
    await pushed(lsp, export, ["OLX402"])

    # Fix all (safe fixes) in the cell.
    result2 = await lsp.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(export),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    (fix_all,) = [a for a in result2 or [] if isinstance(a, types.CodeAction)]
    if fix_all.edit is None:
        fix_all = await lsp.code_action_resolve_async(fix_all)
    assert fix_all.edit is not None
    nb.apply(fix_all.edit)
    assert "dynamo_export" not in lsp.texts[export]
    await pushed(lsp, export, [])

    # An edit in cell 1 changes cell 4's findings: the cells are one module, and
    # `torch` is what cell 1 imports.
    nb.edit(export, [types.TextEdit(_whole(lsp.texts[export]), CELLS[3][1])])
    await pushed(lsp, export, ["OLX401", "OLX402"])
    nb.edit(first, [types.TextEdit(_whole(lsp.texts[first]), "import numpy as torch\n")])
    await pushed(lsp, export, [])
    nb.edit(first, [types.TextEdit(_whole(lsp.texts[first]), CELLS[0][1])])
    await pushed(lsp, export, ["OLX401", "OLX402"])

    lsp.notebook_document_did_close(
        types.DidCloseNotebookDocumentParams(
            notebook_document=types.NotebookDocumentIdentifier(uri=nb.uri),
            cell_text_documents=[types.TextDocumentIdentifier(uri=c) for c in nb.cells],
        )
    )
    await pushed(lsp, model, [])


async def test_pull_diagnostics_for_a_cell(lsp: Client, tmp_path: Path) -> None:
    await start(lsp, "vscode", capabilities=capabilities(pull=True))
    nb = Notebook(lsp, tmp_path / "nb.ipynb")
    nb.open()
    await asyncio.sleep(0)
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(nb.cells[3]))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    assert codes(report.items) == ["OLX401", "OLX402"]
    assert {d.range.start.line for d in report.items} == {2, 3}
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(nb.cells[0]))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport) and not report.items
    assert not [p for p in lsp.publishes if p.uri in nb.cells]  # pull clients get no pushes


def _as_ipynb() -> str:
    cells = [
        {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": t}
        if kind == types.NotebookCellKind.Code
        else {"cell_type": "markdown", "metadata": {}, "source": t}
        for kind, t in CELLS
    ]
    return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 4})


def _whole(text: str) -> types.Range:
    lines = text.split("\n")
    return types.Range(types.Position(0, 0), types.Position(len(lines) - 1, len(lines[-1])))
