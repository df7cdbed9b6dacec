"""A VS Code start, as vscode-languageclient makes it: initialize with the settings, then
`initialized`, `didOpen` and the pull of the file's diagnostics at once, while the server
asks for the same settings with workspace/configuration. Settings that did not change must
not check the file again nor send workspace/diagnostic/refresh (VS Code then cancels the
first pull and asks again: a round trip and a check more before the first squiggles)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities

from tests.server.conftest import Client, open_doc, uri_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

SOURCE = "import torch\n\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=False)\n"


def _caps() -> types.ClientCapabilities:
    caps = client_capabilities("neovim@v0.11.0")  # pull diagnostics, workspace/configuration
    assert caps.workspace is not None
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    caps.workspace.configuration = True
    return caps


async def _start(lsp: Client, folder: Path, init_settings: dict[str, object]) -> None:
    settings = {"debounceMs": 0, "ignore": ["OLX402"]}
    # What VS Code answers: the same object for the global scope and for the folder.
    lsp.set_configuration(settings, section="onnxlint")
    lsp.set_configuration(settings, section="onnxlint", scope_uri=uri_of(folder))
    await lsp.initialize_session(
        types.InitializeParams(
            capabilities=_caps(),
            initialization_options={
                "settings": init_settings,
                "globalSettings": init_settings,
                "clientCommands": [],
                "trusted": True,
            },
            workspace_folders=[types.WorkspaceFolder(uri=uri_of(folder), name=folder.name)],
            root_uri=uri_of(folder),
        )
    )


async def _first_pull(lsp: Client, uri: str) -> list[types.Diagnostic]:
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    return list(report.items)


def _refreshes(lsp: Client) -> int:
    return sum(n[0] == types.WORKSPACE_DIAGNOSTIC_REFRESH for n in lsp.notifications)


async def test_unchanged_settings_send_no_refresh(lsp: Client, tmp_path: Path) -> None:
    await _start(lsp, tmp_path, {"debounceMs": 0, "ignore": ["OLX402"]})
    uri = uri_of(tmp_path / "export.py")
    (tmp_path / "export.py").write_text(SOURCE)
    open_doc(lsp, uri, SOURCE)
    items = await _first_pull(lsp, uri)
    assert any(str(d.code) == "OLX401" for d in items)
    await asyncio.sleep(1.0)  # the configuration answer has long been applied
    assert _refreshes(lsp) == 0, "a refresh although the settings did not change"


async def test_changed_settings_still_refresh(lsp: Client, tmp_path: Path) -> None:
    """The other side: workspace/configuration says something initialize did not (here
    OLX402 is ignored only there): the open file is checked again and the client told."""
    await _start(lsp, tmp_path, {"debounceMs": 0})
    uri = uri_of(tmp_path / "export.py")
    (tmp_path / "export.py").write_text(SOURCE)
    open_doc(lsp, uri, SOURCE)
    await _first_pull(lsp, uri)
    deadline = asyncio.get_running_loop().time() + 10
    while _refreshes(lsp) == 0 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert _refreshes(lsp) >= 1
