"""Issue 27, item 4: the deep worker starts in the background, so the first analysis does not
wait for it (torch's import: seconds).

Once the workspace is trusted and the first Python file with an export call is open, after its
first diagnostics, the server starts the worker with no analysis asked for and says so
(`onnxlint/analysisState`, state "worker"); the first analysis then uses that process. Not in
an untrusted workspace, not for a file without an export call, not with `deep.prestart` off.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .conftest import Client, diagnostics_for, open_doc, start, uri_of, wait_for

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.deep, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    dst = tmp_path / "examples"
    shutil.copytree(REPO / "examples", dst, ignore=shutil.ignore_patterns(".onnxlint_cache"))
    return dst


def _worker(lsp: Client) -> list[Any]:
    return [
        p for n, p in lsp.notifications if n == "onnxlint/analysisState" and p.state == "worker"
    ]


async def test_worker_starts_in_the_background_for_a_file_with_an_export(
    lsp: Client, project: Path
) -> None:
    pytest.importorskip("torch")
    await start(lsp, "vscode", folders=[project])
    classifier = project / "vision" / "layers.py"  # no export call: no worker
    open_doc(lsp, uri_of(classifier), classifier.read_text(encoding="utf-8"))
    await diagnostics_for(lsp, uri_of(classifier), 1)
    await asyncio.sleep(1.0)
    assert _worker(lsp) == []
    export = project / "export.py"
    uri = uri_of(export)
    open_doc(lsp, uri, export.read_text(encoding="utf-8"))
    await diagnostics_for(lsp, uri, 1)
    ready = await wait_for(
        lambda: [p for p in _worker(lsp) if p.status == "ready"], 120, "the worker ready"
    )
    assert [p.status for p in _worker(lsp)] == ["starting", "ready"]
    pid = ready[0].pid
    assert isinstance(pid, int) and pid > 0
    cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    assert "onnxlint" in cmdline, cmdline  # a real worker process, running before any request
    assert not [
        n for n, p in lsp.notifications if n == "onnxlint/analysisState" and p.state != "worker"
    ]
    # the first analysis uses that process (it forks its analysis from it) and is quick
    lenses = await lsp.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri))
    )
    assert lenses is not None
    cmd = next(x.command for x in lenses if x.command and "runs this script" in x.command.title)
    started = time.monotonic()
    out = await lsp.workspace_execute_command_async(
        types.ExecuteCommandParams(command=cmd.command, arguments=cmd.arguments)
    )
    took = time.monotonic() - started
    assert out is not None and out["status"] == "ok" and not out["cached"], out
    print(f"worker ready {ready[0].seconds} s after it was asked; first analysis {took:.1f} s")
    assert Path(f"/proc/{pid}").exists()  # still the same worker


@pytest.mark.parametrize("why", ["untrusted", "prestart off"])
async def test_no_worker_without_trust_or_with_prestart_off(
    lsp: Client, project: Path, why: str
) -> None:
    if why == "untrusted":
        await start(lsp, "vscode", folders=[project], trusted=False)
    else:
        await start(lsp, "vscode", {"deep": {"prestart": False}}, folders=[project])
    export = project / "export.py"
    open_doc(lsp, uri_of(export), export.read_text(encoding="utf-8"))
    await diagnostics_for(lsp, uri_of(export), 1)
    await asyncio.sleep(2.0)
    assert _worker(lsp) == []
