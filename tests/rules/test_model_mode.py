"""OLX2xx scenarios: whole export scripts, module-level flow across blocks, re-checks."""

from __future__ import annotations

import textwrap

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
