"""OLX2xx scenarios: whole export scripts, module-level flow across blocks, re-checks."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest

from onnxlint.core.config import parse_table
from onnxlint.engine import Engine

CONFIG = parse_table({"select": ["OLX2"]}, None)


def _codes(engine: Engine, code: str) -> list[tuple[int, str]]:
    return [(v.line, v.code) for v in engine.check("script.py", code, CONFIG)]


TRAIN_SCRIPT = textwrap.dedent(
    """
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(25, 2)
            self.drop = nn.Dropout(0.5)

        def forward(self, features):
            return self.fc(self.drop(features))


    def train(model, loader, optimizer):
        model.train()
        for data, target in loader:
            F.cross_entropy(model(data), target).backward()
            optimizer.step()


    def test(model, loader):
        model.eval()
        with torch.no_grad():
            for data, _ in loader:
                model(data)


    model = Net()
    optimizer = torch.optim.Adam(model.parameters())
    for epoch in range(10):
        train(model, train_loader, optimizer)
        test(model, test_loader)


    if __name__ == "__main__":
        example = torch.rand(1, 25)
        torch.onnx.export(model, (example,), "m.onnx")
    """
).lstrip()


def test_local_helpers_decide_the_mode_across_blocks() -> None:
    engine = Engine()
    assert _codes(engine, TRAIN_SCRIPT) == []
    # Drop the evaluation step: the last thing the loop does is train().
    edited = TRAIN_SCRIPT.replace("    test(model, test_loader)\n", "")
    assert _codes(engine, edited) == [(38, "OLX201")]
    # And back: the finding goes away on the next check (no stale cached result).
    assert _codes(engine, TRAIN_SCRIPT) == []


def test_train_after_validation_is_olx202() -> None:
    code = TRAIN_SCRIPT.replace(
        "    test(model, test_loader)\n",
        "    test(model, test_loader)\n    model.train()\n",
    )
    assert _codes(Engine(), code) == [(40, "OLX202")]


def test_data_parallel_wrapper_of_an_eval_model_is_not_flagged() -> None:
    code = textwrap.dedent(
        """
        import torch
        from torch import nn
        from mypkg import Net

        net = Net()
        net.eval()
        model = nn.DataParallel(net)
        torch.onnx.export(model.module, (x,), "m.onnx")
        """
    )
    assert _codes(Engine(), code) == []


def test_unknown_origins_are_not_flagged() -> None:
    code = textwrap.dedent(
        """
        import torch

        def export(model, path):
            torch.onnx.export(model, (x,), path)

        def from_checkpoint(path):
            model = torch.load(path)
            torch.onnx.export(model, (x,), "m.onnx")

        def through_external_helper():
            model = Net()
            prepare_for_inference(model)
            torch.onnx.export(model, (x,), "m.onnx")

        def with_kwargs(**kw):
            model = Net()
            torch.onnx.export(model, (x,), "m.onnx", **kw)
        """
    )
    assert _codes(Engine(), code) == []


def test_early_return_branch_does_not_leak_training_mode() -> None:
    code = textwrap.dedent(
        """
        import torch

        def main(args):
            model = Net()
            if args.train:
                fit(model)
                return
            elif args.resume:
                model.load_state_dict(torch.load(args.resume))
                model.eval()
            else:
                raise SystemExit("nothing to export")
            torch.onnx.export(model, (x,), "m.onnx")
        """
    )
    assert _codes(Engine(), code) == []


BATCHNORM_ONLY = textwrap.dedent(
    """
    import torch
    from torch import nn


    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(3, 8, 3)
            self.bn = nn.BatchNorm2d(8)

        def forward(self, x):
            return torch.relu(self.bn(self.conv(x)))


    def export(path):
        model = Block()
        torch.onnx.export(model, (torch.randn(2, 3, 8, 8),), path)
    """
).lstrip()


@pytest.mark.deep
def test_batchnorm_alone_is_not_reported_for_an_onnx_export(tmp_path: Path) -> None:
    """torch 2.13's `torch.onnx.export` writes a training-mode BatchNorm with its running
    statistics (onnxscript's torchlib sets `training = False`): the file of a Conv+BN model
    exported without `eval()` gives the eval model's outputs in ONNX Runtime, so OLX201
    does not report it; tracing records the batch's statistics, so a trace is reported."""
    np = pytest.importorskip("numpy")
    torch = pytest.importorskip("torch")
    ort = pytest.importorskip("onnxruntime")
    namespace: dict[str, Any] = {}
    exec(compile(BATCHNORM_ONLY, "batchnorm_only.py", "exec"), namespace)
    torch.manual_seed(0)
    model = namespace["Block"]()
    model.bn.running_mean.fill_(0.5)  # running statistics that are not the batch's
    x = torch.randn(2, 3, 8, 8) * 3 + 1
    program = torch.onnx.export(model, (x,), dynamo=True)
    assert model.training
    session = ort.InferenceSession(program.model_proto.SerializeToString())
    (out,) = session.run(None, {session.get_inputs()[0].name: x.numpy()})
    with torch.no_grad():  # on copies: a training-mode forward updates the statistics
        trained = copy.deepcopy(model).train()(x).numpy()
        evaluated = copy.deepcopy(model).eval()(x).numpy()
    assert np.allclose(out, evaluated, atol=1e-5)
    assert not np.allclose(out, trained, atol=1e-2)

    engine = Engine()
    assert _codes(engine, BATCHNORM_ONLY) == []
    traced = BATCHNORM_ONLY.replace(
        "torch.onnx.export(model, (torch.randn(2, 3, 8, 8),), path)",
        "torch.jit.trace(model, (torch.randn(2, 3, 8, 8),))",
    )
    line = BATCHNORM_ONLY.splitlines().index("    model = Block()") + 2
    assert _codes(engine, traced) == [(line, "OLX201")]
    dropout = BATCHNORM_ONLY.replace(
        "nn.BatchNorm2d(8)", "nn.Sequential(nn.BatchNorm2d(8), nn.Dropout(0.1))"
    )
    assert _codes(engine, dropout) == [(line, "OLX201")]
