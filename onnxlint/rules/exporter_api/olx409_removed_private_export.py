"""OLX409: `torch.onnx._export`, the private TorchScript export entry point, is gone."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix

_NAME = "torch.onnx._export"


class RemovedPrivateExport(Rule):
    """
    ## What it does
    Flags calls of `torch.onnx._export(...)`, the private entry point of the TorchScript
    exporter that older scripts (and some libraries) called to get the model's outputs back.

    ## Why is this bad?
    It does not exist in torch 2.13: the call raises `AttributeError: module 'torch.onnx'
    has no attribute '_export'`, so the export never runs.

    ## Example
    ```python
    torch.onnx._export(model, (x,), "model.onnx", opset_version=17)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "model.onnx", opset_version=18)
    ```

    ## Fix safety
    Offered where the call's return value is not used (`_export` returned the model's
    outputs; `torch.onnx.export` returns an `ONNXProgram`). Unsafe: the call now goes
    through the dynamo exporter, which rejects some of the old keyword arguments
    (OLX405/OLX408 say which) and exports at opset 18 or above.

    ## References
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/onnx/__init__.py
    """

    code = "OLX409"
    name = "removed-private-export"
    severity = Severity.ERROR
    fix_safety = FixSafety.UNSAFE
    since = "0.3.0"
    deprecated_api = True
    requires = ("_export",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid("def _export(m):\n    return m\n_export(1)\n"),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                torch.onnx._export(model, (x,), "m.onnx", opset_version=18)
                """
            ),
            line=2,
            message="torch.onnx._export",
            fixed=dedent(
                """
                import torch
                torch.onnx.export(model, (x,), "m.onnx", opset_version=18)
                """
            ),
        ),
        Invalid(  # the outputs it returned are used: no fix
            dedent(
                """
                import torch.onnx as tox
                outs = tox._export(model, (x,), "m.onnx")
                """
            ),
            line=2,
            message="AttributeError",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) != _NAME:
            return
        fix = None
        parent = self.ctx.parent
        if isinstance(parent, cst.Expr) and isinstance(node.func, cst.Attribute):
            fix = make_fix(
                "Call `torch.onnx.export` instead",
                self.ctx.replace(node.func.attr, "export"),
                safety=FixSafety.UNSAFE,
            )
        self.report(
            node.func,
            "`torch.onnx._export` does not exist in torch 2.13 (AttributeError): the export "
            "never runs; call `torch.onnx.export` (it returns an `ONNXProgram`, not outputs)",
            fix=fix,
        )
