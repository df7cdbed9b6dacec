"""Notebook documents (LSP 3.17 notebook sync), the model: a notebook is checked as one
document, its findings are shown, fixed and hovered per cell (handlers: notebooks.py).

pygls keeps the notebook and its cells (each cell is a text document of the workspace).
The server keeps one `DocState` per notebook URI, whose text is the notebook rebuilt as
nbformat JSON from the cells the client sent (`snapshot`), so the engine checks it like an
`.ipynb` file on disk: the code cells are one module (onnxlint.source.cells), and an edit in a
cell parses only that cell's blocks again. A request about a cell (pull diagnostics, code
actions, hover) is answered from the notebook's result by `cell_result` (diagnostics.py): the cell's
findings with the cell's text and version, so those handlers serve a cell as they serve a
file. Push clients get one publish per cell. The deep analysis runs a notebook's code cells as
one script (`onnxlint.deep.notebooks`): a cell with an export call has the "Analyze export"
lens (targets.py, `cell_lenses`), and the deep findings go to the cells they are in, for the
notebook's version they were computed on (`diagnostics.with_deep`).
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types
from pygls.workspace import TextDocument

from onnxlint.core.violation import Violation

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

    from onnxlint.source.cells import CellModule

# Notebooks the server syncs: Jupyter notebooks' Python cells (VS Code's notebook type).
NOTEBOOK_SYNC = types.NotebookDocumentSyncOptions(
    notebook_selector=[
        types.NotebookDocumentFilterWithCells(
            notebook="jupyter-notebook", cells=[types.NotebookCellLanguage(language="python")]
        )
    ],
    save=True,
)


@dataclass(frozen=True)
class Snapshot:
    """A notebook's cells as nbformat JSON (`source`) at the notebook's `version`."""

    source: str
    version: int | None
    cells: tuple[str, ...]  # the cells' URIs, in notebook order


def notebooks_of(ls: LanguageServer) -> dict[str, types.NotebookDocument]:
    return ls.workspace.notebook_documents  # type: ignore[no-any-return]


def is_notebook(ls: LanguageServer, uri: str) -> bool:
    return unquote(uri) in notebooks_of(ls)


def notebook_of(ls: LanguageServer, uri: str) -> str | None:
    """The URI of the notebook holding the cell `uri` (None: `uri` is no cell)."""
    if not notebooks_of(ls):
        return None
    nb = ls.workspace.get_notebook_document(cell_uri=uri)
    return nb.uri if nb is not None else None


def lens_version(ls: LanguageServer, uri: str) -> int | None:
    """The version the lenses of `uri` are computed at: a cell's notebook's (a cell's lenses
    name their export call by its line in the notebook's module), else the document's."""
    nb_uri = notebook_of(ls, uri)
    if nb_uri is not None:
        nb = notebooks_of(ls).get(nb_uri)
        return nb.version if nb is not None else None
    doc = ls.workspace.text_documents.get(uri)
    return doc.version if doc is not None else None


def cell_document(ls: LanguageServer, uri: str) -> TextDocument | None:
    doc = ls.workspace.text_documents.get(unquote(uri))
    return doc if isinstance(doc, TextDocument) else None


def _kind(cell: types.NotebookCell, doc: TextDocument | None) -> str:
    """A Python code cell is "code"; Markdown and cells of other languages are not checked."""
    python = doc is None or doc.language_id in (None, "", "python")
    return "code" if cell.kind == types.NotebookCellKind.Code and python else "markdown"


def snapshot(
    ls: LanguageServer, uri: str, replace: tuple[str, str] | None = None
) -> Snapshot | None:
    """The notebook `uri` as nbformat JSON; `replace` = (cell URI, text) checks a cell's
    edited text (a quick fix) in its notebook."""
    nb = notebooks_of(ls).get(unquote(uri))
    if nb is None:
        return None
    docs = [(cell, cell_document(ls, cell.document)) for cell in nb.cells]
    # The same cells at the same versions give the same JSON: a check asks for it when it
    # starts and again when it ends (is the result still current?).
    key = (nb.version, tuple((c.document, d.version if d else None) for c, d in docs))
    if replace is None:
        found = SNAPSHOTS.get(uri)
        if found is not None and found[0] == key:
            return found[1]
    cells = []
    for cell, doc in docs:
        text = doc.source if doc is not None else ""
        if replace is not None and unquote(cell.document) == unquote(replace[0]):
            text = replace[1]
        cells.append({"cell_type": _kind(cell, doc), "metadata": {}, "source": text})
    data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    snap = Snapshot(json.dumps(data), nb.version, tuple(c.document for c in nb.cells))
    if replace is None:
        SNAPSHOTS[uri] = (key, snap)
    return snap


# The last snapshot of each notebook, with the versions it was made from (see `snapshot`).
SNAPSHOTS: dict[str, tuple[object, Snapshot]] = {}


def module_text(ls: LanguageServer, path: str) -> str | None:
    """The code cells of the open notebook at `path` as one module (what the project model
    reads for it, as for an open file's unsaved text); None when it is not open."""
    from pygls.uris import to_fs_path

    for uri in list(notebooks_of(ls)):
        if to_fs_path(uri) == path:
            module = cell_module_of(ls, uri)
            return module.text if module is not None else None
    return None


def cell_module_of(ls: LanguageServer, nb_uri: str) -> CellModule | None:
    """The code cells of the open notebook `nb_uri` as one module (onnxlint.source.cells)."""
    from onnxlint.source.cells import cell_module
    from onnxlint.source.notebook import Cell

    nb = notebooks_of(ls).get(unquote(nb_uri))
    if nb is None:
        return None
    cells = []
    for index, cell in enumerate(nb.cells):
        doc = cell_document(ls, cell.document)
        cells.append(Cell(index, _kind(cell, doc), doc.source if doc is not None else ""))
    return cell_module(cells)


def cell_index(ls: LanguageServer, cell_uri: str) -> int | None:
    """0-based index of the cell in its notebook's cells."""
    nb = ls.workspace.get_notebook_document(cell_uri=cell_uri)
    if nb is None:
        return None
    key = unquote(cell_uri)
    return next((i for i, c in enumerate(nb.cells) if unquote(c.document) == key), None)


def cell_violations(found: list[Violation], index: int, first_code: int = 0) -> list[Violation]:
    """The findings of cell `index` as findings of a document of its own (those without a
    cell, an internal error, go to the first code cell)."""
    number = index + 1
    return [
        dataclasses.replace(v, cell=None)
        for v in found
        if v.cell == number or (v.cell is None and index == first_code)
    ]


def first_code(ls: LanguageServer, nb_uri: str) -> int:
    nb = notebooks_of(ls).get(unquote(nb_uri))
    if nb is None:
        return 0
    return next((i for i, c in enumerate(nb.cells) if c.kind == types.NotebookCellKind.Code), 0)
