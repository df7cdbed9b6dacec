"""Notebook documents: the handlers of LSP 3.17 notebook sync (open, change, save, close).

The notebook document model (a notebook checked as one module, its findings per cell) is in
documents.py; what is published per cell, in diagnostics.py.
"""

from __future__ import annotations

from lsprotocol import types

from onnxlint.server import documents
from onnxlint.server.app import OnnxlintServer
from onnxlint.server.session import UnknownDocument


def did_open(ls: OnnxlintServer, params: types.DidOpenNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    st = ls.state(uri)
    st.result = None
    ls.schedule(uri, 0)


def did_change(ls: OnnxlintServer, params: types.DidChangeNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    if not documents.is_notebook(ls, uri):
        return
    structure = params.change.cells.structure if params.change.cells else None
    if structure is not None and not ls.pull_diagnostics:
        for closed in structure.did_close or []:  # a deleted cell keeps no squiggles
            ls.clear(closed.uri)
    ls.schedule(uri)
    # Other open files read it (a model file the notebook exports with dynamic dims):
    # tell the project model, and check those again.
    ls.dependency_changed(uri)


def did_save(ls: OnnxlintServer, params: types.DidSaveNotebookDocumentParams) -> None:
    if documents.is_notebook(ls, params.notebook_document.uri):
        ls.schedule(params.notebook_document.uri, 0)


def did_close(ls: OnnxlintServer, params: types.DidCloseNotebookDocumentParams) -> None:
    uri = params.notebook_document.uri
    documents.SNAPSHOTS.pop(uri, None)
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


def register(server: OnnxlintServer) -> None:
    server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)(did_save)
    server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)(did_close)
