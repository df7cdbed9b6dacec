"""Jupyter notebooks through the real `onnxlint` command (issue 16): hand-written notebooks,
checked, fixed and reported like `.py` files, with findings naming their cell."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import nbformat
import pytest

DATA = Path(__file__).parent / "data"
EXPORT_BAD = "torch.onnx.export(model, (x,), 'm.onnx', dynamo=False)"
# A 1x1 PNG, as a notebook stores an image output.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9aw"
    "AAAABJRU5ErkJggg=="
)


def code(source: str, n: int, outputs: list[Any] | None = None) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": n,
        "id": f"cell-{n}",
        "metadata": {"tags": ["t"], "collapsed": False},
        "outputs": outputs or [],
        "source": source.splitlines(True),
    }


def markdown(source: str, n: int) -> dict[str, Any]:
    return {"cell_type": "markdown", "id": f"md-{n}", "metadata": {}, "source": [source]}


def notebook(*cells: dict[str, Any], indent: int = 1) -> str:
    nb = {
        "cells": list(cells),
        "metadata": {
            "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
            "language_info": {"name": "python"},
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=indent, ensure_ascii=False) + "\n"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


IMPORTS = "import torch\nimport torch.nn as nn"


def test_magics_shell_help_and_cell_magics_do_not_break_the_parse(cli, tmp_path: Path) -> None:
    nb = notebook(
        code("%matplotlib inline\n!pip install onnx\n" + IMPORTS + "\ntorch.nn?\nfiles = !ls", 1),
        code("pip install onnxscript", 2),  # automagic: a command, not Python
        code("%%bash\necho " + EXPORT_BAD, 3),  # not Python: never reported
        code("%%time\nmodel = nn.Linear(2, 2).eval()\nx = torch.randn(1, 2)", 4),
        code("%time y = model(x)\n" + EXPORT_BAD + "  # exported", 5),
    )
    f = write(tmp_path / "nb.ipynb", nb)
    r = cli("check", str(f), "--no-cache", "--format", "json")
    found = json.loads(r.stdout)
    assert r.returncode == 1, r.stderr
    assert [(v["code"], v["cell"], v["line"], v["column"]) for v in found] == [("OLX401", 5, 2, 42)]


def test_a_class_in_one_cell_exported_in_another_is_understood(cli, tmp_path: Path) -> None:
    model = (
        "class Net(nn.Module):\n    def forward(self, x):\n"
        "        n = int(x.shape[0])\n        return x.view(n, -1)"
    )
    export = (
        "torch.onnx.export(model, (x,), 'm.onnx',\n"
        "                  dynamic_shapes={'x': {0: torch.export.Dim('batch')}})"
    )
    with_export = notebook(
        code(IMPORTS, 1),
        markdown("## The model", 2),
        code(model, 3),
        code("model = Net().eval()\nx = torch.randn(2, 3)", 4),
        code(export, 5),
    )
    f = write(tmp_path / "a" / "nb.ipynb", with_export)
    r = cli("check", str(f), "--no-cache")
    assert r.returncode == 1
    assert "nb.ipynb:cell 3:3:13: warning[OLX104]" in r.stdout
    assert "declares dynamic" in r.stdout
    assert "3 |         n = int(x.shape[0])" in r.stdout  # the frame is the cell's
    # Without the export cell nothing declares the dimension dynamic: the batch is still
    # one an export usually makes dynamic, said as unreached code (issue 30).
    without = notebook(code(IMPORTS, 1), code(model, 2))
    g = write(tmp_path / "b" / "nb.ipynb", without)
    out = cli("check", str(g), "--no-cache").stdout
    assert "nb.ipynb:cell 2:3:13: warning[OLX104]" in out
    assert "reads dim 0 (batch) of input `x`" in out and "declares dynamic" not in out
    assert "no export in this project reaches it" in out


def _three_cells(indent: int = 1) -> str:
    image = {
        "data": {"image/png": PNG, "text/plain": ["<Figure size 640x480 with 1 Axes>"]},
        "metadata": {"needs_background": "light"},
        "output_type": "display_data",
    }
    stream = {"name": "stdout", "output_type": "stream", "text": ["ok ünïcode\n"]}
    return notebook(
        code(IMPORTS + "\nmodel = nn.Linear(2, 2).eval()\nx = torch.randn(1, 2)", 1, [stream]),
        code("# export it\n" + EXPORT_BAD + "\nprint('done')\n", 2, [image]),
        code("%timeit model(x)\nprint(model)", 3, [image]),
        indent=indent,
    )


def test_fix_in_the_middle_cell_changes_only_its_source(cli, tmp_path: Path) -> None:
    before = _three_cells()
    f = write(tmp_path / "nb.ipynb", before)
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Fixed 1 problem" in r.stdout
    after = f.read_text()
    fixed_line = EXPORT_BAD.replace("dynamo=False", "dynamo=True")
    assert after == before.replace(json.dumps(EXPORT_BAD + "\n"), json.dumps(fixed_line + "\n"))
    nbformat.validate(nbformat.reads(after, as_version=4))
    old, new = json.loads(before), json.loads(after)
    assert old["cells"][0] == new["cells"][0] and old["cells"][2] == new["cells"][2]
    assert new["cells"][1]["outputs"] == old["cells"][1]["outputs"]


def test_crlf_and_one_space_json_are_kept(cli, tmp_path: Path) -> None:
    before = _three_cells(indent=1).replace("\n", "\r\n")
    f = tmp_path / "nb.ipynb"
    f.write_bytes(before.encode())
    r = cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    after = f.read_bytes().decode()
    assert after.endswith("}\r\n") and "\n" not in after.replace("\r\n", "")
    assert after == before.replace("dynamo=False", "dynamo=True")


def test_source_as_one_string_and_four_space_json(cli, tmp_path: Path) -> None:
    nb = json.loads(_three_cells())
    for cell in nb["cells"]:
        cell["source"] = "".join(cell["source"])
    before = json.dumps(nb, indent=4) + "\n"  # ensure_ascii: \u escapes kept as they are
    f = write(tmp_path / "nb.ipynb", before)
    assert cli("check", str(f), "--fix", "--unsafe-fixes", "--no-cache").returncode == 0
    assert f.read_text() == before.replace("dynamo=False", "dynamo=True")


def test_diff_names_the_cell_and_writes_nothing(cli, tmp_path: Path) -> None:
    before = _three_cells()
    f = write(tmp_path / "nb.ipynb", before)
    r = cli("check", str(f), "--diff", "--unsafe-fixes", "--no-cache")
    assert r.returncode == 1
    assert f"--- a/{f}:cell 2\n+++ b/{f}:cell 2\n" in r.stdout
    assert "-" + EXPORT_BAD + "\n+" + EXPORT_BAD.replace("False", "True") in r.stdout
    assert f.read_text() == before


def test_suppressions_and_ignore_file_in_cells(cli, tmp_path: Path) -> None:
    line = notebook(code(IMPORTS, 1), code(EXPORT_BAD + "  # onnxlint: ignore[OLX401]", 2))
    assert cli("check", str(write(tmp_path / "a.ipynb", line)), "--no-cache").returncode == 0
    whole = notebook(code(EXPORT_BAD, 1), code("# onnxlint: ignore-file\nx = 1", 2))
    assert cli("check", str(write(tmp_path / "b.ipynb", whole)), "--no-cache").returncode == 0
    other = notebook(code(IMPORTS, 1), code(EXPORT_BAD + "  # onnxlint: ignore[OLX402]", 2))
    assert cli("check", str(write(tmp_path / "c.ipynb", other)), "--no-cache").returncode == 1


@pytest.mark.parametrize(
    ("content", "expect"),
    [
        ('{\n "cells": [\n  {"cell_type": "code",,}\n ]\n}\n', "nb.ipynb:3:"),
        (
            json.dumps({"nbformat": 3, "nbformat_minor": 0, "cells": [], "worksheets": []}),
            "nbconvert",
        ),
        ("[1, 2]", "no `cells` list"),
        ("", "JSON is broken"),
    ],
)
def test_a_broken_notebook_gets_one_clear_line(
    cli, tmp_path: Path, content: str, expect: str
) -> None:
    f = write(tmp_path / "nb.ipynb", content)
    write(tmp_path / "ok.py", "import torch\n" + EXPORT_BAD.replace("model", "m") + "\n")
    r = cli("check", str(tmp_path), "--no-cache")
    assert r.returncode == 1
    assert "Traceback" not in r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "nb.ipynb" in ln]
    assert len(lines) == 1 and "error[OLX000]" in lines[0] and expect in r.stdout, r.stdout
    assert "ok.py:2:" in r.stdout  # the run goes on
    assert "Traceback" not in cli("check", str(f), "--fix", "--no-cache").stderr


def test_folders_include_notebooks_with_the_same_exclusions(cli, tmp_path: Path) -> None:
    nb = notebook(code(IMPORTS, 1), code(EXPORT_BAD, 2))
    write(tmp_path / "pyproject.toml", '[tool.onnxlint]\nextend-exclude = ["skipped/*"]\n')
    write(tmp_path / "work" / "nb.ipynb", nb)
    write(tmp_path / "skipped" / "nb.ipynb", nb)
    write(tmp_path / ".venv" / "pyvenv.cfg", "")
    write(tmp_path / ".venv" / "nb.ipynb", nb)
    write(tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb", nb)
    r = cli("check", ".", "--no-cache", "--format", "json", cwd=tmp_path)
    paths = {v["path"] for v in json.loads(r.stdout)}
    assert paths == {"work/nb.ipynb"}, r.stdout


def test_sarif_and_github_point_at_the_notebook_file(cli, tmp_path: Path) -> None:
    before = _three_cells()
    f = write(tmp_path / "nb.ipynb", before)
    json_line = 1 + before.splitlines().index("    " + json.dumps(EXPORT_BAD + "\n") + ",")
    column = 1 + len('    "') + EXPORT_BAD.index("dynamo=False")
    r = cli("check", str(f), "--format", "sarif", "--no-cache")
    doc = json.loads(r.stdout)
    jsonschema.validate(doc, json.loads((DATA / "sarif-schema-2.1.0.json").read_text()))
    (result,) = doc["runs"][0]["results"]
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (json_line, column)
    assert result["message"]["text"].startswith("cell 2:2:")
    r = cli("check", str(f), "--format", "github", "--no-cache")
    assert f"line={json_line},col={column}," in r.stdout and "::OLX401 cell 2:2:" in r.stdout


def test_results_cache_keeps_the_cell(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.onnxlint]\n")
    write(tmp_path / "nb.ipynb", _three_cells())
    first = cli("check", ".", "--format", "json", cwd=tmp_path)
    second = cli("check", ".", "--format", "json", cwd=tmp_path)
    assert (tmp_path / ".onnxlint_cache").is_dir()
    assert json.loads(first.stdout) == json.loads(second.stdout)
    assert json.loads(second.stdout)[0]["cell"] == 2


def test_stdin_notebook(cli) -> None:
    r = cli("check", "--stdin-filename", "nb.ipynb", "--no-cache", stdin=_three_cells())
    assert r.returncode == 1 and "nb.ipynb:cell 2:2:" in r.stdout


def test_a_model_file_names_the_notebook_cell_that_exports_it(cli, tmp_path: Path) -> None:
    write(tmp_path / "pyproject.toml", "[tool.onnxlint]\n")
    write(tmp_path / "models" / "__init__.py", "")
    write(
        tmp_path / "models" / "net.py",
        "import torch.nn as nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
        "        n = int(x.shape[0])\n        return x.view(n, -1)\n",
    )
    export = (
        "model = Net().eval()\nx = torch.randn(2, 3)\n"
        "torch.onnx.export(model, (x,), 'm.onnx',\n"
        "                  dynamic_shapes={'x': {0: torch.export.Dim('batch')}})"
    )
    nb = notebook(
        code("import torch\nfrom models.net import Net", 1), markdown("x", 2), code(export, 3)
    )
    write(tmp_path / "export.ipynb", nb)
    r = cli("check", "models/net.py", "--no-cache", cwd=tmp_path)
    assert "models/net.py:6:13: warning[OLX104]" in r.stdout
    assert "export.ipynb:cell 3:3 declares dynamic" in r.stdout, r.stdout


def test_a_cell_that_does_not_parse_is_reported_in_it(cli, tmp_path: Path) -> None:
    nb = notebook(code(IMPORTS, 1), code("def broken(:\n    pass", 2), code(EXPORT_BAD, 3))
    r = cli("check", str(write(tmp_path / "nb.ipynb", nb)), "--no-cache", "--format", "json")
    found = [(v["code"], v["cell"], v["line"]) for v in json.loads(r.stdout)]
    assert ("OLX000", 2, 1) in found and ("OLX401", 3, 1) in found, found


def test_a_notebook_of_another_language_is_not_checked(cli, tmp_path: Path) -> None:
    nb = json.loads(notebook(code(IMPORTS, 1), code(EXPORT_BAD, 2)))
    f = tmp_path / "nb.ipynb"
    f.write_text(json.dumps(nb))
    assert cli("check", str(f), "--no-cache").returncode == 1  # Python: checked
    nb["metadata"]["language_info"] = {"name": "R"}
    nb["metadata"]["kernelspec"] = {"name": "ir", "display_name": "R", "language": "R"}
    f.write_text(json.dumps(nb))
    r = cli("check", str(f), "--no-cache")
    assert r.returncode == 0 and "All checks passed" in r.stdout, r.stdout
