"""OLX401: `torch.onnx.export(..., dynamo=False)`."""

from __future__ import annotations

import libcst as cst

from onnxlint.rule import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.semantic import ExportKind
from onnxlint.violation import FixSafety, Severity

# Keywords the dynamo exporter silently ignores: dropped when switching to it.
IGNORED_BY_DYNAMO = (
    "training",
    "operator_export_type",
    "do_constant_folding",
    "custom_opsets",
    "export_modules_as_functions",
    "autograd_inlining",
)


class LegacyTorchScriptExporter(Rule):
    """
    ## What it does
    Flags `torch.onnx.export(..., dynamo=False)`, which selects the legacy TorchScript-based
    ONNX exporter.

    ## Why is this bad?
    The TorchScript exporter is deprecated (a `DeprecationWarning` since torch 2.8) and the
    `torch.export`-based exporter is the default since torch 2.9. The legacy path traces
    the model, so Python control flow and `.item()` values are frozen into the graph, and
    it will be removed.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "model.onnx", dynamo=False, do_constant_folding=True)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "model.onnx", dynamo=True)
    ```

    ## Fix safety
    Unsafe: the new exporter captures the model differently (it follows data-dependent
    control flow or fails on it, instead of tracing one path), so the exported graph can
    change. The fix drops keywords the new exporter ignores.

    ## References
    - torch 2.9 release notes: "dynamo=True is now the default"
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    """

    code = "OLX401"
    name = "legacy-torchscript-exporter"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    deprecated_api = True
    requires = ("dynamo",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=True)\n"),
        Valid("def export(*a, **k): pass\nexport(model, (x,), dynamo=False)\n"),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                torch.onnx.export(model, (x,), "m.onnx", dynamo=False)
                """
            ),
            line=2,
            message="legacy TorchScript",
            fixed=dedent(
                """
                import torch
                torch.onnx.export(model, (x,), "m.onnx", dynamo=True)
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch.onnx as tox
                tox.export(
                    model,
                    (x,),
                    "m.onnx",
                    dynamo=False,
                    do_constant_folding=True,
                )
                """
            ),
            line=6,
            message="dynamo=False",
            fixed=dedent(
                """
                import torch.onnx as tox
                tox.export(
                    model,
                    (x,),
                    "m.onnx",
                    dynamo=True,
                )
                """
            ),
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.ONNX_TORCHSCRIPT:
            return
        arg = call.arg("dynamo")
        assert arg is not None
        edits = [self.ctx.replace(arg.value, "True")]
        edits += self.ctx.remove_args(
            node,
            [a for a in node.args if a.keyword is not None and a.keyword.value in IGNORED_BY_DYNAMO],
        )
        self.report(
            arg,
            "`dynamo=False` selects the legacy TorchScript exporter (deprecated since torch "
            "2.8); use the default `dynamo=True` exporter",
            fix=make_fix("Switch to `dynamo=True`", *edits, safety=FixSafety.UNSAFE),
        )
