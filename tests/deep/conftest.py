"""Shared fixtures for the deep tests: a small project on disk and ONE warm worker.

The worker is started once per session (importing torch costs seconds); each
test's analysis runs in a fresh forked child of it, as in production.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

MODELS = """
import torch


class Breaks(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        print("first statement")
        y = self.proj(x)
        if y.sum().item() > 0:
            y = y * 2
        e = torch.linalg.eigh(y.T @ y)[0]
        d = torch.cdist(y, y)
        m = torch.median(y, dim=1).values
        if m.sum() > 1:
            m = m + 1
        return e.sum() + d.sum() + m.sum()


def breaks():
    return Breaks(), (torch.randn(3, 4),)


class Clean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 8)

    def forward(self, x):
        return torch.relu(self.proj(x)).softmax(-1)


def clean():
    return Clean().eval(), (torch.randn(3, 4),), {}, ({0: "batch"},)


class Specialized(torch.nn.Module):
    def forward(self, x):
        return x.view(2, 12) * 2


def specialized():
    return Specialized(), (torch.randn(2, 3, 4),), {}, ({0: "batch"},)


# onnxlint: target
def marked():
    return Clean().eval(), (torch.randn(2, 4),)


def not_a_tuple():
    return Clean()


def raises():
    raise RuntimeError("weights.pt not found")
"""

CUSTOM = """
import torch
from onnxscript import opset18 as op


@torch.library.custom_op("olxtest::nofake", mutates_args=())
def nofake(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@torch.library.custom_op("olxtest::twice", mutates_args=())
def twice(x: torch.Tensor) -> torch.Tensor:
    return x * 2


@twice.register_fake
def _(x):
    return torch.empty_like(x)


def twice_onnx(x):
    return op.Add(x, x)


TABLE = {torch.ops.olxtest.twice.default: twice_onnx}


def twice_wrong_type(x):
    return op.Cast(x, to=7)  # INT64, where torch says float32


BAD_TABLE = {torch.ops.olxtest.twice.default: twice_wrong_type}


class NoFake(torch.nn.Module):
    def forward(self, x):
        return nofake(x) + 1


class NoTranslation(torch.nn.Module):
    def forward(self, x):
        return twice(x) + 1


def no_fake():
    return NoFake(), (torch.randn(2, 3),)


def no_translation():
    return NoTranslation(), (torch.randn(2, 3),)
"""

FAULTS = """
import ctypes
import os

import torch


def segfault():
    ctypes.string_at(0)


def hard_exit():
    os._exit(3)


def spin():
    while True:
        pass


def hog():
    blocks = []
    while True:
        blocks.append(bytearray(64 * 2**20))
"""

PYPROJECT = """
[project]
name = "deepproj"

[[tool.onnxlint.targets]]
name = "breaks"
factory = "deepproj.models:breaks"

[[tool.onnxlint.targets]]
name = "clean"
factory = "deepproj.models:clean"
dynamic_shapes = [{0 = "batch"}]
"""


def write_project(root: Path) -> Path:
    pkg = root / "deepproj"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(textwrap.dedent(MODELS).lstrip())
    (pkg / "custom.py").write_text(textwrap.dedent(CUSTOM).lstrip())
    (pkg / "faults.py").write_text(textwrap.dedent(FAULTS).lstrip())
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT).lstrip())
    return root


def line_of(path: Path, needle: str) -> int:
    for i, line in enumerate(path.read_text().splitlines(), 1):
        if needle in line:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


@pytest.fixture(scope="session")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_project(tmp_path_factory.mktemp("deepproj"))


@pytest.fixture(scope="session")
def analyzer() -> Iterator[object]:
    pytest.importorskip("torch")
    from onnxlint.deep.analyzer import DeepAnalyzer

    a = DeepAnalyzer()
    a.start()
    yield a
    a.shutdown()
