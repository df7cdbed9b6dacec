"""The wire: onnxlint's command and notification names (defined once), what the client
supports (`ClientSupport`, read once from its capabilities at initialize), and the JSON-RPC
layer, made strict about bad input: every broken message gets an LSP error.

pygls logs a message it cannot parse or structure and moves on; a client that sent a
request then waits forever. Here:

- a body that is not JSON gets a ParseError (-32700) response with `id: null`;
- a JSON value that is not a JSON-RPC 2.0 message gets InvalidRequest (-32600);
- a request whose params do not fit the method gets InvalidParams (-32602) for its id;
- a request after `shutdown` gets InvalidRequest instead of silence.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.protocol import LanguageServerProtocol

log = logging.getLogger("onnxlint.server")


@dataclass(frozen=True)
class ClientSupport:
    """What the client can do, read once from its capabilities at `initialize`: the
    features ask `Session.supports`, never the nested `ClientCapabilities` themselves."""

    pull_diagnostics: bool = False  # textDocument/diagnostic (else publishDiagnostics)
    diagnostic_refresh: bool = False  # workspace/diagnostic/refresh
    code_lens_refresh: bool = False  # workspace/codeLens/refresh
    configuration: bool = False  # workspace/configuration
    show_document: bool = False  # window/showDocument
    work_done_progress: bool = False  # window/workDoneProgress/create
    watch_files: bool = False  # workspace/didChangeWatchedFiles, registered by the server
    document_changes: bool = False  # versioned TextDocumentEdits in a WorkspaceEdit
    resolve_code_action_edit: bool = False  # codeAction/resolve may fill in the edit
    create_files: bool = False  # a WorkspaceEdit may create a file (resourceOperations)

    @classmethod
    def of(cls, caps: types.ClientCapabilities) -> ClientSupport:
        td, ws, win = caps.text_document, caps.workspace, caps.window
        action = td.code_action if td else None
        watched = ws.did_change_watched_files if ws else None
        resolve = action.resolve_support if action else None
        return cls(
            pull_diagnostics=td is not None and td.diagnostic is not None,
            diagnostic_refresh=bool(ws and ws.diagnostics and ws.diagnostics.refresh_support),
            code_lens_refresh=bool(ws and ws.code_lens and ws.code_lens.refresh_support),
            configuration=bool(ws and ws.configuration),
            show_document=bool(win and win.show_document and win.show_document.support),
            work_done_progress=bool(win and win.work_done_progress),
            watch_files=bool(watched and watched.dynamic_registration),
            document_changes=bool(ws and ws.workspace_edit and ws.workspace_edit.document_changes),
            resolve_code_action_edit=bool(resolve and "edit" in resolve.properties),
            create_files=bool(
                ws
                and ws.workspace_edit
                and ws.workspace_edit.document_changes
                and types.ResourceOperationKind.Create
                in (ws.workspace_edit.resource_operations or ())
            ),
        )


# workspace/executeCommand commands the server handles (the extension's package.json too).
ANALYZE_EXPORT = "onnxlint.analyzeExport"
CREATE_TARGET = "onnxlint.createTarget"
FIX_ALL = "onnxlint.fixAll"
RESTART = "onnxlint.restart"
SHOW_REPORT = "onnxlint.showReport"
SET_SCRIPT_ARGUMENTS = "onnxlint.setScriptArguments"
SHOW_DOCUMENTATION = "onnxlint.showDocumentation"
COMMANDS = (
    ANALYZE_EXPORT,
    CREATE_TARGET,
    FIX_ALL,
    RESTART,
    SHOW_REPORT,
    SET_SCRIPT_ARGUMENTS,
    SHOW_DOCUMENTATION,
)
# A client-side command: when the client has it, it shows an analysis's result itself.
SHOW_RESULT = "onnxlint.showAnalysisResult"
# The notification that an analysis started or finished.
ANALYSIS_STATE = "onnxlint/analysisState"

PARSE_ERROR = -32700
INVALID_REQUEST = -32600


class _Answered:
    """A message that already got its error response."""

    jsonrpc = "answered"


class OnnxlintProtocol(LanguageServerProtocol):
    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                log.warning("invalid params for %r (id %r)", data.get("method"), data.get("id"))
                self._send_response(data["id"], error=exc.to_response_error())
                return _Answered()
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Answered):
            return
        if not hasattr(message, "jsonrpc"):
            msg_id = message.get("id") if isinstance(message, dict) else None
            log.warning("not a JSON-RPC 2.0 message: %.200r", message)
            self.send_error(msg_id, INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message")
            return
        if (
            self._shutdown
            and getattr(message, "method", "") != types.EXIT
            and hasattr(message, "id")
            and hasattr(message, "method")
        ):
            self.send_error(message.id, INVALID_REQUEST, "the server is shutting down")
            return
        super().handle_message(message)

    def _handle_notification(self, method_name: str, params: Any) -> None:
        # pygls 2.1 files the future of a generator notification handler (its built-in
        # didOpen/didChange/didClose) under a fresh id in `_request_futures` and never
        # removes it: one leaked Future per keystroke. Drop them once they are done.
        before = set(self._request_futures)
        super()._handle_notification(method_name, params)
        for key in set(self._request_futures) - before:
            fut = self._request_futures.get(key)
            if fut is None:
                continue
            if fut.done():
                self._request_futures.pop(key, None)
            else:
                fut.add_done_callback(self._forget(key))

    def _forget(self, key: Any) -> Any:
        def done(_fut: Any) -> None:
            self._request_futures.pop(key, None)

        return done

    def send_error(self, msg_id: Any, code: int, message: str) -> None:
        if not isinstance(msg_id, (int, str)):
            msg_id = None
        self._send_response(msg_id, error=types.ResponseError(code=code, message=message))

    def answer_parse_error(self, error: Exception) -> None:
        if isinstance(error, json.JSONDecodeError):
            self.send_error(None, PARSE_ERROR, f"Parse error: {error}")
