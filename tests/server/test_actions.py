"""Code actions, fix-all, hover, code lens and commands, applied through the client."""

from __future__ import annotations

from typing import Any

import pytest
from lsprotocol import types

from onnxlint.rules import all_rules
from onnxlint.rules.base import Invalid

from .conftest import (
    Client,
    apply_and_sync,
    diagnostics_for,
    open_doc,
    start,
    uri_of,
    wait_for,
)

pytestmark = pytest.mark.asyncio(loop_scope="module")

LEGACY = """import torch

torch.onnx.export(model, (x,), "m.onnx", dynamo=False)
"""

# A file with a safe fix (dynamo_export -> export) and an unsafe one (dynamo=False).
MIXED = """import torch


def export(model, x):
    torch.onnx.export(model, (x,), "a.onnx", dynamo=False)
    program = torch.onnx.dynamo_export(model, x)
    return program
"""


async def actions_at(
    client: Client, uri: str, diag: types.Diagnostic, only: list[str] | None = None
) -> list[types.CodeAction]:
    result = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=diag.range,
            context=types.CodeActionContext(diagnostics=[diag], only=only),
        )
    )
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def _single_fix_cases() -> list[Any]:
    """Every rule's INVALID case with an expected fix and exactly one finding of its code."""
    out = []
    for rule in all_rules():
        if rule.fix_safety is None or rule.from_deep_analysis:
            continue
        for i, case in enumerate(rule.INVALID):
            if case.fixed is not None and not case.config and case.count in (None, 1):
                out.append(pytest.param(rule.code, case, id=f"{rule.code}-{i}"))
    return out


@pytest.mark.parametrize(("code", "case"), _single_fix_cases())
async def test_each_rule_quick_fix_applied_through_the_client(
    shared: Client, code: str, case: Invalid, tmp_path
) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "case.py")
    open_doc(lsp, uri, case.code)
    diags = [d for d in await diagnostics_for(lsp, uri, 1) if d.code == code]
    if len(diags) != 1:
        pytest.skip(f"{code}: the case has {len(diags)} findings of its code")
    actions = await actions_at(lsp, uri, diags[0], only=["quickfix"])
    fixes = [a for a in actions if "Suppress" not in a.title and f"({code})" in a.title]
    assert fixes, [a.title for a in actions]
    assert fixes[0].edit is not None
    await apply_and_sync(lsp, uri, fixes[0].edit)
    assert lsp.texts[uri] == case.fixed


async def test_dynamo_quick_fix_and_its_title(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim")
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    (diag,) = await diagnostics_for(lsp, uri, 1)
    actions = await actions_at(lsp, uri, diag)
    titles = [a.title for a in actions]
    fix = next(a for a in actions if "dynamo" in a.title.lower())
    assert "unsafe" in fix.title  # a person sees that behaviour may change
    assert fix.kind == types.CodeActionKind.QuickFix
    assert fix.is_preferred is not True
    assert any("Suppress OLX401" in t for t in titles)
    assert fix.edit is not None
    v = await apply_and_sync(lsp, uri, fix.edit)
    assert "dynamo=True" in lsp.texts[uri]
    assert await diagnostics_for(lsp, uri, v) == []


async def test_suppress_comment_is_added_then_merged(shared: Client, tmp_path) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "m.py")
    text = LEGACY.replace("dynamo=False)\n", "dynamo=False)  # onnxlint: ignore[OLX201]\n")
    open_doc(lsp, uri, text)
    (diag,) = await diagnostics_for(lsp, uri, 1)
    actions = await actions_at(lsp, uri, diag)
    sup = next(a for a in actions if "Suppress" in a.title)
    assert sup.edit is not None
    v = await apply_and_sync(lsp, uri, sup.edit)
    assert lsp.texts[uri].splitlines()[2].endswith("# onnxlint: ignore[OLX201, OLX401]")
    assert await diagnostics_for(lsp, uri, v) == []

    uri2 = uri_of(tmp_path / "n.py")
    open_doc(lsp, uri2, LEGACY)
    (diag,) = await diagnostics_for(lsp, uri2, 1)
    sup = next(a for a in await actions_at(lsp, uri2, diag) if "Suppress" in a.title)
    assert sup.edit is not None
    await apply_and_sync(lsp, uri2, sup.edit)
    assert lsp.texts[uri2].splitlines()[2].endswith("dynamo=False)  # onnxlint: ignore[OLX401]")


async def test_suppression_goes_where_a_comment_can_go(shared: Client, tmp_path) -> None:
    """A call whose first line ends inside a string: the comment goes on its last line."""
    lsp = shared
    uri = uri_of(tmp_path / "m.py")
    text = 'import torch\n\ntorch.onnx.export(model, (x,), """m\n.onnx""", dynamo=False)\n'
    open_doc(lsp, uri, text)
    diags = [d for d in await diagnostics_for(lsp, uri, 1) if d.code == "OLX401"]
    sup = next(a for a in await actions_at(lsp, uri, diags[0]) if "Suppress" in a.title)
    assert sup.edit is not None
    v = await apply_and_sync(lsp, uri, sup.edit)
    assert "OLX401" not in [d.code for d in await diagnostics_for(lsp, uri, v)]
    assert "OLX000" not in [d.code for d in await diagnostics_for(lsp, uri, v)]


async def _fix_all_action(lsp: Client, uri: str) -> types.CodeAction:
    """The one `source.fixAll` action the server offers for `uri`."""
    result = await lsp.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri),
            range=types.Range(types.Position(0, 0), types.Position(0, 0)),
            context=types.CodeActionContext(diagnostics=[], only=["source.fixAll"]),
        )
    )
    (action,) = [a for a in result or [] if isinstance(a, types.CodeAction)]
    return action


@pytest.mark.parametrize("editor", ["vscode", "neovim"])
async def test_fix_all_applies_only_safe_fixes(lsp: Client, editor: str, tmp_path) -> None:
    await start(lsp, editor)
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, MIXED)
    diags = await diagnostics_for(lsp, uri, 1)
    assert {"OLX401", "OLX402"} <= {str(d.code) for d in diags}
    action = await _fix_all_action(lsp, uri)
    assert action.kind == "source.fixAll.onnxlint"
    if action.edit is None:  # resolved lazily
        action = await lsp.code_action_resolve_async(action)
    assert action.edit is not None
    v = await apply_and_sync(lsp, uri, action.edit)
    text = lsp.texts[uri]
    assert "dynamo_export" not in text  # safe fix applied
    assert "dynamo=False" in text  # unsafe fix not applied
    codes = [d.code for d in await diagnostics_for(lsp, uri, v)]
    assert "OLX402" not in codes and "OLX401" in codes


async def test_fix_all_command_uses_workspace_apply_edit(shared: Client, tmp_path) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, MIXED)
    await diagnostics_for(lsp, uri, 1)
    result = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.fixAll", arguments=[uri])
    )
    assert result["applied"] is True
    assert lsp.applied and "dynamo_export" not in lsp.texts[uri]


async def test_edits_are_versioned_and_match_the_current_text(shared: Client, tmp_path) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, "\n\n" + LEGACY)
    await diagnostics_for(lsp, uri, 1)
    # the user types two lines above: the old diagnostic's range is now wrong
    v2 = await apply_and_sync(
        lsp,
        uri,
        types.WorkspaceEdit(
            changes={
                uri: [
                    types.TextEdit(types.Range(types.Position(0, 0), types.Position(0, 0)), "# a\n")
                ]
            }
        ),
    )
    (diag,) = await diagnostics_for(lsp, uri, v2)
    fix = next(a for a in await actions_at(lsp, uri, diag) if "dynamo" in a.title.lower())
    assert fix.edit is not None and fix.edit.document_changes
    tde = fix.edit.document_changes[0]
    assert isinstance(tde, types.TextDocumentEdit)
    assert tde.text_document.version == v2
    await apply_and_sync(lsp, uri, fix.edit)
    assert "dynamo=True" in lsp.texts[uri] and lsp.texts[uri].startswith("# a\n")


# ---------------------------------------------------------------------------- hover


async def test_hover_on_a_finding_and_on_a_suppression_comment(shared: Client, tmp_path) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "m.py")
    text = LEGACY + "y = 1  # onnxlint: ignore[OLX201, OLX401]\n"
    open_doc(lsp, uri, text)
    (diag,) = await diagnostics_for(lsp, uri, 1)
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), diag.range.start)
    )
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    value = hover.contents.value
    assert value.startswith("**OLX401** `legacy-torchscript-exporter`")
    assert diag.message not in value  # the editor shows the message already
    assert "**Use instead:**\n```python" in value and "**Quick fix:**" in value
    assert value.endswith("[Full rule page](https://onnxlint.github.io/onnxlint/rules/OLX401/)")
    assert len(value) < 900
    col = text.splitlines()[3].index("OLX201") + 2
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(3, col))
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.startswith("**OLX201** `missing-eval-before-export`")
    nothing = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), types.Position(0, 1))
    )
    assert nothing is None


# ---------------------------------------------------------------------------- code lens, commands

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x * 2


class Helper:
    pass


def export(model, x):
    torch.onnx.export(model, (x,), "net.onnx")
"""


TARGETED = (
    MODEL
    + """

# onnxlint: target
def net():
    return Net(), (torch.randn(2),)
"""
)


async def test_code_lens_over_modules_and_export_calls(lsp: Client, tmp_path) -> None:
    result = await start(lsp, "vscode", trusted=False, client_commands=["onnxlint.restart"])
    cmds = result.capabilities.execute_command_provider
    assert cmds is not None
    assert set(cmds.commands) == {
        "onnxlint.analyzeExport",
        "onnxlint.createTarget",
        "onnxlint.fixAll",
        "onnxlint.showReport",
        "onnxlint.setScriptArguments",
        "onnxlint.showDocumentation",
    }
    uri = uri_of(tmp_path / "net.py")
    (tmp_path / "net.py").write_text(TARGETED)
    open_doc(lsp, uri, TARGETED)
    await diagnostics_for(lsp, uri, 1)
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert lenses is not None
    # class Net and the target's def (the wrapper's export call exports no known class)
    assert [lens.range.start.line for lens in lenses] == [4, 18]
    for lens in lenses:
        assert lens.command is not None
        assert lens.command.command == "onnxlint.analyzeExport"
        assert lens.command.title == "Analyze export (net:net)"
    # running it in an untrusted workspace is refused with a message, nothing runs
    lens = lenses[0]
    assert lens.command is not None
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=lens.command.command, arguments=lens.command.arguments)
    )
    assert out["status"] == "unavailable"
    await wait_for(lambda: lsp.messages, what="showMessage")
    assert "trusted" in lsp.messages[-1].message
    assert not lsp.notifications


async def test_analyze_export_without_a_target_explains_how_to_declare_one(
    lsp: Client, tmp_path
) -> None:
    await start(lsp, "vscode", trusted=True)
    uri = uri_of(tmp_path / "net.py")
    (tmp_path / "net.py").write_text(MODEL)
    open_doc(lsp, uri, MODEL)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="onnxlint.analyzeExport",
            arguments=[uri, {"line": 5, "kind": "class", "name": "Net"}],
        )
    )
    assert out["status"] == "unavailable"
    assert "onnxlint: target" in out["message"]


async def test_show_report_before_any_analysis(shared: Client) -> None:
    lsp = shared
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showReport", arguments=[])
    )
    assert out["status"] == "unavailable"


async def test_restart_command_rechecks(lsp: Client, tmp_path) -> None:
    await start(lsp, "neovim")
    uri = uri_of(tmp_path / "m.py")
    open_doc(lsp, uri, LEGACY)
    await diagnostics_for(lsp, uri, 1)
    n = len(lsp.publishes)
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.restart", arguments=[])
    )
    assert out == {"restarted": True}
    assert [d.code for d in await diagnostics_for(lsp, uri, 1, after=n)] == ["OLX401"]


async def test_unknown_command_is_an_error(shared: Client) -> None:
    lsp = shared
    with pytest.raises(Exception, match="not defined"):
        await lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command="onnxlint.nope", arguments=[])
        )


async def test_fix_all_command_shows_progress_when_it_takes_a_while(
    shared: Client, tmp_path
) -> None:
    lsp = shared
    uri = uri_of(tmp_path / "slow.py")
    open_doc(lsp, uri, MIXED)
    await diagnostics_for(lsp, uri, 1)
    before = set(lsp.progress_reports)
    # progressAfterS=0: as if the fix took longer than the usual one second
    result = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(
            command="onnxlint.fixAll", arguments=[{"uri": uri, "progressAfterS": 0}]
        )
    )
    assert result["applied"] is True
    (token,) = set(lsp.progress_reports) - before
    reports = lsp.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "onnxlint: fixing all problems" and not reports[0].cancellable
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)


async def test_fix_all_code_action_resolve_shows_progress_when_it_takes_a_while(
    lsp: Client, tmp_path
) -> None:
    await start(lsp, "vscode")  # resolves the edit lazily and supports work-done progress
    uri = uri_of(tmp_path / "slow.py")
    open_doc(lsp, uri, MIXED)
    await diagnostics_for(lsp, uri, 1)
    action = await _fix_all_action(lsp, uri)
    assert action.edit is None and isinstance(action.data, dict)
    before = set(lsp.progress_reports)
    action.data["progressAfterS"] = 0  # as if building the edit took over a second
    action = await lsp.code_action_resolve_async(action)
    assert action.edit is not None
    (token,) = set(lsp.progress_reports) - before
    reports = lsp.progress_reports[token]
    assert isinstance(reports[0], types.WorkDoneProgressBegin)
    assert reports[0].title == "onnxlint: fixing all problems"
    assert isinstance(reports[-1], types.WorkDoneProgressEnd)
