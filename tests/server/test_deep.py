"""The deep analysis through the server: code lens -> command -> progress -> deep diagnostics.

Runs the real worker (torch) on a copy of `examples/`, so it is marked `deep` and `slow`.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, change_doc, diagnostics_for, open_doc, start, uri_of, wait_for

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


async def test_analyze_export_from_a_code_lens(lsp: Client, project: Path) -> None:
    pytest.importorskip("torch")
    await start(lsp, "vscode", folders=[project])
    path = project / "vision" / "classifier.py"
    uri = uri_of(path)
    open_doc(lsp, uri, path.read_text(encoding="utf-8"))
    static = await diagnostics_for(lsp, uri, 1)
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert lenses
    cmd = lenses[0].command
    assert cmd is not None and cmd.command == "onnxlint.analyzeExport"

    # 1. cancelled through the progress' cancel button: the analysis stops, nothing is filed
    task = asyncio.ensure_future(
        lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
        )
    )
    token = await wait_for(lambda: next(iter(lsp.progress_reports), None), 60, "progress")
    lsp.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    out = await asyncio.wait_for(task, 300)
    assert out["status"] == "cancelled", out
    begin = lsp.progress_reports[token][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    assert isinstance(lsp.progress_reports[token][-1], types.WorkDoneProgressEnd)

    # 2. cancelled with $/cancelRequest: the request fails as cancelled, the analysis stops
    def states() -> list[str]:
        return [p.state for name, p in lsp.notifications if name == "onnxlint/analysisState"]

    before = set(lsp.protocol._request_futures)
    fut = asyncio.ensure_future(
        lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
        )
    )
    await wait_for(lambda: set(lsp.protocol._request_futures) - before, 10, "the request")
    (req_id,) = set(lsp.protocol._request_futures) - before
    await wait_for(lambda: states()[-1:] == ["started"], 60, "the second analysis to start")
    lsp.protocol.notify("$/cancelRequest", types.CancelParams(id=req_id))
    with pytest.raises(Exception, match="cancel"):
        await asyncio.wait_for(fut, 60)
    await wait_for(lambda: len(states()) == 4, 120, "the cancelled analysis to finish")

    # 3. the real analysis, with progress and the status notifications around it
    n = len(lsp.publishes)
    out = await asyncio.wait_for(
        lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
        ),
        600,
    )
    assert out["status"] == "ok", out
    assert out["target"] == "classifier"
    assert states() == ["started", "finished"] * 3
    # the lens's hover (tooltip) now carries the memory figures of that analysis (issue 17)
    assert any(n == types.WORKSPACE_CODE_LENS_REFRESH for n, _ in lsp.notifications)
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    tips = [lens.command.tooltip for lens in lenses if lens.command is not None]
    assert any(t and "weights" in t and "running it once" in t for t in tips), tips
    merged = await diagnostics_for(lsp, uri, 1, after=n)
    # deep findings: OLX8xx ones, and static ones the deep analysis confirmed (one per cause)
    deep = [d for d in merged if str(d.code).startswith("OLX8")]
    confirmed = [d for d in merged if "confirmed by the deep analysis" in d.message]
    assert deep or confirmed, merged
    assert all(d.data["source"] == "deep" for d in deep)
    for d in confirmed:
        assert any(r.message.startswith("OLX8") for r in d.related_information or [])
    deep += confirmed
    assert {str(d.code) for d in static} <= {str(d.code) for d in merged}  # published together

    # 4. hover shows the deep rule's page; an edit clears the deep bucket of this file
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri), deep[0].range.start)
    )
    assert hover is not None and str(deep[0].code) in str(hover.contents)
    v = change_doc(lsp, uri, lsp.texts[uri] + "\n")
    after = await diagnostics_for(lsp, uri, v)
    assert not [d for d in after if str(d.code).startswith("OLX8")]
    assert not [d for d in after if "confirmed by the deep analysis" in d.message]

    # 5. the report
    report = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command="onnxlint.showReport", arguments=[uri])
    )
    assert Path(report["markdown"]).read_text(encoding="utf-8").strip()
    assert lsp.shown_documents and lsp.shown_documents[-1].uri.endswith("report.md")
