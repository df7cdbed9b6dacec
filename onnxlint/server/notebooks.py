"""Notebook documents (LSP 3.17 notebook sync): a notebook is checked as one document, its
findings are shown, fixed and hovered per cell.

pygls keeps the notebook and its cells (each cell is a text document of the workspace).
The server keeps one `DocState` per notebook URI, whose text is the notebook rebuilt as
nbformat JSON from the cells the client sent (`snapshot`), so the engine checks it like an
`.ipynb` file on disk: the code cells are one module (onnxlint.source.cells), and an edit in a
cell parses only that cell's blocks again. A request about a cell (pull diagnostics, code
actions, hover) is answered from the notebook's result by `cell_result`: the cell's
findings with the cell's text and version, so those handlers serve a cell as they serve a
file. Push clients get one publish per cell. The deep analysis is not offered in
notebooks: its targets live in `.py` files.
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
    from onnxlint.server.server import OnnxlintServer, Result

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


def _notebooks(ls: OnnxlintServer) -> dict[str, types.NotebookDocument]:
    return ls.workspace.notebook_documents  # type: ignore[no-any-return]


def is_notebook(ls: OnnxlintServer, uri: str) -> bool:
    return unquote(uri) in _notebooks(ls)


def notebook_of(ls: OnnxlintServer, uri: str) -> str | None:
    """The URI of the notebook holding the cell `uri` (None: `uri` is no cell)."""
    if not _notebooks(ls):
        return None
    nb = ls.workspace.get_notebook_document(cell_uri=uri)
    return nb.uri if nb is not None else None


def cell_document(ls: OnnxlintServer, uri: str) -> TextDocument | None:
    doc = ls.workspace.text_documents.get(unquote(uri))
    return doc if isinstance(doc, TextDocument) else None


def _kind(cell: types.NotebookCell, doc: TextDocument | None) -> str:
    """A Python code cell is "code"; Markdown and cells of other languages are not checked."""
    python = doc is None or doc.language_id in (None, "", "python")
    return "code" if cell.kind == types.NotebookCellKind.Code and python else "markdown"


def snapshot(
    ls: OnnxlintServer, uri: str, replace: tuple[str, str] | None = None
) -> Snapshot | None:
    """The notebook `uri` as nbformat JSON; `replace` = (cell URI, text) checks a cell's
    edited text (a quick fix) in its notebook."""
    nb = _notebooks(ls).get(unquote(uri))
    if nb is None:
        return None
    docs = [(cell, cell_document(ls, cell.document)) for cell in nb.cells]
    # The same cells at the same versions give the same JSON: a check asks for it when it
    # starts and again when it ends (is the result still current?).
    key = (nb.version, tuple((c.document, d.version if d else None) for c, d in docs))
    if replace is None:
        found = _SNAPSHOTS.get(uri)
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
        _SNAPSHOTS[uri] = (key, snap)
    return snap


# The last snapshot of each notebook, with the versions it was made from (see `snapshot`).
_SNAPSHOTS: dict[str, tuple[object, Snapshot]] = {}


def module_text(ls: OnnxlintServer, path: str) -> str | None:
    """The code cells of the open notebook at `path` as one module (what the project model
    reads for it, as for an open file's unsaved text); None when it is not open."""
    from pygls.uris import to_fs_path

    from onnxlint.source.cells import cell_module
    from onnxlint.source.notebook import Cell

    for uri, nb in list(_notebooks(ls).items()):
        if to_fs_path(uri) != path:
            continue
        cells = []
        for index, cell in enumerate(nb.cells):
            doc = cell_document(ls, cell.document)
            cells.append(Cell(index, _kind(cell, doc), doc.source if doc is not None else ""))
        return cell_module(cells).text
    return None


def cell_index(ls: OnnxlintServer, cell_uri: str) -> int | None:
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


def _first_code(ls: OnnxlintServer, nb_uri: str) -> int:
    nb = _notebooks(ls).get(unquote(nb_uri))
    if nb is None:
        return 0
    return next((i for i, c in enumerate(nb.cells) if c.kind == types.NotebookCellKind.Code), 0)


def cell_result(ls: OnnxlintServer, cell_uri: str, nb_uri: str, res: Result) -> Result:
    """The notebook's result `res` seen from one cell: its findings, text and version."""
    doc = cell_document(ls, cell_uri)
    index = cell_index(ls, cell_uri)
    if doc is None or index is None:
        return dataclasses.replace(res, version=None, text="", violations=[], stale=False)
    found = cell_violations(res.violations, index, _first_code(ls, nb_uri))
    return dataclasses.replace(
        res, version=doc.version, text=doc.source, violations=found, stale=False
    )


def check_cell_text(ls: OnnxlintServer, cell_uri: str, text: str) -> list[Violation]:
    """On the engine thread: the findings of cell `cell_uri` if its text were `text`."""
    nb_uri = notebook_of(ls, cell_uri)
    index = cell_index(ls, cell_uri)
    if nb_uri is None or index is None:
        return []
    snap = snapshot(ls, nb_uri, (cell_uri, text))
    if snap is None:
        return []
    config, _, _ = ls.config_for(nb_uri)
    found = ls.engine.check(ls.path_of(nb_uri), snap.source, config)
    return cell_violations(found, index, _first_code(ls, nb_uri))


def publish_cells(ls: OnnxlintServer, nb_uri: str, res: Result | None, enabled: bool) -> None:
    """Push each cell's diagnostics whose findings or version changed since the last push
    (an empty list for a cell whose findings went away)."""
    from onnxlint.server.convert import diagnostic, sort_key

    nb = _notebooks(ls).get(unquote(nb_uri))
    st = ls.docs.get(nb_uri)
    if nb is None or st is None:
        return
    settings = ls.settings_for(nb_uri)
    first = _first_code(ls, nb_uri)
    by_cell: dict[int, list[Violation]] = {}
    if res is not None and enabled:
        for v in res.violations:
            index = v.cell - 1 if v.cell is not None else first
            by_cell.setdefault(index, []).append(dataclasses.replace(v, cell=None))
    published = st.cells_published
    for index, cell in enumerate(nb.cells):
        doc = cell_document(ls, cell.document)
        version = doc.version if doc is not None else None
        found = by_cell.get(index, [])
        if published.get(cell.document) == (version, found):
            continue
        diags: list[types.Diagnostic] = []
        if found and doc is not None:
            lines = ls.lines(doc.source)
            diags = sorted(
                (diagnostic(v, lines, settings.severity_for(v.code)) for v in found), key=sort_key
            )
        published[cell.document] = (version, found)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=cell.document, diagnostics=diags, version=version)
        )


def register(server: OnnxlintServer) -> None:
    @server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
    def did_open(ls: OnnxlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        st = ls.state(uri)
        st.result = None
        ls.schedule(uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
    def did_change(ls: OnnxlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
        uri = params.notebook_document.uri
        if not is_notebook(ls, uri):
            return
        structure = params.change.cells.structure if params.change.cells else None
        if structure is not None and not ls.pull_diagnostics:
            for closed in structure.did_close or []:  # a deleted cell keeps no squiggles
                ls.clear(closed.uri)
        ls.schedule(uri)
        # Other open files read it (a model file the notebook exports with dynamic dims):
        # tell the project model, and check those again.
        ls.dependency_changed(uri)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
    def did_save(ls: OnnxlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
        if is_notebook(ls, params.notebook_document.uri):
            ls.schedule(params.notebook_document.uri, 0)

    @server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
    def did_close(ls: OnnxlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
        from onnxlint.server.server import UnknownDocument

        uri = params.notebook_document.uri
        _SNAPSHOTS.pop(uri, None)
        st = ls.docs.pop(uri, None)
        if st is not None:
            if st.timer is not None:
                st.timer.cancel()
            for w in st.waiters:  # requests waiting for a result get an answer
                if not w.done():
                    w.set_exception(UnknownDocument(f"the notebook was closed: {uri}"))
        for cell in params.cell_text_documents:
            ls.docs.pop(cell.uri, None)  # the fix caches code actions kept per cell
            if not ls.pull_diagnostics:
                ls.clear(cell.uri)
