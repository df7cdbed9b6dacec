"""A notebook edit that changes what its exports reach reaches other cells and other open
files (issue 16: the reach table is kept across edits that cannot change it, so these must
still be seen)."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsprotocol import types

from . import test_notebooks
from .conftest import Client, open_doc, start, uri_of, wait_for
from .test_notebooks import capabilities, codes, latest

pytestmark = pytest.mark.asyncio(loop_scope="module")

HEAD = (
    "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
    "    def forward(self, heat):\n        return heat.view(2, 8)\n"
)
CELLS = [
    "import torch\nimport torch.nn as nn\nfrom models.head import Head\n",
    "class Net(nn.Module):\n    def forward(self, x):\n        return x.view(2, 8)\n",
    "class Unused(nn.Module):\n    def forward(self, y):\n        return y.reshape(4, 2)\n",
    'net = Net().eval()\nx = torch.randn(2, 8)\ntorch.onnx.export(net, (x,), "n.onnx")\n',
    'head = Head().eval()\ntorch.onnx.export(head, (x,), "h.onnx")\n',
]


class Notebook(test_notebooks.Notebook):
    """An open notebook of code cells whose edits replace one piece of text."""

    def __init__(self, client: Client, path: Path, cells: list[str]) -> None:
        super().__init__(client, path, [(types.NotebookCellKind.Code, t) for t in cells])
        self.open()

    def replace(self, index: int, old: str, new: str) -> None:
        """Replace `old` in cell `index` with `new`, as one incremental change."""
        cell = self.cells[index]
        text = self.client.texts[cell]
        at = text.index(old)
        start = types.Position(text[:at].count("\n"), at - (text.rfind("\n", 0, at) + 1))
        end_at = at + len(old)
        end = types.Position(text[:end_at].count("\n"), end_at - (text.rfind("\n", 0, end_at) + 1))
        self.edit(cell, [types.TextEdit(types.Range(start, end), new)])


async def pushed(client: Client, uri: str, want: list[str], timeout: float = 20) -> None:
    await wait_for(
        lambda: codes(latest(client, uri)) == want, timeout=timeout, what=f"{want} on {uri}"
    )


async def test_dynamic_dims_added_in_a_cell_reach_other_cells_and_open_files(
    lsp: Client, tmp_path: Path
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    head = tmp_path / "models" / "head.py"
    head.write_text(HEAD)
    await start(lsp, "vscode", capabilities=capabilities(pull=False), folders=[tmp_path])
    head_uri = uri_of(head)
    open_doc(lsp, head_uri, HEAD)
    nb = Notebook(lsp, tmp_path / "nb.ipynb", CELLS)
    await pushed(lsp, head_uri, [])
    await pushed(lsp, nb.cells[1], [])
    # An edit in a class no export reaches (the table is kept): nothing changes.
    nb.replace(2, "        return y", "        probe = y.shape[0]\n        return y")
    await pushed(lsp, nb.cells[2], [])
    # Dynamic dims on Net's export (cell 4): Net's literal size in cell 2 is reported.
    nb.replace(3, '"n.onnx")', '"n.onnx", dynamic_shapes={"x": {0: "batch"}})')
    await pushed(lsp, nb.cells[1], ["OLX105"])
    # Dynamic dims on Head's export (cell 5): the open model file gets the finding.
    nb.replace(4, '"h.onnx")', '"h.onnx", dynamic_shapes={"heat": {0: "b"}})')
    await pushed(lsp, head_uri, ["OLX105"])
    found = latest(lsp, head_uri) or []
    assert "nb.ipynb" in found[0].message, found[0].message
    # And taken away again.
    nb.replace(4, ', dynamic_shapes={"heat": {0: "b"}})', ")")
    await pushed(lsp, head_uri, [])
    nb.replace(3, ', dynamic_shapes={"x": {0: "batch"}})', ")")
    await pushed(lsp, nb.cells[1], [])
    # A new export call in a new line of cell 3 reaches `Unused` (cell 3 itself).
    nb.replace(
        2,
        "        return y.reshape(4, 2)\n",
        "        return y.reshape(4, 2)\n"
        'u = Unused().eval()\ntorch.onnx.export(u, (torch.randn(4, 2),), "u.onnx",'
        ' dynamic_shapes={"y": {0: "n"}})\n',
    )
    await pushed(lsp, nb.cells[2], ["OLX105"])
