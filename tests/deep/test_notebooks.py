"""The deep analysis of a Jupyter notebook (onnxlint/deep/notebooks.py): its code cells run in
order as one script, its findings and proven fixes at (cell, line), as the static engine's.

The notebook defines the model with a tensor-dependent `if` in one cell and exports it in a
later one, between cells of IPython syntax (`%matplotlib`, `!pip install`, a `%%bash` cell,
`files = !ls`) that a plain `exec` of the cells would stop at. Real worker, real torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.deep, pytest.mark.slow, pytest.mark.xdist_group("deep")]

MODEL_CELL = """\
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if y.sum() > 0:
            y = y * 2
        else:
            y = y - 1
        return y
"""
IF_CELL, IF_LINE = 3, 8  # cell numbers are 1-based indexes in the `cells` array, as ruff's
EXPORT_CELL, EXPORT_LINE = 6, 2

CELLS: list[tuple[str, str]] = [
    ("markdown", "# Export the model\n"),
    ("code", "%matplotlib inline\n!pip install onnx\nimport torch\nfiles = !ls\n"),
    ("code", MODEL_CELL),
    ("code", "%%bash\necho not python\n"),
    ("markdown", "Now export it:"),
    (
        "code",
        'model = M().eval()\ntorch.onnx.export(model, (torch.randn(3, 4),), "m.onnx", dynamo=True)',
    ),
]


def notebook(cells: list[tuple[str, str]] = CELLS) -> str:
    """nbformat 4 JSON as Jupyter writes it: sources as lists of lines, outputs kept."""
    out: list[dict[str, Any]] = []
    for kind, source in cells:
        cell: dict[str, Any] = {
            "cell_type": kind,
            "metadata": {},
            "source": source.splitlines(True),
        }
        if kind == "code":
            cell |= {
                "execution_count": 3,
                "outputs": [{"name": "stdout", "output_type": "stream", "text": ["kept\n"]}],
            }
        out.append(cell)
    data = {
        "cells": out,
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(data, indent=1) + "\n"


def _findings(stdout: str) -> list[tuple[str, int | None, int]]:
    return [(v["code"], v.get("cell"), v["line"]) for v in json.loads(stdout)]


def test_analyze_places_the_finding_in_the_cell_of_the_if(cli, tmp_path: Path) -> None:
    (tmp_path / "export.ipynb").write_text(notebook())
    r = cli("analyze", "--no-cache", "export.ipynb", cwd=tmp_path)
    # the target is the export call, named by its cell; the run got past every magic
    assert f"export.ipynb:cell {EXPORT_CELL}:{EXPORT_LINE}: fails at step 1/3" in r.stdout, r.stderr
    assert f"export.ipynb:cell {IF_CELL}:{IF_LINE}:9: OLX802 [error]" in r.stdout, r.stdout
    assert r.returncode == 1

    r = cli("analyze", "--format", "json", "export.ipynb", cwd=tmp_path)
    found = json.loads(r.stdout)["violations"]
    assert ("OLX802", IF_CELL, IF_LINE) in [(v["code"], v.get("cell"), v["line"]) for v in found]


def test_check_deep_reports_the_cell_in_every_format(cli, tmp_path: Path) -> None:
    # The deep OLX802 of the `if` confirms the static OLX101 of the same line: one finding
    # per cause, in its cell, the deep one its related place (at the cell's line).
    (tmp_path / "export.ipynb").write_text(notebook())
    r = cli("check", "--deep", "--format", "json", "export.ipynb", cwd=tmp_path)
    rows = json.loads(r.stdout)
    assert ("OLX101", IF_CELL, IF_LINE) in _findings(r.stdout), (r.stdout, r.stderr)
    assert ("OLX802", IF_CELL, IF_LINE) not in _findings(r.stdout)
    (row,) = [v for v in rows if v["code"] == "OLX101" and v["line"] == IF_LINE]
    assert row["message"].endswith("(confirmed by the deep analysis)")
    assert any(
        x["message"].startswith("OLX802 (deep): ") and x["line"] == IF_LINE for x in row["related"]
    ), row

    r = cli("check", "--deep", "export.ipynb", cwd=tmp_path)
    assert f"export.ipynb:cell {IF_CELL}:{IF_LINE}:12: error[OLX101]" in r.stdout, r.stdout
    assert "(confirmed by the deep analysis)" in r.stdout
    assert "        if y.sum() > 0:" in r.stdout  # the cell's own line is shown

    r = cli("check", "--deep", "--format", "github", "export.ipynb", cwd=tmp_path)
    (line,) = [x for x in r.stdout.splitlines() if "confirmed by the deep analysis" in x]
    assert f"OLX101 cell {IF_CELL}:{IF_LINE}:12: " in line
    json_line = next(
        i
        for i, t in enumerate((tmp_path / "export.ipynb").read_text().splitlines(), 1)
        if "if y.sum() > 0" in t
    )
    assert line.startswith(f"::error file=export.ipynb,line={json_line},")

    r = cli("check", "--deep", "--format", "sarif", "export.ipynb", cwd=tmp_path)
    results = json.loads(r.stdout)["runs"][0]["results"]
    (found,) = [x for x in results if "confirmed by the deep analysis" in x["message"]["text"]]
    assert found["ruleId"] == "OLX101"
    assert found["locations"][0]["physicalLocation"]["region"]["startLine"] == json_line
    assert found["message"]["text"].startswith(f"cell {IF_CELL}:{IF_LINE}:12: ")


def test_fix_rewrites_the_if_in_its_cell_and_the_next_analysis_is_clean(
    cli, tmp_path: Path
) -> None:
    path = tmp_path / "export.ipynb"
    original = notebook()
    path.write_text(original)
    r = cli(
        "check", "--deep", "--no-cache", "--diff", "--unsafe-fixes", "export.ipynb", cwd=tmp_path
    )
    assert f"--- a/export.ipynb:cell {IF_CELL}" in r.stdout, (r.stdout, r.stderr)
    assert "+        y = torch.where(y.sum() > 0, y * 2, y - 1)" in r.stdout
    assert (
        f"export.ipynb:cell {IF_CELL}:{IF_LINE}: OLX802: proven: Rewrite with torch.where"
        in r.stderr
    )
    assert path.read_text() == original  # --diff writes nothing

    r = cli(
        "check",
        "--deep",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        "--format",
        "json",
        "export.ipynb",
        cwd=tmp_path,
    )
    assert not [f for f in _findings(r.stdout) if f[0] in ("OLX802", "OLX101")], r.stdout
    # only the source of the model's cell changed: the other cells, outputs and metadata kept
    want = json.loads(original)
    want["cells"][IF_CELL - 1]["source"] = MODEL_CELL.replace(
        "        if y.sum() > 0:\n            y = y * 2\n        else:\n            y = y - 1\n",
        "        y = torch.where(y.sum() > 0, y * 2, y - 1)\n",
    ).splitlines(True)
    assert json.loads(path.read_text()) == want

    r = cli("analyze", "--no-cache", "export.ipynb", cwd=tmp_path)
    assert f"export.ipynb:cell {EXPORT_CELL}:{EXPORT_LINE}: ok, 0 findings" in r.stdout, r.stderr
    assert r.returncode == 0


def test_the_notebook_runs_in_its_own_folder_with_its_magics_masked(cli, tmp_path: Path) -> None:
    """`!pip install`, `%matplotlib`, `files = !ls` and a `%%bash` cell do not stop the run,
    and a file the notebook reads by a relative path is found beside it (Jupyter's working
    directory), wherever onnxlint runs from."""
    folder = tmp_path / "notebooks"
    folder.mkdir()
    (folder / "sizes.json").write_text('{"features": 4}')
    cells = [
        ("code", "!pip install torch\n%load_ext autoreload\nimport json\nimport torch\n"),
        ("code", "%%time\nfeatures = json.load(open('sizes.json'))['features']\n"),
        ("code", "%%bash\nls -l\n"),
        ("code", "lin = torch.nn.Linear(features, 2)\n"),
        (
            "code",
            "!echo exporting\n"
            "torch.onnx.export(lin, (torch.randn(3, features),), 'l.onnx', dynamo=True)\n",
        ),
    ]
    (folder / "lin.ipynb").write_text(notebook(cells))
    r = cli("analyze", "--no-cache", "notebooks/lin.ipynb", cwd=tmp_path)
    assert "notebooks/lin.ipynb:cell 5:2: ok, 0 findings" in r.stdout, (r.stdout, r.stderr)
    assert r.returncode == 0


def test_a_broken_notebook_is_a_clear_message(cli, tmp_path: Path) -> None:
    (tmp_path / "broken.ipynb").write_text('{"cells": [\n')
    r = cli("analyze", "broken.ipynb", cwd=tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == (
        "onnxlint: broken.ipynb: not a valid notebook: the JSON is broken (Expecting value); "
        "repair it, or open and save it in Jupyter"
    )
    assert "Traceback" not in r.stdout + r.stderr
    r = cli("analyze", "export.ipynb:cell 2:1", cwd=tmp_path)
    assert r.stderr.strip() == "onnxlint: no such notebook: export.ipynb"
    (tmp_path / "export.ipynb").write_text(notebook())
    r = cli("analyze", "export.ipynb:cell 4:1", cwd=tmp_path)  # the %%bash cell
    assert r.stderr.strip() == "onnxlint: export.ipynb: the notebook has no code line at cell 4:1"
    assert r.returncode == 2
