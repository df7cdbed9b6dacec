"""Issue 27, item 2: deep findings reach the files they are in, open or not.

The lens is in the export script; the findings are in the model code. The real worker analyses
the examples' `detector` target with only `export.py` open: the model file's deep findings are
pushed for it although it is not open, are there when it is opened afterwards (with its static
findings), come back when it is closed, and are taken back when the file changes on disk.
A pull client (VS Code) gets them in its pull once the file is open, and the push is cleared so
that nothing shows twice.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, diagnostics_for, open_doc, start, uri_of

pytestmark = [
    pytest.mark.asyncio(loop_scope="module"),
    pytest.mark.deep,
    pytest.mark.slow,
]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dst = tmp_path / "examples"
    shutil.copytree(REPO / "examples", dst, ignore=shutil.ignore_patterns(".onnxlint_cache"))
    return dst


def _deep(diags: list[types.Diagnostic]) -> list[types.Diagnostic]:
    return [
        d
        for d in diags
        if str(d.code).startswith("OLX8") or "confirmed by the deep analysis" in d.message
    ]


async def _analyze_detector(lsp: Client, script: str) -> None:
    out = await asyncio.wait_for(
        lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="onnxlint.analyzeExport", arguments=[script, {"target": "detector"}]
            )
        ),
        600,
    )
    assert out is not None and out["status"] == "ok" and out["findings"] > 0, out


async def test_deep_findings_of_a_model_file_that_is_not_open(lsp: Client, project: Path) -> None:
    pytest.importorskip("torch")
    await start(lsp, "vscode", folders=[project])
    script = uri_of(project / "export.py")
    model_path = project / "vision" / "detector.py"
    model = uri_of(model_path)
    open_doc(lsp, script, (project / "export.py").read_text(encoding="utf-8"))
    await diagnostics_for(lsp, script, 1)
    n = len(lsp.publishes)
    await _analyze_detector(lsp, script)

    # pushed for the model file, which is not open (no version: it is the file on disk)
    pushed = await diagnostics_for(lsp, model, None, after=n)
    assert pushed and _deep(pushed) == pushed, pushed
    assert all(d.data == {"source": "deep"} for d in pushed if str(d.code).startswith("OLX8"))

    # opened afterwards: its first diagnostics have the deep findings with the static ones
    n = len(lsp.publishes)
    open_doc(lsp, model, model_path.read_text(encoding="utf-8"))
    opened = await diagnostics_for(lsp, model, 1, after=n)
    lines = {d.range.start.line for d in pushed}
    assert lines <= {d.range.start.line for d in _deep(opened)}, (pushed, opened)
    assert any(str(d.code).startswith("OLX1") for d in opened)  # the static findings too

    # closed: the deep findings stay shown (not cleared)
    n = len(lsp.publishes)
    lsp.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(model))
    )
    closed = await diagnostics_for(lsp, model, None, after=n)
    assert closed and _deep(closed) == closed, closed

    # changed on disk: they were about the old text, so they are taken back
    n = len(lsp.publishes)
    model_path.write_text("# rewritten\n" + model_path.read_text(encoding="utf-8"))
    lsp.workspace_did_change_watched_files(
        types.DidChangeWatchedFilesParams(
            changes=[types.FileEvent(uri=model, type=types.FileChangeType.Changed)]
        )
    )
    assert await diagnostics_for(lsp, model, None, after=n) == []


async def test_a_pull_client_gets_them_once_the_file_is_open(lsp: Client, project: Path) -> None:
    pytest.importorskip("torch")
    caps = types.ClientCapabilities(
        text_document=types.TextDocumentClientCapabilities(
            diagnostic=types.DiagnosticClientCapabilities(dynamic_registration=False),
            publish_diagnostics=types.PublishDiagnosticsClientCapabilities(),
        ),
        window=types.WindowClientCapabilities(work_done_progress=True),
    )
    await start(lsp, "vscode", folders=[project], capabilities=caps)
    script = uri_of(project / "export.py")
    model_path = project / "vision" / "detector.py"
    model = uri_of(model_path)
    open_doc(lsp, script, (project / "export.py").read_text(encoding="utf-8"))
    n = len(lsp.publishes)
    await _analyze_detector(lsp, script)
    pushed = await diagnostics_for(lsp, model, None, after=n)
    assert pushed and _deep(pushed) == pushed, pushed

    n = len(lsp.publishes)
    open_doc(lsp, model, model_path.read_text(encoding="utf-8"))
    # the push is taken back (the pull shows them now)...
    assert await diagnostics_for(lsp, model, None, after=n) == []
    # ...and the pull has them with the static findings
    report = await lsp.text_document_diagnostic_async(
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(model))
    )
    assert isinstance(report, types.RelatedFullDocumentDiagnosticReport)
    pulled = list(report.items)
    assert _deep(pulled) and any(str(d.code).startswith("OLX1") for d in pulled), pulled
