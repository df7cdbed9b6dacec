"""Issue 27, item 7: OLX104's message is one sentence that names only the dim the code
specialises, the other exports that reach the line are related information (not a second
exporter parenthetical), and the hover explains the exporter the finding is about."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsprotocol import types

from .conftest import Client, diagnostics_for, open_doc, start, uri_of, wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

REPO = Path(__file__).resolve().parents[2]

MODEL = """import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        n = int(x.shape[0])
        return y.view(n, 8, -1)
"""

EXPORT = """import torch

from nets import Net

torch.onnx.export(
    Net().eval(),
    (torch.randn(2, 3, 16, 16),),
    "net.onnx",
    dynamic_shapes={"x": {0: "batch", 3: "width"}},
)
"""


async def _olx104(lsp: Client, path: Path) -> types.Diagnostic:
    uri = uri_of(path)
    open_doc(lsp, uri, path.read_text(encoding="utf-8"))
    await diagnostics_for(lsp, uri, 1)
    # the exports that reach the file are found in the project (a later publish)
    found = await wait_for(
        lambda: [
            d
            for d in lsp.diagnostics.get(uri, [])
            if d.code == "OLX104" and "no export in this project reaches it" not in d.message
        ],
        30,
        "the OLX104 of the export that reaches the line",
    )
    assert len(found) == 1, found
    return found[0]


async def _hover(lsp: Client, path: Path, d: types.Diagnostic) -> str:
    hover = await lsp.text_document_hover_async(
        types.HoverParams(types.TextDocumentIdentifier(uri_of(path)), d.range.start)
    )
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    return hover.contents.value


async def test_a_dynamo_finding_names_the_specialised_dim_and_its_hover_is_about_dynamo(
    lsp: Client, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "nets.py").write_text(MODEL)
    (tmp_path / "export.py").write_text(EXPORT)
    await start(lsp, "vscode", folders=[tmp_path])
    d = await _olx104(lsp, tmp_path / "nets.py")
    head = d.message.split("\n")[0]
    # one sentence naming the dim the code reads (batch), not the other one declared (width)
    assert "'batch'" in head and "width" not in head and "export.py:5" in head, head
    assert "exported by" not in head and "(dynamo exporter) (" not in head, head
    hover = await _hover(lsp, tmp_path / "nets.py", d)
    assert "The dynamo exporter" in hover and "Tracing" not in hover, hover


async def test_the_examples_olx104_is_one_sentence_with_the_other_exports_related(
    lsp: Client, tmp_path: Path
) -> None:
    """examples/: `int(images.shape[0])` is reached by four exports; the TorchScript one at
    export.py:20 (dynamic batch, width) is the reason. The message names batch only, and
    says tracing; the three other exports are related information."""
    project = tmp_path / "examples"
    shutil.copytree(REPO / "examples", project, ignore=shutil.ignore_patterns(".onnxlint_cache"))
    await start(lsp, "vscode", folders=[project])
    model = project / "vision" / "detector.py"
    d = await _olx104(lsp, model)
    head = d.message.split("\n")[0]
    assert head == (
        "a tensor size converted with `int()` becomes a Python number: tracing freezes it, "
        "and with it the dimension (batch) that export.py:20 declares dynamic (TorchScript "
        "exporter)"
    ), head
    assert len(head) < 200 and "width" not in head and "exported by" not in head
    related = sorted(r.message for r in d.related_information or [])
    assert related == [
        "also exported by export.py:35 (torch.onnx.dynamo_export)",
        "also exported by export.py:42 (dynamo exporter)",
        "also exported by vision/targets.py:15 (dynamo exporter)",
    ], related
    hover = await _hover(lsp, model, d)
    assert "Tracing (`torch.jit.trace`" in hover and "The dynamo exporter" not in hover, hover
