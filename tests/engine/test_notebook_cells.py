"""Notebook cells as one module: IPython masking, positions and fixes mapped to cells."""

from __future__ import annotations

import json

import pytest

from onnxlint.core.violation import Edit, Fix, FixSafety, Severity, Span, Violation
from onnxlint.engine import Engine
from onnxlint.source.cells import cell_module
from onnxlint.source.magics import mask_cell
from onnxlint.source.notebook import Cell, NotebookError, read_notebook, replace_sources


@pytest.mark.parametrize(
    ("source", "masked", "lines"),
    [
        ("%matplotlib inline\nimport torch", "pass\nimport torch", {1}),
        ("!pip install x\nx = 1", "pass\nx = 1", {1}),
        ("files = !ls\nprint(files)", "files = ...\nprint(files)", {1}),
        ("torch.onnx?\ntorch.onnx.export??", "pass\npass", {1, 2}),
        ("if x:\n    %time f()\n", "if x:\n    pass\n", {2}),
        ("%time f(a, \\\n   b)\nz = 1", "pass\n\nz = 1", {1, 2}),
        ("%%time\ny = 2", "pass\ny = 2", {1}),
        # Python that looks like IPython: a modulo continuation, a string, a comment.
        ("x = (a\n  % b)", "x = (a\n  % b)", set()),
        ('s = """\n%not a magic\n!nor this\n"""', 's = """\n%not a magic\n!nor this\n"""', set()),
        ('print("why?")  # really?', 'print("why?")  # really?', set()),
        ("time = 3\nrun(time)", "time = 3\nrun(time)", set()),
        ("run(a,\n    b)", "run(a,\n    b)", set()),
    ],
)
def test_ipython_syntax_is_masked_line_for_line(source: str, masked: str, lines: set[int]) -> None:
    cell = mask_cell(source)
    assert cell.python and cell.text == masked and cell.masked == lines
    assert cell.text.count("\n") == source.count("\n")


@pytest.mark.parametrize(
    "source", ["%%bash\nls", "%%writefile x.py\nimport torch", "pip install x", "cd .."]
)
def test_cells_that_are_not_python_are_skipped(source: str) -> None:
    assert not mask_cell(source).python


def _cells(*sources: str) -> list[Cell]:
    return [Cell(i, "code", s) for i, s in enumerate(sources)]


def test_module_lines_map_to_cells() -> None:
    module = cell_module([*_cells("a = 1\nb = 2", "c = 3\n"), Cell(2, "markdown", "# x")])
    assert module.text == "a = 1\nb = 2\nc = 3\n"
    v = Violation("nb.ipynb", Span(3, 1, 3, 2), "OLX999", "m", Severity.INFO)
    mapped = module.to_cell(v)
    assert (mapped.cell, mapped.span) == (2, Span(1, 1, 1, 2))


def test_a_fix_across_a_cell_boundary_is_dropped_and_one_in_a_cell_kept() -> None:
    module = cell_module(_cells("a = 1\nb = 2", "%time c = 3\nd = 4"))
    across = Fix("t", (Edit(Span(2, 1, 3, 2), "x"),), FixSafety.SAFE)
    on_magic = Fix("t", (Edit(Span(3, 1, 3, 2), "x"),), FixSafety.SAFE)
    inside = Fix("t", (Edit(Span(4, 1, 4, 2), "x"),), FixSafety.SAFE)
    v = Violation("nb.ipynb", Span(2, 1, 2, 2), "OLX999", "m", Severity.INFO)
    assert module.to_cell(Violation(**{**v.__dict__, "fix": across})).fix is None
    assert module.to_cell(Violation(**{**v.__dict__, "fix": on_magic})).fix is None
    # A fix in another cell than its finding is dropped too; in its own cell it is kept.
    assert module.to_cell(Violation(**{**v.__dict__, "fix": inside})).fix is None
    w = Violation("nb.ipynb", Span(4, 1, 4, 2), "OLX999", "m", Severity.INFO, inside)
    kept = module.to_cell(w).fix
    assert kept is not None and kept.edits[0].span == Span(2, 1, 2, 2)


def test_engine_checks_cells_in_notebook_order() -> None:
    engine = Engine()
    cells = _cells(
        "import torch",
        "%load_ext autoreload",
        "torch.onnx.export(m, (x,), 'm.onnx', dynamo=False)",
    )
    (v,) = [v for v in engine.check_cells("nb.ipynb", cells) if v.code == "OLX401"]
    assert v.cell == 3 and v.span.line == 1
    # The import in cell 1 is what makes `torch` torch: without it there is no finding.
    assert not [v for v in engine.check_cells("nb.ipynb", cells[1:]) if v.code == "OLX401"]


def test_replace_sources_refuses_what_it_cannot_place() -> None:
    text = json.dumps({"cells": [{"cell_type": "code", "source": "x"}], "nbformat": 4})
    nb = read_notebook(text)
    assert json.loads(replace_sources(nb, {0: "y\nz"}))["cells"][0]["source"] == "y\nz"
    with pytest.raises(NotebookError):
        replace_sources(nb, {3: "y"})
