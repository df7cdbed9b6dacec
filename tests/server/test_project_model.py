"""The project model in the language server: a model file opened alone knows the export
script elsewhere that exports it, and follows it as it is edited."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, change_doc, open_doc, start, uri_of, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

MODEL = """import torch
from torch import nn


class Head(nn.Module):
    def forward(self, heat):
        n = int(heat.shape[0])
        return heat.view(n, -1)
"""
EXPORT = """import torch

from models.head import Head

torch.onnx.export(
    Head().eval(), (torch.ones(2, 3),), "h.onnx", dynamic_shapes={"heat": {0: "batch"}}
)
"""


def _project(root: Path) -> tuple[str, str]:
    (root / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (root / "models").mkdir()
    (root / "models" / "__init__.py").write_text("")
    (root / "models" / "head.py").write_text(MODEL)
    (root / "tools").mkdir()
    (root / "tools" / "export.py").write_text(EXPORT)
    return uri_of(root / "models" / "head.py"), uri_of(root / "tools" / "export.py")


def _frozen(client: Client, uri: str) -> list[str]:
    """OLX104 messages in the newest publish for `uri`."""
    for p in reversed(client.publishes):
        if p.uri == uri:
            return [str(d.message) for d in p.diagnostics if d.code == "OLX104"]
    return []


async def test_editing_the_export_script_changes_the_open_model_files_findings(
    lsp: Client, tmp_path: Path
) -> None:
    await start(lsp, "neovim", folders=[tmp_path])
    model, export = _project(tmp_path)
    open_doc(lsp, model, MODEL)
    # The project model is built after the first diagnostics; then the batch is known dynamic.
    # (Before it, the file alone: no export reaches the batch, said as such.)
    found = await wait_for(
        lambda: [m for m in _frozen(lsp, model) if "declares dynamic" in m],
        what="OLX104 from tools/export.py",
    )
    assert "which tools/export.py:5 declares dynamic" in found[0]
    # The export script, opened and edited (unsaved): no dynamic dims any more.
    open_doc(lsp, export, EXPORT)
    change_doc(lsp, export, EXPORT.replace(', dynamic_shapes={"heat": {0: "batch"}}', ""))
    await wait_for(lambda: not _frozen(lsp, model), what="OLX104 gone from the model file")
    # And back.
    change_doc(lsp, export, EXPORT)
    await wait_for(lambda: _frozen(lsp, model), what="OLX104 back in the model file")


async def test_hover_on_a_model_class_lists_the_exports_that_reach_it(
    lsp: Client, tmp_path: Path
) -> None:
    await start(lsp, "neovim", folders=[tmp_path])
    model, _ = _project(tmp_path)
    open_doc(lsp, model, MODEL)
    await wait_for(lambda: _frozen(lsp, model), what="the project model")

    async def hover(line: int, character: int) -> str:
        result = await lsp.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(model),
                position=types.Position(line, character),
            )
        )
        assert result is not None
        assert isinstance(result.contents, types.MarkupContent)
        return result.contents.value

    on_class = await hover(4, 8)
    assert "exported by 1 export" in on_class and "`tools/export.py:5`" in on_class
    assert "dynamo exporter, dynamic: batch" in on_class
    on_forward = await hover(5, 9)
    assert "`Head.forward`" in on_forward


UTILS = """import torch


def count(x):
    if x.sum().item() > 0:
        return x * 2
    return x
"""
HEAD = """import torch

from .utils import count


class Head(torch.nn.Module):
    def forward(self, x):
        return count(x)
"""


def _codes(client: Client, uri: str, code: str) -> list[int]:
    for p in reversed(client.publishes):
        if p.uri == uri:
            return [d.range.start.line for d in p.diagnostics if d.code == code]
    return []


async def test_a_helper_is_judged_while_another_files_forward_calls_it(
    lsp: Client, tmp_path: Path
) -> None:
    await start(lsp, "neovim", folders=[tmp_path])
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "utils.py").write_text(UTILS)
    (tmp_path / "pkg" / "head.py").write_text(HEAD)
    utils, head = uri_of(tmp_path / "pkg" / "utils.py"), uri_of(tmp_path / "pkg" / "head.py")
    open_doc(lsp, utils, UTILS)
    # Once the project is scanned, `count` is forward code: Head.forward calls it.
    await wait_for(lambda: _codes(lsp, utils, "OLX102") == [4], what="OLX102 in utils.py")
    # head.py, opened and edited (unsaved), stops calling it: not forward code any more.
    open_doc(lsp, head, HEAD)
    change_doc(lsp, head, HEAD.replace("return count(x)", "return x"))
    await wait_for(lambda: not _codes(lsp, utils, "OLX102"), what="OLX102 gone from utils.py")


async def test_files_of_two_projects_open_at_once_settle(lsp: Client, tmp_path: Path) -> None:
    """The project model holds one project at a time. With a file of each of two projects
    open, building one project's model used to check every open file again, whose check
    asked for the other project's model, whose build checked them all again, and so on:
    the server never went idle and a pull client got hundreds of refreshes a second."""
    import asyncio

    from pytest_lsp import client_capabilities

    caps = client_capabilities("neovim@v0.11.0")  # pull diagnostics
    assert caps.workspace is not None
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    await start(lsp, capabilities=caps, folders=[tmp_path])
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    heads = [_project(tmp_path / name)[0] for name in ("one", "two")]
    for uri in heads:
        open_doc(lsp, uri, MODEL)
    for _ in range(2):  # pull both, then again once their project models are built
        for uri in heads:
            await lsp.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            )
        await asyncio.sleep(1.5)
    before = len(lsp.notifications)
    await asyncio.sleep(2.0)
    new = lsp.notifications[before:]
    refreshes = [n for n in new if n[0] == types.WORKSPACE_DIAGNOSTIC_REFRESH]
    assert len(refreshes) <= 2, f"{len(refreshes)} refreshes in 2 s with nothing edited"
