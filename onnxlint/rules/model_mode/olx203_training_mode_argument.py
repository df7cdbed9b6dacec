"""OLX203: `torch.onnx.export(..., training=TrainingMode.TRAINING)`."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import ExportKind, keyword_arg


class TrainingModeArgument(Rule):
    """
    ## What it does
    Flags `training=TrainingMode.TRAINING` on `torch.onnx.export`.

    ## Why is this bad?
    With the legacy TorchScript exporter (`dynamo=False`) it exports a training graph:
    Dropout stays active and BatchNorm normalises with the batch statistics, so an
    inference runtime gives random, batch-dependent results. With the dynamo exporter
    (the default since torch 2.9) the keyword is silently ignored (deprecated since torch
    2.6): the graph follows the mode the model is in, so the keyword neither produces the
    training graph it asks for nor protects an inference export; that case is reported by
    OLX405 (ignored export argument), which also removes the keyword.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", training=torch.onnx.TrainingMode.TRAINING)
    ```

    ## Use instead
    ```python
    model.eval()  # or model.train() if a training graph is really wanted
    torch.onnx.export(model, (x,), "m.onnx")
    ```

    ## Fix safety
    No fix: whether a training graph is wanted (e.g. for on-device training) is the
    user's decision.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_torchscript.html (training)
    - torch 2.6 release notes: `training` deprecated for the dynamo exporter
    """

    code = "OLX203"
    name = "training-mode-export-argument"
    severity = Severity.WARNING
    requires = ("TRAINING",)

    VALID = [
        Valid(
            "import torch\n"
            "torch.onnx.export(m, (x,), 'm.onnx', training=torch.onnx.TrainingMode.EVAL, "
            "dynamo=False)\n"
        ),
        Valid("TRAINING = 1\nexport(m, training=TRAINING)\n"),
        # The dynamo exporter ignores the keyword: OLX405 reports that, not this rule.
        Valid(
            "import torch\n"
            "torch.onnx.export(m, (x,), 'm.onnx', training=torch.onnx.TrainingMode.TRAINING)\n"
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                from torch.onnx import TrainingMode
                torch.onnx.export(m, (x,), "m.onnx", dynamo=False, training=TrainingMode.TRAINING)
                """
            ),
            line=3,
            message="training graph",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or not exporter_known(call):
            return
        arg = keyword_arg(node, "training")
        if arg is None:
            return
        q = self.ctx.qualname(arg.value) or ""
        if not q.endswith("TrainingMode.TRAINING") or not q.startswith("torch."):
            return
        kind = effective_kind(self.ctx, call)
        if kind is ExportKind.ONNX_TORCHSCRIPT:
            message = (
                "`training=TrainingMode.TRAINING` exports a training graph (active Dropout, "
                "batch-statistics BatchNorm); use `TrainingMode.EVAL` for an inference model"
            )
        else:
            return  # on the dynamo path the keyword is ignored: OLX405 reports (and removes) it
        self.report(arg, message)
