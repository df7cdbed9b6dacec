"""OLX306: `dynamic_shapes=` with the TorchScript exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid
from onnxlint.semantic.calls import ExportKind, keyword_arg


class DynamicShapesWithLegacyExporter(Rule):
    """
    ## What it does
    Flags `dynamic_shapes=` on a `torch.onnx.export` call that uses the TorchScript
    exporter (`dynamo=False`, or no `dynamo=` when `target-torch` is older than 2.9).

    ## Why is this bad?
    The TorchScript exporter only takes `dynamic_axes`: `ValueError: The exporter only
    supports dynamic shapes through parameter dynamic_axes when dynamo=False.`

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", dynamo=False, dynamic_shapes={"x": {0: "b"}})
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", dynamic_shapes={"x": {0: "b"}})  # dynamo
    ```

    ## Fix safety
    No fix here: switching exporters is OLX401's fix.

    ## References
    - `torch/onnx/__init__.py` (export, dynamo=False branch)
    """

    code = "OLX306"
    name = "dynamic-shapes-with-legacy-exporter"
    severity = Severity.ERROR
    requires = ("dynamic_shapes",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(m, (x,), 'f', dynamic_shapes=({0: 'b'},))\n"),
        Valid("import torch\ntorch.onnx.export(m, (x,), 'f', dynamo=False, dynamic_shapes=None)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\n"
            "torch.onnx.export(m, (x,), 'f', dynamo=False, dynamic_shapes=({0: 'b'},))\n",
            line=2,
            message="ValueError",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if (
            call is None
            or not exporter_known(call)
            or effective_kind(self.ctx, call) is not ExportKind.ONNX_TORCHSCRIPT
        ):
            return
        if call.qualname != "torch.onnx.export":
            return
        arg = keyword_arg(node, "dynamic_shapes")
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return
        self.report(
            arg,
            "`dynamic_shapes` is rejected by the TorchScript exporter (ValueError); use the "
            "default dynamo exporter, or `dynamic_axes` with `dynamo=False`",
        )
