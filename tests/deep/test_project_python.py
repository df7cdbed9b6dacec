"""`[tool.onnxlint.deep] python` as a relative path: the static side (installed libraries'
source) and the deep worker find the same interpreter, from the pyproject.toml's folder,
whatever the working directory; a real venv, a real worker, real torch."""

from __future__ import annotations

import json
import site
import textwrap
from pathlib import Path

import pytest

from tests.conftest import make_venv, run_cli

from .conftest import line_of

pytest.importorskip("torch")
pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]

# Only in the project's venv: the static side reads it (no Dropout: no OLX201), the worker
# imports it (its data-dependent branch fails torch.export at its own line).
LIBRARY = """
import torch.nn as nn


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 3, padding=1)

    def forward(self, x):
        y = self.conv(x)
        if y.sum() > 0:
            return y * 2
        return y
"""

SCRIPT = """
import torch
from venvlib import Plain

torch.onnx.export(Plain(), (torch.randn(1, 3, 8, 8),), "plain.onnx", dynamo=True)
"""


def _venv(folder: Path) -> Path:
    """A real venv (no pip) with `venvlib` in its site-packages and, through a .pth file,
    this interpreter's (torch, onnx), so that a worker runs under it."""
    _python, site_packages = make_venv(folder)
    (site_packages / "venvlib").mkdir(parents=True)
    (site_packages / "venvlib" / "__init__.py").write_text(textwrap.dedent(LIBRARY).lstrip())
    (site_packages / "outer.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return site_packages / "venvlib" / "__init__.py"


def test_a_relative_python_is_from_the_pyproject_for_both_sides(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.onnxlint.deep]\npython = ".venv/bin/python"\n')
    (root / "export.py").write_text(textwrap.dedent(SCRIPT).lstrip())
    library = _venv(root / ".venv")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()

    r = run_cli("check", str(root), "--deep", "--format", "json", "--no-cache", cwd=elsewhere)
    assert r.returncode == 1, r.stderr[-3000:]
    found = json.loads(r.stdout)
    # static: Plain's source was read from the venv (unread, OLX201 would say "unsure")
    assert not [f for f in found if f["code"] == "OLX201"], found
    # deep: the worker imported venvlib from the same venv and torch.export stopped in it
    stops = [(Path(f["path"]).resolve(), f["line"]) for f in found if f["code"] == "OLX802"]
    assert stops == [(library.resolve(), line_of(library, "if y.sum() > 0"))], (found, r.stderr)
