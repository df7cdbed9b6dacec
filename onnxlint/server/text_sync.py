"""Document sync and diagnostics: open/change/save/close, push and pull.

Push (`textDocument/publishDiagnostics`, with the document version) for clients that do not
advertise pull diagnostics, such as Neovim 0.7; pull (`textDocument/diagnostic`) for those that
do. Never both: VS Code would show every finding twice.

Files changed outside the editor (a `git checkout`, another tool): clients that can register
file watchers (VS Code) report changes to `*.py` and `pyproject.toml`; a changed module
re-checks the open documents that read it, a changed `pyproject.toml` re-checks everything.
"""

from __future__ import annotations

import hashlib
import logging
from typing import Any

from lsprotocol import types

from onnxlint.server.app import OnnxlintServer
from onnxlint.server.session import UnknownDocument

log = logging.getLogger("onnxlint.server")


def did_open(ls: OnnxlintServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    st = ls.state(uri)
    st.result = None
    st.deep = {}
    if ls.deep is not None:  # deep findings filed while it was closed
        doc = params.text_document
        ls.deep.opened(uri, doc.text, doc.version)
    ls.schedule(uri, 0)
    if ls.deep is not None:  # the worker, started in the background for the first export
        ls.deep.warm_soon(uri)
    ls.dependency_changed(uri)  # others now read its buffer, not the file


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


def did_save(ls: OnnxlintServer, params: types.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if uri.endswith("pyproject.toml"):
        ls.recheck_all()
        return
    if uri not in ls.workspace.text_documents:
        return
    ls.schedule(uri, 0)
    if ls.deep is not None:
        ls.deep.forget_targets()  # the saved file may declare a target (or no longer)
    settings = ls.settings_for(uri)
    if settings.deep.on_save and ls.deep is not None:
        ls.deep.on_save(uri)


def did_change_watched_files(ls: OnnxlintServer, params: types.DidChangeWatchedFilesParams) -> None:
    if any(c.uri.endswith("pyproject.toml") for c in params.changes):
        ls.recheck_all()
        return
    for change in params.changes:
        if change.uri not in ls.workspace.text_documents:  # open: its buffer counts
            ls.dependency_changed(change.uri)
            if ls.deep is not None:  # deep findings about its old text are taken back
                ls.deep.closed(change.uri)


def did_close(ls: OnnxlintServer, params: types.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    st = ls.docs.pop(uri, None)
    if st is not None:
        if st.timer is not None:
            st.timer.cancel()
        for w in st.waiters:
            if not w.done():
                w.set_exception(UnknownDocument(f"the document was closed: {uri}"))
    kept = ls.deep is not None and ls.deep.closed(uri)  # its deep findings stay shown
    if not ls.pull_diagnostics and not kept:
        ls.clear(uri)
    ls.dependency_changed(uri)  # others now read the file, not its buffer


def register(server: OnnxlintServer) -> None:
    server.feature(types.TEXT_DOCUMENT_DID_OPEN)(did_open)
    server.feature(types.TEXT_DOCUMENT_DID_CHANGE)(did_change)
    server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(did_save)
    server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(did_change_watched_files)
    server.feature(types.TEXT_DOCUMENT_DID_CLOSE)(did_close)


def watch_files(ls: OnnxlintServer) -> None:
    """Ask the client to report changes to Python files and `pyproject.toml` (called once
    the session is initialized, when the client can register watchers dynamically)."""
    if not ls.supports.watch_files:
        return
    options = types.DidChangeWatchedFilesRegistrationOptions(
        watchers=[
            types.FileSystemWatcher(glob_pattern="**/*.py"),
            types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
        ]
    )
    registration = types.Registration(
        id="onnxlint-watched-files",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=options,
    )
    future = ls.client_register_capability(types.RegistrationParams([registration]))
    future.add_done_callback(_log_refusal)


def _log_refusal(future: Any) -> None:
    if future.exception() is not None:
        log.info("the client did not register the file watchers: %s", future.exception())


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
