"""OLX401: `torch.onnx.export(..., dynamo=False)` and `torch.onnx.utils.export`."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Edit, FixSafety, Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.dynamic_shapes._convert import convert_dynamic_axes
from onnxlint.rules.exporter_api.api_table import (
    DYNAMO_DEFAULT_SINCE,
    IGNORED_BY_DYNAMO,
    LEGACY_DEPRECATED_SINCE,
)
from onnxlint.semantic.calls import ExportCall, ExportKind
from onnxlint.source.walker import dotted


def convert_dynamic_axes_edits(ctx: Context, call: ExportCall) -> list[Edit] | None:
    """Edits turning the call's `dynamic_axes=` into `dynamic_shapes=`, when that is known
    to be right (`onnxlint.rules.dynamic_shapes._convert`, shared with OLX304);
    None means "leave `dynamic_axes` as it is" (the dynamo exporter converts it with a warning)."""
    edits = convert_dynamic_axes(ctx, call)
    return list(edits) if edits else None


class LegacyTorchScriptExporter(Rule):
    """
    ## What it does
    Flags `torch.onnx.export(..., dynamo=False)` and `torch.onnx.utils.export(...)`, which
    select the legacy TorchScript-based ONNX exporter.

    ## Why is this bad?
    The TorchScript exporter is deprecated (a `DeprecationWarning` since torch 2.8) and the
    `torch.export`-based exporter is the default since torch 2.9. The legacy path traces
    the model, so Python control flow and `.item()` values are frozen into the graph, and
    it will be removed. Rated for `target-torch`: a warning from 2.9, info in 2.8, nothing
    before (there `dynamo=False` was the default).

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
    change. The fix sets `dynamo=True` (or calls `torch.onnx.export` instead of
    `torch.onnx.utils.export`), drops the keywords the new exporter ignores (`training`,
    `operator_export_type`, `do_constant_folding`, `custom_opsets`,
    `export_modules_as_functions`, `autograd_inlining`) and converts `dynamic_axes` to
    `dynamic_shapes` when the conversion is known (see OLX3xx); otherwise `dynamic_axes`
    is kept, which the new exporter converts itself with a warning.

    ## References
    - torch 2.9 release notes: "dynamo=True is now the default" (PR #159646)
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    """

    code = "OLX401"
    name = "legacy-torchscript-exporter"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    deprecated_api = True
    requires = ("dynamo", "export")
    file_scope = True  # the dynamic_axes conversion reads the model's class and inputs

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=True)\n"),
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=flag)\n"),
        Valid("def export(*a, **k): pass\nexport(model, (x,), dynamo=False)\n"),
        Valid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=False)\n",
            config={"target-torch": "2.7"},
        ),
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
                    training=tox.TrainingMode.EVAL,
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
        Invalid(
            dedent(
                """
                import torch
                torch.onnx.utils.export(model, (x,), "m.onnx", opset_version=17)
                """
            ),
            line=2,
            message="torch.onnx.utils.export",
            fixed=dedent(
                """
                import torch
                torch.onnx.export(model, (x,), "m.onnx", opset_version=17)
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x, mask):
                        return x * mask

                model = Net().eval()
                torch.onnx.export(
                    model,
                    (x, m),
                    "m.onnx",
                    input_names=["input", "mask"],
                    dynamic_axes={"input": {0: "batch"}},
                    dynamo=False,
                )
                """
            ),
            line=14,
            message="dynamo=False",
            fixed=dedent(
                """
                import torch

                class Net(torch.nn.Module):
                    def forward(self, x, mask):
                        return x * mask

                model = Net().eval()
                torch.onnx.export(
                    model,
                    (x, m),
                    "m.onnx",
                    input_names=["input", "mask"],
                    dynamic_shapes={"x": {0: "batch"}, "mask": None},
                    dynamo=True,
                )
                """
            ),
        ),
        Invalid(
            "import torch\ntorch.onnx.export(model, (x,), 'm.onnx', dynamo=False)\n",
            line=2,
            message="deprecated",
            severity=Severity.INFO,
            config={"target-torch": "2.8"},
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.ONNX_TORCHSCRIPT:
            return
        if call.qualname == "torch.onnx._export":
            return  # OLX409: it does not exist any more
        target = self.ctx.config.torch_version
        if target < LEGACY_DEPRECATED_SINCE:
            return
        severity = Severity.WARNING if target >= DYNAMO_DEFAULT_SINCE else Severity.INFO
        edits: list[Edit] = []
        changes: list[str] = []  # what the fix does, in its title
        arg = call.arg("dynamo")
        if arg is not None:
            where: cst.CSTNode = arg
            edits.append(self.ctx.replace(arg.value, "True"))
            changes.append("Switch to the dynamo exporter (`dynamo=True`)")
            message = (
                "`dynamo=False` selects the legacy TorchScript exporter (deprecated since torch "
                "2.8); use the default `dynamo=True` exporter"
            )
        else:  # torch.onnx.utils.export
            where = node.func
            message = (
                "`torch.onnx.utils.export` is the legacy TorchScript exporter (deprecated since "
                "torch 2.8); use `torch.onnx.export` (dynamo)"
            )
            spelled = dotted(node.func) or ""
            if spelled.endswith(".utils.export") and target >= DYNAMO_DEFAULT_SINCE:
                edits.append(
                    self.ctx.replace(node.func, spelled[: -len(".utils.export")] + ".export")
                )
                changes.append("Switch to the dynamo exporter (`torch.onnx.export`)")
        if edits:
            ignored = [
                a
                for a in node.args
                if a.keyword is not None and a.keyword.value in IGNORED_BY_DYNAMO
            ]
            edits += self.ctx.remove_args(node, ignored)
            if ignored:
                names = ", ".join(f"`{a.keyword.value}`" for a in ignored if a.keyword)
                changes.append(f"remove {names}, which it ignores")
            if call.arg("dynamic_axes") is not None and call.arg("dynamic_shapes") is None:
                converted = convert_dynamic_axes_edits(self.ctx, call)
                if converted:
                    edits += converted
                    changes.append("turn `dynamic_axes` into `dynamic_shapes`")
        title = ", ".join(changes[:-1]) + (" and " if len(changes) > 1 else "") + changes[-1]
        fix = make_fix(title, *edits, safety=FixSafety.UNSAFE) if edits else None
        self.report(where, message, fix=fix, severity=severity)
