"""Re-checking after an edit in a file that exports (a notebook whose cells define and
export models): the project's reach table is kept when the edit cannot change it (a method
of a class no export reaches), and rebuilt when it can; file-scope findings kept with a
block (`Rule.block_key`) follow an edit elsewhere that changes what they depend on."""

from __future__ import annotations

import json
from pathlib import Path

from onnxlint.core.config import load_config
from onnxlint.core.violation import Violation
from onnxlint.engine import Engine
from onnxlint.project import read_disk
from onnxlint.source.cells import cell_module
from onnxlint.source.notebook import Cell

MODEL = """import torch
import torch.nn as nn
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return x.view(2, 8)
"""
OTHER = """class Other(nn.Module):
    def forward(self, y):
        n = y.shape[0]
        return y.reshape(4, 2)
"""
EXPORT = """model = Net().eval()
x = torch.randn(2, 8)
torch.onnx.export(model, (x,), "m.onnx")
"""
DYNAMIC = EXPORT.replace('"m.onnx")', '"m.onnx", dynamic_shapes={"x": {0: "batch"}})')


class Session:
    """An engine as the language server holds it: open cells, read by the project model."""

    def __init__(self, root: Path, cells: list[str]) -> None:
        (root / "pyproject.toml").write_text("[tool.onnxlint]\n")
        self.path = str(root / "nb.ipynb")
        self.cells = list(cells)
        self.open: dict[str, str] = {}
        Path(self.path).write_text(self.json())
        self.engine = Engine(read=self.read)
        self.config = load_config(root)

    def json(self) -> str:
        cells = [{"cell_type": "code", "metadata": {}, "source": s} for s in self.cells]
        return json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5})

    def read(self, path: str) -> str | None:
        if path == self.path:
            return cell_module([Cell(i, "code", s) for i, s in enumerate(self.cells)]).text
        if path in self.open:
            return self.open[path]
        return read_disk(path)

    def check(self) -> list[Violation]:
        return self.engine.check(self.path, self.json(), self.config)

    def check_file(self, path: str) -> list[Violation]:
        text = self.read(path)
        assert text is not None
        return self.engine.check(path, text, self.config)


def found(vs: list[Violation], code: str) -> list[tuple[int | None, int]]:
    return sorted((v.cell, v.span.line) for v in vs if v.code == code)


def test_an_edit_in_an_unreached_class_keeps_the_table_and_the_findings(tmp_path: Path) -> None:
    s = Session(tmp_path, [MODEL, OTHER, DYNAMIC])
    s.check()
    builds = s.engine.project_model.builds
    before = s.check()
    assert found(before, "OLX105") == [(1, 9)]  # Net.forward, exported with a dynamic batch
    assert s.engine.project_model.builds == builds
    # A line typed in a method of a class no export reaches: the table is kept, the
    # export site moves down a line (its message says where), the findings are the same.
    s.cells[1] = OTHER.replace("        n = y", "        probe = y.shape[0]\n        n = y")
    after = s.check()
    assert s.engine.project_model.builds == builds
    assert found(after, "OLX105") == [(1, 9)]
    [site] = s.engine.project_model.table(s.config).sites
    assert site.line == 9 + 5 + 3  # cell 3's export call, one line further down
    assert [v.message for v in after if v.code == "OLX105"] == [
        v.message for v in before if v.code == "OLX105"
    ]


def test_an_edit_adding_dynamic_dims_reaches_the_model_cell(tmp_path: Path) -> None:
    s = Session(tmp_path, [MODEL, OTHER, EXPORT])
    s.check()
    assert found(s.check(), "OLX105") == []
    s.cells[2] = DYNAMIC
    assert found(s.check(), "OLX105") == [(1, 9)]
    s.cells[2] = EXPORT
    assert found(s.check(), "OLX105") == []


def test_a_new_export_in_another_cell_reaches_its_model(tmp_path: Path) -> None:
    s = Session(tmp_path, [MODEL, OTHER, DYNAMIC])
    s.check()
    assert found(s.check(), "OLX105") == [(1, 9)]
    builds = s.engine.project_model.builds
    s.cells.append(
        'other = Other().eval()\ntorch.onnx.export(other, (x,), "o.onnx",'
        ' dynamic_shapes={"y": {0: "n"}})\n'
    )
    assert found(s.check(), "OLX105") == [(1, 9), (2, 4)]
    assert s.engine.project_model.builds == builds + 1
    s.cells.pop()
    assert found(s.check(), "OLX105") == [(1, 9)]


def test_an_edit_in_the_exported_class_rebuilds_the_table(tmp_path: Path) -> None:
    """`Net` builds `Other` into itself after the edit: Other.forward is now reached."""
    s = Session(tmp_path, [MODEL, OTHER, DYNAMIC])
    s.check()
    builds = s.engine.project_model.builds
    s.cells[0] = MODEL.replace(
        "self.fc = nn.Linear(8, 8)", "self.fc = nn.Linear(8, 8)\n        self.other = Other()"
    ).replace("return x.view(2, 8)", "return self.other(x.view(2, 8))")
    s.check()
    assert s.engine.project_model.builds == builds + 1
    table = s.engine.project_model.table(s.config)
    assert ("Other", "forward") in table.reach[s.path]


def test_an_edit_of_an_unreached_base_of_an_exported_class_rebuilds(tmp_path: Path) -> None:
    base = "class Base(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
    model = MODEL.replace("class Net(nn.Module):", "class Net(Base):")
    s = Session(tmp_path, [base + "\n" + model, DYNAMIC])
    s.check()
    builds = s.engine.project_model.builds
    s.cells[0] = (
        base + "        self.extra = nn.Linear(8, 8)\n" + "\n" + model
    )  # Base's __init__ builds a submodule into every Net
    s.check()
    assert s.engine.project_model.builds == builds + 1


def test_an_edit_in_a_notebook_reaches_an_open_model_file(tmp_path: Path) -> None:
    """The notebook exports a class of `models/head.py` (imported) with a dynamic batch:
    the head's literal size is reported there; adding and removing the dynamic dims in the
    notebook's export cell changes that file's findings."""
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "__init__.py").write_text("")
    head = tmp_path / "models" / "head.py"
    head.write_text(
        "import torch\nfrom torch import nn\n\n\nclass Head(nn.Module):\n"
        "    def forward(self, heat):\n        return heat.view(2, 8)\n"
    )
    export = (
        "from models.head import Head\nimport torch\nm = Head().eval()\n"
        'x = torch.ones(2, 8)\ntorch.onnx.export(m, (x,), "h.onnx")\n'
    )
    dynamic = export.replace('"h.onnx")', '"h.onnx", dynamic_shapes={"heat": {0: "b"}})')
    s = Session(tmp_path, [OTHER.replace("nn.Module", "object"), export])
    s.check()
    assert found(s.check_file(str(head)), "OLX105") == []
    s.cells[1] = dynamic
    s.engine.project_model.changed(s.path, s.read(s.path))  # as the server tells it
    s.check()
    [v] = [v for v in s.check_file(str(head)) if v.code == "OLX105"]
    assert v.span.line == 7 and "nb.ipynb" in v.message, v.message
    s.cells[1] = export
    s.engine.project_model.changed(s.path, s.read(s.path))
    assert found(s.check_file(str(head)), "OLX105") == []


def test_findings_kept_with_a_block_follow_what_another_block_passes_it(tmp_path: Path) -> None:
    """OLX105's findings in `helper`'s cell depend on whether the exported forward (another
    cell) passes it the dynamic input: the cell's kept findings follow that edit."""
    helper = "import torch\ndef helper(t):\n    return t.view(2, 8)\n"
    model = MODEL.replace("return x.view(2, 8)", "return helper(x)")
    s = Session(tmp_path, [helper, model, DYNAMIC])
    s.check()
    assert found(s.check(), "OLX105") == [(1, 3)]
    s.cells[1] = model.replace("helper(x)", "helper(self.fc.weight)")
    assert found(s.check(), "OLX105") == []
    s.cells[1] = model
    assert found(s.check(), "OLX105") == [(1, 3)]
