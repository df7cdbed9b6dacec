"""Issue 27, item 7: the quick-fix menu (Ctrl+.) over a finding has the fix with a title that
says everything it changes, "Show documentation for OLXnnn" (the rule's page, opened in the
browser through window/showDocument) and "Fix all auto-fixable problems"."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, action_entry, code_actions, open_checked, start, uri_of

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEGACY = """import torch

torch.onnx.dynamo_export(model, x)
torch.onnx.export(model, (x,), "m.onnx", dynamo=False, do_constant_folding=True)
"""


async def test_the_quick_fix_menu_has_the_full_fix_title_the_rule_page_and_fix_all(
    lsp: Client, tmp_path: Path
) -> None:
    await start(lsp, "vscode")
    uri = uri_of(tmp_path / "m.py")
    (legacy,) = [d for d in await open_checked(lsp, uri, LEGACY) if d.code == "OLX401"]
    entries = [action_entry(a) for a in await code_actions(lsp, uri, legacy, ["quickfix"])]
    titles = [t for t, _, _ in entries]
    # the fix says both of its changes, not only the first
    assert (
        "onnxlint (OLX401): Switch to the dynamo exporter (`dynamo=True`) and remove "
        "`do_constant_folding`, which it ignores (unsafe: may change behaviour)"
    ) in titles, titles
    docs = [e for e in entries if e[0] == "onnxlint (OLX401): Show documentation for OLX401"]
    assert len(docs) == 1, titles
    assert docs[0][2]["command"] == "onnxlint.showDocumentation"
    url = "https://onnxlint.github.io/onnxlint/rules/OLX401/"
    assert docs[0][2]["arguments"] == [url]
    # fix all, as the menu's last entry, a quick fix (not only a source action)
    assert titles[-1] == "onnxlint: Fix all auto-fixable problems (safe fixes)", titles
    assert all(kind == "quickfix" for _, kind, _ in entries), entries

    # the command opens the page outside the editor
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showDocumentation", arguments=[url])
    )
    assert out == {"url": url, "shown": True}
    assert lsp.shown_documents[-1].uri == url and lsp.shown_documents[-1].external


async def test_every_fix_title_says_all_it_changes(lsp: Client, tmp_path: Path) -> None:
    """OLX402's fix rewrites the whole call (the inputs into one tuple, keyword inputs into
    `kwargs=`), not only its name: its title said "Call `torch.onnx.export` instead"."""
    await start(lsp, "vscode")
    uri = uri_of(tmp_path / "d.py")
    text = "import torch\n\ntorch.onnx.dynamo_export(model, x, y, mask=m)\n"
    (removed,) = [d for d in await open_checked(lsp, uri, text) if d.code == "OLX402"]
    titles = [action_entry(a)[0] for a in await code_actions(lsp, uri, removed, ["quickfix"])]
    assert (
        "onnxlint (OLX402): Call `torch.onnx.export` instead, pass the inputs as one tuple "
        "and the keyword inputs as `kwargs=`"
    ) in titles, titles
