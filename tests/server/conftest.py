"""A real LSP client (pytest-lsp) talking to `python -m onnxlint server` over stdio.

`lsp` is a started but not yet initialized client; `start(lsp, editor, ...)` initializes it with
the capabilities a real editor sends (VS Code 1.65, Neovim 0.7 / 0.11 from pytest-lsp) and
the settings under test; `shared` is one initialized VS Code-like session per test module
(each test module runs in one event loop: `pytest.mark.asyncio(loop_scope="module")`). The
client records every publish (with its version) and applies `workspace/applyEdit` to its own
copy of each document, like an editor.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest_lsp
from lsprotocol import types
from pygls.uris import from_fs_path
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features
from pytest_lsp.protocol import LanguageClientProtocol

SERVER = [sys.executable, "-m", "onnxlint", "server"]
if os.environ.get("ONNXLINT_TEST_SERVER_LOG"):  # to see what a flaky test's server did
    SERVER += ["--log-level", "debug", "--log-file", os.environ["ONNXLINT_TEST_SERVER_LOG"]]
EDITORS = {
    "vscode": "visual_studio_code",
    "neovim": "neovim@v0.7.0",
    "neovim11": "neovim@v0.11.0",
}


class Client(LanguageClient):
    """pytest-lsp's client plus a log of publishes and a text mirror for applied edits."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.publishes: list[types.PublishDiagnosticsParams] = []
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}
        self.applied: list[types.ApplyWorkspaceEditParams] = []
        self.notifications: list[tuple[str, Any]] = []
        self.registrations: list[types.Registration] = []  # client/registerCapability


def _publish(client: Client, params: types.PublishDiagnosticsParams) -> None:
    client.publishes.append(params)
    client.diagnostics[params.uri] = params.diagnostics


def _apply_edit(client: Client, params: types.ApplyWorkspaceEditParams) -> Any:
    client.applied.append(params)
    apply_workspace_edit(client, params.edit)
    return types.ApplyWorkspaceEditResult(applied=True)


def _analysis_state(client: Client, params: Any) -> None:
    client.notifications.append(("onnxlint/analysisState", params))


def _code_lens_refresh(client: Client, params: Any) -> None:
    client.notifications.append((types.WORKSPACE_CODE_LENS_REFRESH, params))


def _diagnostic_refresh(client: Client, params: Any) -> None:
    client.notifications.append((types.WORKSPACE_DIAGNOSTIC_REFRESH, params))


def _register_capability(client: Client, params: types.RegistrationParams) -> None:
    client.registrations.extend(params.registrations)


def make_client() -> Client:
    from pygls.protocol import default_converter

    client = Client(converter_factory=default_converter, protocol_cls=LanguageClientProtocol)
    features = dict(DEFAULT_CLIENT_FEATURES)
    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = _publish
    features[types.WORKSPACE_APPLY_EDIT] = _apply_edit
    features["onnxlint/analysisState"] = _analysis_state
    features[types.CLIENT_REGISTER_CAPABILITY] = _register_capability
    features[types.WORKSPACE_CODE_LENS_REFRESH] = _code_lens_refresh
    features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = _diagnostic_refresh
    register_lsp_features(client, features)
    return client


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=SERVER, client_factory=make_client),
    loop_scope="module",
)
async def lsp(lsp_client: Client):  # type: ignore[no-untyped-def]
    yield
    # a test that killed the server has already failed or passed
    with contextlib.suppress(Exception):
        await asyncio.wait_for(lsp_client.shutdown_session(), 10)


# ---------------------------------------------------------------------------- session helpers


def uri_of(path: Path | str) -> str:
    uri = from_fs_path(str(path))
    assert uri is not None
    return uri


async def start(
    client: Client,
    editor: str = "vscode",
    settings: dict[str, Any] | list[dict[str, Any]] | None = None,
    *,
    trusted: bool = True,
    folders: list[Path] | None = None,
    client_commands: list[str] | None = None,
    capabilities: types.ClientCapabilities | None = None,
    configuration: dict[str, Any] | None = None,
) -> types.InitializeResult:
    caps = capabilities or client_capabilities(EDITORS.get(editor, editor))
    if isinstance(settings, list):
        sent: Any = settings
    else:
        sent = {"debounceMs": 0, **(settings or {})}
    init = {
        "settings": sent,
        "globalSettings": {"debounceMs": 0},
        "clientCommands": client_commands or [],
        "trusted": trusted,
    }
    if configuration is not None:
        for scope, value in configuration.items():
            client.set_configuration(value, section="onnxlint", scope_uri=scope)
    wf = [types.WorkspaceFolder(uri=uri_of(f), name=f.name) for f in folders or []]
    return await client.initialize_session(
        types.InitializeParams(
            capabilities=caps,
            initialization_options=init,
            workspace_folders=wf or None,
            root_uri=wf[0].uri if wf else None,
        )
    )


def open_doc(client: Client, uri: str, text: str, version: int = 1) -> None:
    client.texts[uri] = text
    client.versions[uri] = version
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=version, text=text
            )
        )
    )


def change_doc(client: Client, uri: str, new_text: str) -> int:
    """Replace the whole text with one incremental change (the range is the old text)."""
    old = client.texts[uri]
    end = position_at(old, len(old))
    return change_range(client, uri, types.Range(types.Position(0, 0), end), new_text)


def change_range(client: Client, uri: str, rng: types.Range, text: str) -> int:
    client.texts[uri] = apply_text_edits(client.texts[uri], [types.TextEdit(rng, text)])
    client.versions[uri] += 1
    client.text_document_did_change(
        types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(
                uri=uri, version=client.versions[uri]
            ),
            content_changes=[types.TextDocumentContentChangePartial(range=rng, text=text)],
        )
    )
    return client.versions[uri]


async def wait_for(predicate: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.01)
    raise AssertionError(f"timed out waiting for {what or predicate}")


async def diagnostics_for(
    client: Client, uri: str, version: int | None = None, timeout: float = 15.0, after: int = 0
) -> list[types.Diagnostic]:
    """The diagnostics of the first publish for `uri` (at `version`) after index `after`."""

    def found() -> types.PublishDiagnosticsParams | None:
        for p in client.publishes[after:]:
            if p.uri == uri and (version is None or p.version == version):
                return p
        return None

    p = await wait_for(found, timeout, f"diagnostics for {uri} v{version}")
    return list(p.diagnostics)


async def open_checked(
    client: Client, uri: str, text: str, version: int = 1
) -> list[types.Diagnostic]:
    """Open a document and wait for its first check's diagnostics."""
    open_doc(client, uri, text, version)
    return await diagnostics_for(client, uri, version)


async def code_actions(
    client: Client, uri: str, diag: types.Diagnostic, only: list[str] | None = None
) -> list[types.CodeAction | types.Command]:
    """The code actions over a diagnostic, as the editor asks for them (Ctrl+. on it)."""
    got = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag], only=only),
        )
    )
    return list(got or [])


def action_entry(
    action: types.CodeAction | types.Command,
) -> tuple[str, str | None, dict[str, Any]]:
    """(title, kind, command) of a code action, the command as a plain dict. lsprotocol's client
    side reads a CodeAction that carries a command (and no edit) as a Command whose `command` is
    the nested object's repr (kind: a quick fix); VS Code's client reads it as the CodeAction it
    is."""
    if isinstance(action, types.CodeAction):
        cmd = action.command
        plain = {"command": cmd.command, "arguments": cmd.arguments} if cmd is not None else {}
        return action.title, str(action.kind) if action.kind else None, plain
    try:
        nested = ast.literal_eval(action.command)
    except (ValueError, SyntaxError):
        nested = {"command": action.command, "arguments": action.arguments}
    return action.title, "quickfix", nested if isinstance(nested, dict) else {}


async def analyze_export(
    client: Client, arguments: list[Any], timeout: float = 600
) -> dict[str, Any]:
    """Run the `onnxlint.analyzeExport` command (what a lens runs) and return its answer."""
    out = await asyncio.wait_for(
        client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="onnxlint.analyzeExport", arguments=arguments)
        ),
        timeout,
    )
    assert isinstance(out, dict), out
    return out


# ---------------------------------------------------------------------------- text edits (UTF-16)


def _offset(text: str, pos: types.Position) -> int:
    lines = text.splitlines(keepends=True)
    if pos.line >= len(lines):
        return len(text)
    start = sum(len(line) for line in lines[: pos.line])
    line = lines[pos.line]
    units = 0
    for i, ch in enumerate(line):
        if units >= pos.character:
            return start + i
        units += 2 if ord(ch) > 0xFFFF else 1
    return start + len(line.rstrip("\r\n")) if pos.character >= units else start + len(line)


def position_at(text: str, offset: int) -> types.Position:
    before = text[:offset]
    line = before.count("\n")
    col_text = before[before.rfind("\n") + 1 :]
    return types.Position(line, sum(2 if ord(c) > 0xFFFF else 1 for c in col_text))


def apply_text_edits(text: str, edits: list[types.TextEdit]) -> str:
    spans = sorted(
        ((_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text


def apply_workspace_edit(client: Client, edit: types.WorkspaceEdit) -> None:
    if edit.document_changes:
        for dc in edit.document_changes:
            assert isinstance(dc, types.TextDocumentEdit)
            uri = dc.text_document.uri
            if dc.text_document.version is not None:
                assert dc.text_document.version == client.versions[uri], "edit for an old version"
            client.texts[uri] = apply_text_edits(client.texts[uri], list(dc.edits))  # type: ignore[arg-type]
    for uri, edits in (edit.changes or {}).items():
        client.texts[uri] = apply_text_edits(client.texts[uri], list(edits))


async def apply_and_sync(client: Client, uri: str, edit: types.WorkspaceEdit) -> int:
    """Apply a server's edit like an editor: change the buffer and send didChange."""
    before = client.texts[uri]
    apply_workspace_edit(client, edit)
    after = client.texts[uri]
    client.texts[uri] = before
    return change_doc(client, uri, after)


@pytest_lsp.fixture(
    scope="module",
    config=ClientServerConfig(server_command=SERVER, client_factory=make_client),
)
async def shared(lsp_client: Client):  # type: ignore[no-untyped-def]
    """One VS Code-like session for a whole module (tests use their own documents)."""
    await start(lsp_client, "vscode")
    yield
    with contextlib.suppress(Exception):
        await asyncio.wait_for(lsp_client.shutdown_session(), 10)
