"""Document sync and diagnostics: open/change/save/close, push and pull.

Push (`textDocument/publishDiagnostics`, with the document version) for clients that do not
advertise pull diagnostics, such as Neovim 0.7; pull (`textDocument/diagnostic`) for those that
do. Never both: VS Code would show every finding twice.
"""

from __future__ import annotations

import hashlib
import logging

from lsprotocol import types

from onnxlint.server.server import OnnxlintServer, UnknownDocument

log = logging.getLogger("onnxlint.server")


def register(server: OnnxlintServer) -> None:
    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: OnnxlintServer, params: types.DidOpenTextDocumentParams) -> None:
        uri = params.text_document.uri
        st = ls.state(uri)
        st.result = None
        st.deep = {}
        ls.schedule(uri, 0)
        ls.dependency_changed(uri)  # others now read its buffer, not the file

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: OnnxlintServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri not in ls.workspace.text_documents:
            return
        st = ls.state(uri)
        if st.deep:
            st.deep = {}  # the deep findings were about the old text
            st.deep_version = None
        ls.schedule(uri)
        ls.dependency_changed(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: OnnxlintServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        if uri.endswith("pyproject.toml"):
            ls.recheck_all()
            return
        if uri not in ls.workspace.text_documents:
            return
        ls.schedule(uri, 0)
        settings = ls.settings_for(uri)
        if settings.deep.on_save and ls.deep is not None:
            ls.deep.on_save(uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: OnnxlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        st = ls.docs.pop(uri, None)
        if st is not None:
            if st.timer is not None:
                st.timer.cancel()
            for w in st.waiters:
                if not w.done():
                    w.set_exception(UnknownDocument(f"the document was closed: {uri}"))
        if not ls.pull_diagnostics:
            ls.clear(uri)
        ls.dependency_changed(uri)  # others now read the file, not its buffer


async def pull_diagnostics(
    ls: OnnxlintServer, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport:
    uri = params.text_document.uri
    res = await ls.current(uri)
    items: list[types.Diagnostic] = []
    if ls.settings_for(uri).enable:
        _, items = ls.merged(uri)
    digest = hashlib.sha1(repr((res.version, items)).encode("utf-8")).hexdigest()[:16]
    result_id = f"{res.version}-{digest}"
    if params.previous_result_id == result_id:
        return types.RelatedUnchangedDocumentDiagnosticReport(result_id=result_id)
    return types.RelatedFullDocumentDiagnosticReport(items=items, result_id=result_id)


def enable_pull(server: OnnxlintServer) -> None:
    """Register `textDocument/diagnostic` (called from initialize, before capabilities)."""
    server.pull_diagnostics = True
    server.feature(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DiagnosticOptions(
            identifier="onnxlint", inter_file_dependencies=False, workspace_diagnostics=False
        ),
    )(pull_diagnostics)
