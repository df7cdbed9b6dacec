"""`onnxlint check --add-noqa`: a suppression comment on every line with a finding, nothing else.

Each test runs the real command on files in a temporary folder and then the real check again.
"""

from __future__ import annotations

import ast
import io
import json
import os
import stat
import tokenize
from pathlib import Path

import pytest

from onnxlint.core.suppression import add_noqa
from onnxlint.core.violation import Severity, Span, Violation

MODEL = '''\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        n = int(x.item())  # noqa: E501
        y = x.view(n, -1)
        z = x.numpy()  # onnxlint: ignore[OLX101]
        global STEP  # keep: debugging
        msg = """a string
        with x.item() inside"""
        return y + torch.tensor(z)
'''

EXPORT = """\
import torch

from model import Net


def export():
    model = Net()
    torch.onnx.export(
        model,
        (torch.randn(2, 3),),
        "m.onnx",
        dynamo=False,
        do_constant_folding=True,
    )
    torch.onnx.export(model.eval(), (torch.randn(2, 3),), "n.onnx", \\
        opset_version=13)
"""


def _code_tokens(text: str) -> list[tuple[int, str]]:
    return [
        (t.type, t.string)
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
    ]


def _findings(cli, path: Path) -> list[dict]:
    r = cli("check", "--format", "json", "--no-cache", str(path))
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.onnxlint]\n")
    (tmp_path / "model.py").write_text(MODEL)
    (tmp_path / "export.py").write_text(EXPORT)
    return tmp_path


def test_every_finding_is_suppressed_and_only_comments_are_added(cli, project: Path) -> None:
    before = {p: p.read_text() for p in project.glob("*.py")}
    found = _findings(cli, project)
    assert len(found) >= 6, found
    r = cli("check", "--add-noqa", "--no-cache", str(project))
    lines_with_findings = {(f["path"], f["line"]) for f in found}
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("Added ")
    added = int(r.stdout.split()[1])
    assert 0 < added <= len(lines_with_findings)
    assert "All checks passed" in r.stdout
    assert _findings(cli, project) == []
    for path, old in before.items():
        new = path.read_text()
        ast.parse(new)
        assert _code_tokens(new) == _code_tokens(old), path
        assert len(new.splitlines()) == len(old.splitlines())
        for a, b in zip(old.splitlines(), new.splitlines(), strict=True):
            assert a == b or b.startswith(a.rstrip()) or "# noqa: E501, " in b or "ignore[" in b


def test_existing_suppressions_are_merged_and_other_comments_kept(cli, project: Path) -> None:
    r = cli("check", "--add-noqa", "--no-cache", str(project))
    assert r.returncode == 0, r.stdout + r.stderr
    model = (project / "model.py").read_text().splitlines()
    assert model[6] == "        if x.sum() > 0:  # noqa: OLX101"
    assert model[8] == "        n = int(x.item())  # noqa: E501, OLX102"
    assert model[9] == "        y = x.view(n, -1)"
    assert model[10] == "        z = x.numpy()  # onnxlint: ignore[OLX101, OLX103]"
    assert model[11] == "        global STEP  # keep: debugging  # noqa: OLX106"
    # the string's lines are untouched
    assert '        msg = """a string' in model and '        with x.item() inside"""' in model


def test_a_backslash_continuation_gets_the_comment_on_the_statements_last_line(
    cli, project: Path
) -> None:
    found = [f for f in _findings(cli, project) if f["path"].endswith("export.py")]
    assert any(f["code"] == "OLX501" for f in found), found
    r = cli("check", "--add-noqa", "--no-cache", str(project))
    assert r.returncode == 0, r.stdout + r.stderr
    export = (project / "export.py").read_text().splitlines()
    assert export[14].endswith("\\"), "nothing after a backslash"
    assert export[15].startswith("        opset_version=13)  # noqa: ")
    assert "# noqa: OLX401" in export[11]


def test_a_second_run_changes_nothing(cli, project: Path) -> None:
    assert cli("check", "--add-noqa", str(project)).returncode == 0
    after = {p: p.read_bytes() for p in project.glob("*.py")}
    again = cli("check", "--add-noqa", str(project))
    assert again.returncode == 0
    assert again.stdout.startswith("Added 0 noqa comments to 0 files.")
    assert {p: p.read_bytes() for p in project.glob("*.py")} == after


def test_line_endings_encoding_and_permissions_are_kept(cli, tmp_path: Path) -> None:
    path = tmp_path / "m.py"
    text = "# -*- coding: latin-1 -*-\r\n" + MODEL.replace("\n", "\r\n").replace("keep", "k\xe9ep")
    assert "k\xe9ep" in text
    path.write_bytes(text.encode("latin-1"))
    os.chmod(path, 0o640)
    assert cli("check", "--add-noqa", str(path)).returncode == 0
    raw = path.read_bytes()
    assert b"\r\n" in raw and raw.count(b"\r\n") == text.count("\r\n")
    assert "k\xe9ep".encode("latin-1") in raw and b"# noqa: OLX101" in raw
    assert stat.S_IMODE(path.stat().st_mode) == 0o640


def test_a_notebook_gets_the_comments_in_its_cells_and_nothing_else(cli, tmp_path: Path) -> None:
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    nb = {
        "cells": [
            {**cell, "source": ["%matplotlib inline\n", "import torch\n"]},
            {"cell_type": "markdown", "metadata": {}, "source": ["# A model\n"]},
            {**cell, "source": MODEL.splitlines(keepends=True)[1:]},
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(nb, indent=1) + "\n")
    found = _findings(cli, path)
    assert found and all(f["cell"] == 3 for f in found)
    r = cli("check", "--add-noqa", str(path))
    assert r.returncode == 0, r.stdout + r.stderr
    assert _findings(cli, path) == []
    after = json.loads(path.read_text())
    assert after["cells"][:2] == nb["cells"][:2]
    assert {k: v for k, v in after.items() if k != "cells"} == {
        k: v for k, v in nb.items() if k != "cells"
    }
    source = "".join(after["cells"][2]["source"])
    assert "if x.sum() > 0:  # noqa: OLX101" in source
    assert _code_tokens(source) == _code_tokens("".join(nb["cells"][2]["source"]))


def test_a_file_that_does_not_parse_keeps_its_finding(cli, tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("import torch\ndef f(:\n    pass\n")
    r = cli("check", "--add-noqa", str(tmp_path))
    assert r.returncode == 1
    assert "OLX000" in r.stdout
    assert (tmp_path / "broken.py").read_text() == "import torch\ndef f(:\n    pass\n"


def test_the_selection_applies(cli, project: Path) -> None:
    r = cli("check", "--add-noqa", "--select", "OLX101", str(project))
    assert r.returncode == 0
    text = (project / "model.py").read_text() + (project / "export.py").read_text()
    assert "# noqa: OLX101" in text and "OLX102" not in text and "OLX401" not in text


def test_it_does_not_go_with_fix(cli, project: Path) -> None:
    r = cli("check", "--add-noqa", "--fix", str(project))
    assert r.returncode == 2 and "--add-noqa" in r.stderr


def _v(line: int, code: str = "OLX101") -> Violation:
    return Violation("m.py", Span(line, 1, line, 2), code, "m", Severity.ERROR)


def test_a_finding_inside_a_multiline_string_is_suppressed_at_the_statements_end() -> None:
    text = 'x = f(a, """\nline\n""", b)\ny = 1\n'
    new, added, left = add_noqa(text, [_v(2)])
    assert (new, added, left) == ('x = f(a, """\nline\n""", b)  # noqa: OLX101\ny = 1\n', 1, [])


def test_nothing_is_written_when_the_text_does_not_tokenize() -> None:
    text = "x = (1,\n"
    assert add_noqa(text, [_v(1)]) == (text, 0, [_v(1)])
