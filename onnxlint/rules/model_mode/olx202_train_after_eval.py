"""OLX202: `.train()` re-enables training mode between `.eval()` and the export."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.analysis.exporter import captures_model_mode, effective_kind
from onnxlint.analysis.mode_sensitivity import mode_insensitive
from onnxlint.analysis.modes import Mode
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.model_mode.olx201_missing_eval_before_export import (
    chain_links,
    eval_fix,
    export_call_or_wrapper,
)
from onnxlint.semantic.calls import ExportKind


class TrainAfterEval(Rule):
    """
    ## What it does
    Flags an export of a model that was put in eval mode and then back in training mode
    (`model.train()`, `model.train(True)`, or a local helper that calls it) on a path
    that reaches the export.

    ## Why is this bad?
    `.train()` undoes `.eval()` for the whole module tree. The dynamo exporter,
    `torch.export` and tracing capture the current mode, so the exported graph keeps
    Dropout and training-mode BatchNorm (torch 2.13's `torch.onnx.export` writes BatchNorm
    with its running statistics in either mode, so there only Dropout and `self.training`
    branches count, as in OLX201). This typically happens when an export is added
    at the end of a training loop that calls `model.train()` at the start of each epoch,
    or after a validation helper that restores training mode.

    ## Example
    ```python
    model.eval()
    evaluate(model)
    model.train()
    torch.onnx.export(model, (x,), "model.onnx")
    ```

    ## Use instead
    ```python
    model.train()
    ...
    model.eval()
    torch.onnx.export(model, (x,), "model.onnx")
    ```

    ## Fix safety
    Unsafe: inserting `model.eval()` before the export changes the exported graph, and
    the model stays in eval mode for the code after the export in the same scope.

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.train
    """

    code = "OLX202"
    name = "train-mode-before-export"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    requires = ("export", "trace", "onnx")
    file_scope = True

    VALID = [
        Valid(  # BatchNorm only: torch 2.13's ONNX exporter writes its running statistics
            dedent(
                """
                import torch
                import torch.nn as nn
                class Net(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = nn.Conv2d(3, 8, 3)
                        self.bn = nn.BatchNorm2d(8)
                    def forward(self, x):
                        return self.bn(self.conv(x))
                model = Net().eval()
                model.train()
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                model = Net()
                model.train()
                fit(model)
                model.eval()
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
        Valid(  # training that was never undone by eval: OLX201's case
            dedent(
                """
                import torch
                model = Net()
                model.train()
                torch.onnx.export(model, (x,), "m.onnx")
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                def main():
                    model = Net().eval()
                    validate(model)
                    model.train()
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
            line=6,
            message="`model.train()`",
            fixed=dedent(
                """
                import torch
                def main():
                    model = Net().eval()
                    validate(model)
                    model.train()
                    model.eval()
                    torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
        ),
        Invalid(  # export inside the epoch loop, after `model.train()`
            dedent(
                """
                import torch
                model = Net()
                for epoch in range(3):
                    model.eval()
                    evaluate(model)
                    model.train()
                    loss = model(x).sum()
                    torch.export.export(model, (x,))
                """
            ),
            line=8,
            message="training mode",
        ),
        Invalid(  # a local helper that restores training mode
            dedent(
                """
                import torch
                def finetune(m):
                    m.train()
                    return m
                model = Net().eval()
                finetune(model)
                torch.jit.trace(model, (x,))
                """
            ),
            line=7,
            message="training mode",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = export_call_or_wrapper(self, node)
        if call is None or not captures_model_mode(self.ctx, call):
            return
        ref = exported_model(self.ctx, call)
        if ref is None or Mode.RETRAIN not in ref.modes:
            return
        # torch 2.13's ONNX exporter writes BatchNorm with its running statistics in either
        # mode (OLX201): there only Dropout and `self.training` count
        onnx = effective_kind(self.ctx, call) is ExportKind.ONNX_DYNAMO
        info = ref.class_info
        if info is not None and mode_insensitive(self.ctx, info.name, batchnorm=not onnx):
            return
        keeps = (
            "Dropout and the `self.training` branches"
            if onnx
            else ("Dropout and training-mode BatchNorm")
        )
        name = ref.name or "model"
        every = ref.modes == {Mode.RETRAIN}
        chain, related = self.ctx.chain(chain_links(call, ref, Mode.RETRAIN))
        if ref.via(Mode.RETRAIN):  # a helper's `.train()`, named with where it is
            message = (
                f"`{name}` {'is' if every else 'may be'} in training mode at this export: "
                f"{chain}, after `.eval()`; it is exported with {keeps}; call `{name}.eval()` "
                "right before exporting"
            )
        else:
            message = (
                f"`{name}.train()` runs after `.eval()` and before this export, so `{name}` "
                f"{'is' if every else 'may be'} exported in training mode (with {keeps})"
                f"{'; ' + chain if chain else ''}; call "
                f"`{name}.eval()` right before exporting"
            )
        self.report(
            ref.expr,
            message,
            fix=eval_fix(self, ref, f"Call `{name}.eval()` before the export"),
            related=related,
        )
