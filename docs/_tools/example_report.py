"""Writes docs/_extra/deep/example-report.html, the deep-analysis report the docs show.

    python docs/_tools/example_report.py      (needs the `deep` extra: torch 2.13)

It copies examples/ to a temporary folder, adds one model that exports cleanly (so the report
also has ONNX Runtime's memory sweep over the dynamic batch size), and runs
`onnxlint analyze classifier encoder --verify --report` there: a real report of a real run.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ("--verify", "--no-cache", "--report")
REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "docs" / "_extra" / "deep" / "example-report.html"

ENCODER = """import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 256)
        self.out = nn.Linear(256, 16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.proj(x))).softmax(dim=-1)


def encoder():
    return Encoder().eval(), (torch.randn(4, 64),)
"""

TARGET = """
[[tool.onnxlint.targets]]
name = "encoder"
factory = "vision.encoder:encoder"
dynamic-shapes = { x = { 0 = "batch" } }
verify = true
"""


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp) / "examples"
        shutil.copytree(REPO / "examples", project)
        (project / "vision" / "encoder.py").write_text(ENCODER)
        with (project / "pyproject.toml").open("a") as f:
            f.write(TARGET)
        report = Path(tmp) / "report.html"
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "onnxlint",
                "analyze",
                "classifier",
                "encoder",
                *FLAGS,
                str(report),
            ],
            cwd=project,
        )
        if not report.exists():
            print(f"no report written (exit {run.returncode})", file=sys.stderr)
            return 1
        OUT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(report, OUT)
    print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
