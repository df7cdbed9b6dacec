"""Issue 29 in the editor: after an analysis, the deep finding gets a proven quick fix.

The real worker analyses a script's export call (the lens's command); its findings show at
once, then the fixes are proven (the worker runs the rewritten code for real) and the
findings are published again with them. The code action on the deep finding is the proven
rewrite, titled with what was proven; applying it edits the lines of the `if`, and the next
analysis of the saved file has no deep finding.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .conftest import (
    Client,
    analyze_export,
    apply_and_sync,
    apply_text_edits,
    code_actions,
    open_checked,
    start,
    uri_of,
    wait_for,
)

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.deep,
    pytest.mark.slow,
]

# also the code-server e2e's (extension/test/e2e/run.ts, scenario deepfix)
SCRIPT = (Path(__file__).parent / "fixtures" / "tensor_if_export.py").read_text(encoding="utf-8")
IF_LINE = 11  # 1-based
EXPORT_LINE = 19


async def _analyze(lsp: Client, uri: str, path: Path, line: int, **spec: Any) -> dict[str, Any]:
    out = await analyze_export(lsp, [uri, {"script": str(path), "line": line, **spec}])
    assert out["status"] == "ok", out
    return out


def _deep(diags: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [d for d in diags if str(d.code).startswith("OLX8")]


async def _proven_olx805(lsp: Client, uri: str) -> types.Diagnostic:
    """The OLX805 diagnostic of the last publish for `uri`, once it carries its proven fix."""

    def fixed() -> types.Diagnostic | None:
        for p in reversed(lsp.publishes):
            if p.uri == uri:
                for d in p.diagnostics:
                    if d.code == "OLX805" and isinstance(d.data, dict) and "fix" in d.data:
                        return d
                return None
        return None

    return await wait_for(fixed, 300, "the OLX805 finding with its proven fix")  # type: ignore[no-any-return]


async def _pushed_finding(
    lsp: Client, uri: str, timeout: float, *, fixed: bool = False
) -> types.Diagnostic:
    """The diagnostic at the `if` that the deep analysis confirmed (the static OLX101 with the
    deep OLX802 folded in: one cause, one diagnostic), from the last publish for `uri`;
    `fixed`: once it carries a fix."""

    def found() -> types.Diagnostic | None:
        for p in reversed(lsp.publishes):
            if p.uri == uri:
                for d in p.diagnostics:
                    # the deep OLX802 is in the related information (one sentence per message)
                    deep = [r.message for r in d.related_information or []] + [d.message]
                    if d.range.start.line != IF_LINE - 1 or not any("OLX802" in m for m in deep):
                        continue
                    if not fixed or (isinstance(d.data, dict) and "fix" in d.data):
                        return d
                return None
        return None

    try:
        return await wait_for(found, timeout, "the deep finding at the if")  # type: ignore[no-any-return]
    except AssertionError:
        raise AssertionError([p for p in lsp.publishes if p.uri == uri][-2:]) from None


async def _open(
    lsp: Client, tmp_path: Path, settings: dict[str, Any] | None = None
) -> tuple[Path, str]:
    """A VS Code session on a folder with the script, the script open and checked."""
    pytest.importorskip("torch")
    path = tmp_path / "m.py"
    path.write_text(SCRIPT)
    await start(lsp, "vscode", settings, folders=[tmp_path])
    uri = uri_of(path)
    await open_checked(lsp, uri, SCRIPT)
    return path, uri


async def _actions(lsp: Client, uri: str, diag: types.Diagnostic) -> list[types.CodeAction]:
    return [a for a in await code_actions(lsp, uri, diag) if isinstance(a, types.CodeAction)]


async def test_the_proven_fix_is_a_code_action_on_the_deep_finding(
    lsp: Client, tmp_path: Path
) -> None:
    path, uri = await _open(lsp, tmp_path)
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    (lens,) = [x.command for x in lenses if x.command and "runs this script" in x.command.title]
    assert lens.arguments and lens.arguments[1]["line"] == EXPORT_LINE
    out = await analyze_export(lsp, lens.arguments)
    assert out["status"] == "ok" and out["target"] == "m.py:19", out
    await _pushed_finding(lsp, uri, 60)  # the findings first, then the proof
    finding = await _pushed_finding(lsp, uri, 300, fixed=True)

    acts = await _actions(lsp, uri, finding)
    fixes = [a for a in acts if "torch.where" in a.title]
    assert fixes, [a.title for a in acts]
    (fix,) = fixes
    assert fix.title == (
        "onnxlint (OLX101): Rewrite with torch.where (exports; outputs match on the example"
        " inputs) (unsafe: may change behaviour)"
    )
    assert fix.kind == types.CodeActionKind.QuickFix and fix.edit is not None

    # applying it replaces the if/else and nothing else
    await apply_and_sync(lsp, uri, fix.edit)
    new = lsp.texts[uri]
    assert new == SCRIPT.replace(
        "        if y.sum() > 0:\n            y = y * 2\n        else:\n            y = y - 1\n",
        "        y = torch.where(y.sum() > 0, y * 2, y - 1)\n",
    )
    # saved, and analysed again: no deep finding is left
    path.write_text(new)
    lsp.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
    )
    # the lens clicked before the editor redraws it after the edit (its argument still
    # says line 19) runs the export call it showed, now at line 16: clean
    out = await analyze_export(lsp, lens.arguments)
    assert out["status"] == "ok" and out["target"] == "m.py:16", out
    assert out["findings"] == 0, out


async def test_no_fix_without_the_proof(lsp: Client, tmp_path: Path) -> None:
    """`proveFixes: false`: the findings, and no rewrite offered (only the suppression)."""
    path, uri = await _open(lsp, tmp_path)
    await _analyze(lsp, uri, path, EXPORT_LINE, proveFixes=False)
    finding = await _pushed_finding(lsp, uri, 60)
    titles = [a.title for a in await _actions(lsp, uri, finding)]
    assert not any("torch.where" in t for t in titles), titles
    assert "onnxlint (OLX101): Suppress OLX101 on this line" in titles


def _proofs_begun(lsp: Client) -> list[str]:
    """The titles of the "proving fixes" progress items the server began."""
    return [
        r.title
        for reports in lsp.progress_reports.values()
        for r in reports
        if isinstance(r, types.WorkDoneProgressBegin) and "proving fixes" in r.title
    ]


async def test_the_setting_off_runs_no_proof_until_a_command_asks(
    lsp: Client, tmp_path: Path
) -> None:
    """`deep.proveFixes: false` (the VS Code setting, in the settings the client sends): the
    analysis runs no proof and offers no rewrite; an analysis command that asks for the proofs
    (`"proveFixes": true`) still gets them, so the first half watches a proof that would show."""
    path, uri = await _open(lsp, tmp_path, {"deep": {"proveFixes": False}})
    await _analyze(lsp, uri, path, EXPORT_LINE)
    finding = await _pushed_finding(lsp, uri, 60)
    await asyncio.sleep(3)  # a proof begins its progress at once after the analysis
    assert _proofs_begun(lsp) == []
    titles = [a.title for a in await _actions(lsp, uri, finding)]
    assert not any("torch.where" in t for t in titles), titles

    await _analyze(lsp, uri, path, EXPORT_LINE, proveFixes=True)
    finding = await _pushed_finding(lsp, uri, 300, fixed=True)
    assert _proofs_begun(lsp) == ["onnxlint: proving fixes for m.py:19"]
    titles = [a.title for a in await _actions(lsp, uri, finding)]
    assert any("torch.where" in t for t in titles), titles


TRANSLATED = """import torch


class Running(torch.nn.Module):
    def forward(self, x):
        return torch.cummax(x, dim=1).values - x


torch.onnx.export(Running(), (torch.randn(3, 4),), dynamo=True, dynamic_shapes=({0: "b"},))
"""


async def test_a_fix_that_adds_a_module_creates_the_file(lsp: Client, tmp_path: Path) -> None:
    """The onnx-translation fix edits the script and adds a module next to it: the code
    action's WorkspaceEdit creates that file (CreateFile, then its text), and once applied
    and saved, the analysis has no deep finding left."""
    pytest.importorskip("torch")
    path = tmp_path / "export_running.py"
    path.write_text(TRANSLATED)
    await start(lsp, "vscode", folders=[tmp_path])
    uri = uri_of(path)
    await open_checked(lsp, uri, TRANSLATED)
    await _analyze(lsp, uri, path, 9)

    finding = await _proven_olx805(lsp, uri)
    acts = await _actions(lsp, uri, finding)
    (fix,) = [a for a in acts if "ONNX translation" in a.title]
    assert fix.title.startswith(
        "onnxlint (OLX805): Register an ONNX translation of cummax (custom_translation_table, "
        "in export_running_onnx_translations.py) (exports; outputs match at 2 sizes"
    ), fix.title
    assert fix.edit is not None and fix.edit.document_changes
    new = tmp_path / "export_running_onnx_translations.py"
    changes = list(fix.edit.document_changes)
    creates = [c for c in changes if isinstance(c, types.CreateFile)]
    assert [c.uri for c in creates] == [uri_of(new)]
    assert creates[0].options is not None and creates[0].options.overwrite is False
    # an editor applies them in order: the file created, its text, the script's edits
    for c in changes:
        if isinstance(c, types.CreateFile):
            assert not new.exists()
            new.write_text("")
            continue
        assert isinstance(c, types.TextDocumentEdit)
        if c.text_document.uri == uri:
            await apply_and_sync(lsp, uri, types.WorkspaceEdit(document_changes=[c]))
        else:
            assert c.text_document.uri == uri_of(new)
            (edit,) = c.edits
            new.write_text(edit.new_text)
    assert "def aten_cummax(self, dim):" in new.read_text()
    script = lsp.texts[uri]
    assert "from export_running_onnx_translations import aten_cummax\n" in script
    assert "custom_translation_table={torch.ops.aten.cummax.default: aten_cummax})" in script
    path.write_text(script)
    lsp.text_document_did_save(
        types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri))
    )
    out = await _analyze(lsp, uri, path, 10)
    assert out["findings"] == 0, out


async def test_a_fix_in_another_file_edits_that_file(lsp: Client, tmp_path: Path) -> None:
    """The finding is in the model's module, open in the editor; its fix edits the export
    script, which is not open (a TextDocumentEdit of its file, unversioned), and adds the
    translations module."""
    pytest.importorskip("torch")
    model = tmp_path / "ranks.py"
    model_text = (
        "import torch\n\n\nclass Ranks(torch.nn.Module):\n"
        "    def forward(self, x):\n"
        "        return torch.median(x, dim=-1).values\n"
    )
    model.write_text(model_text)
    script = tmp_path / "export_ranks.py"
    script.write_text(
        "import torch\nfrom ranks import Ranks\n\n"
        "torch.onnx.export(Ranks(), (torch.randn(2, 7),), dynamo=True,\n"
        '                  dynamic_shapes=({1: "n"},))\n'
    )
    await start(lsp, "vscode", folders=[tmp_path])
    uri = uri_of(model)
    await open_checked(lsp, uri, model_text)
    await _analyze(lsp, uri, script, 4)

    finding = await _proven_olx805(lsp, uri)
    (fix,) = [a for a in await _actions(lsp, uri, finding) if "ONNX translation" in a.title]
    assert fix.edit is not None and fix.edit.document_changes
    kinds = [(type(c).__name__, c.uri if isinstance(c, types.CreateFile) else c.text_document.uri)
             for c in fix.edit.document_changes]  # fmt: skip
    new = tmp_path / "export_ranks_onnx_translations.py"
    assert kinds == [
        ("TextDocumentEdit", uri_of(script)),
        ("CreateFile", uri_of(new)),  # created before its text is written
        ("TextDocumentEdit", uri_of(new)),
    ], kinds
    (script_edit,) = [
        c
        for c in fix.edit.document_changes
        if isinstance(c, types.TextDocumentEdit) and c.text_document.uri == uri_of(script)
    ]
    assert script_edit.text_document.version is None  # not open: the file on disk
    text = apply_text_edits(script.read_text(), list(script_edit.edits))  # type: ignore[arg-type]
    assert "from export_ranks_onnx_translations import aten_median_dim\n" in text
    assert "custom_translation_table={torch.ops.aten.median.dim: aten_median_dim})" in text
