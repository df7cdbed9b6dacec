"""OLX406: `torch.onnx.register_custom_op_symbolic` with the dynamo exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.exporter_api.api_table import DYNAMO_DEFAULT_SINCE, ExportPath, export_path

_NAMES = (
    "torch.onnx.register_custom_op_symbolic",
    "torch.onnx.utils.register_custom_op_symbolic",
)


class CustomOpSymbolicOnDynamo(Rule):
    """
    ## What it does
    Flags `torch.onnx.register_custom_op_symbolic(...)` when the file exports with the
    dynamo exporter (warning), or exports nothing itself while the target torch defaults
    to the dynamo exporter (info).

    ## Why is this bad?
    A symbolic function registered this way only feeds the legacy TorchScript exporter's
    registry. The dynamo exporter (the default since torch 2.9) never looks at it, so the
    op it was meant to translate still fails with `DispatchError: No ONNX function found`
    (or the symbolic silently stops being used). The function is also deprecated and no
    longer in `torch.onnx.__all__`.

    ## Example
    ```python
    torch.onnx.register_custom_op_symbolic("mylib::twice", twice_symbolic, 17)
    torch.onnx.export(model, (x,), "m.onnx")
    ```

    ## Use instead
    ```python
    @onnxscript.script()
    def twice_onnx(x):
        return op.Add(x, x)

    torch.onnx.export(model, (x,), "m.onnx",
                      custom_translation_table={torch.ops.mylib.twice.default: twice_onnx})
    ```

    ## Fix safety
    No fix: the translation has to be rewritten as an onnxscript function.

    ## References
    - https://docs.pytorch.org/tutorials/beginner/onnx/onnx_registry_tutorial.html
    - field-and-peers.md P7 (custom operators)
    """

    code = "OLX406"
    name = "custom-op-symbolic-on-dynamo"
    severity = Severity.WARNING
    deprecated_api = True
    requires = ("register_custom_op_symbolic",)
    file_scope = True  # rated by the export calls elsewhere in the file

    VALID = [
        Valid(
            dedent(
                """
                import torch
                torch.onnx.register_custom_op_symbolic("ns::op", sym, 17)
                torch.onnx.export(model, (x,), "m.onnx", dynamo=False)
                """
            )
        ),
        Valid(
            "import torch\ntorch.onnx.register_custom_op_symbolic('ns::op', sym, 17)\n",
            config={"target-torch": "2.8"},
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                torch.onnx.register_custom_op_symbolic("ns::op", sym, 17)
                torch.onnx.export(model, (x,), "m.onnx")
                """
            ),
            line=2,
            message="custom_translation_table",
            severity=Severity.WARNING,
        ),
        Invalid(
            dedent(
                """
                from torch.onnx import register_custom_op_symbolic
                def setup():
                    register_custom_op_symbolic("ns::op", sym, 17)
                """
            ),
            line=3,
            message="default exporter",
            severity=Severity.INFO,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.qualname(node.func) not in _NAMES:
            return
        paths = {
            p for e in self.ctx.semantic.export_calls if (p := export_path(self.ctx, e)) is not None
        }
        if ExportPath.DYNAMO in paths:
            severity = Severity.WARNING
            why = "this file exports with the dynamo exporter, which never reads it"
        elif paths or self.ctx.config.torch_version < DYNAMO_DEFAULT_SINCE:
            return  # legacy-only (or unknown) exports: the registration is used
        else:
            severity = Severity.INFO
            why = "the default exporter (dynamo, since torch 2.9) never reads it"
        self.report(
            node.func,
            f"`register_custom_op_symbolic` only feeds the legacy TorchScript exporter: {why}; "
            "pass an onnxscript function in `custom_translation_table=` instead",
            severity=severity,
        )
