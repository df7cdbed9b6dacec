"""OLX301: a `dynamic_axes` key that names no input or output."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model, model_forward_params
from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.analysis.inputs import names_arg, resolve_value
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import ExportKind, keyword_arg


class DynamicAxesUnknownName(Rule):
    """
    ## What it does
    Flags a key of `dynamic_axes` that is neither in `input_names` nor in `output_names`
    (or, with the TorchScript exporter and no `input_names`, not a `forward` parameter of
    the model's class, defined in this file or imported from a module of the project).

    ## Why is this bad?
    The dynamo exporter (the default since torch 2.9) converts `dynamic_axes` to
    `dynamic_shapes` and fails on such a key: `RuntimeError: # Failed to convert
    'dynamic_axes' to 'dynamic_shapes'` (caused by a `treespec.unflatten` length error
    that does not name the key). The TorchScript exporter only warns and ignores the
    entry, so the axis silently stays static. Typos and renamed inputs cause this.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", input_names=["input"],
                      dynamic_axes={"inputs": {0: "batch"}})
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", input_names=["input"],
                      dynamic_axes={"input": {0: "batch"}})
    ```

    ## Fix safety
    No fix: which name was meant is a guess.

    ## References
    - https://github.com/pytorch/pytorch/issues/140748
    - `torch/onnx/_internal/exporter/_dynamic_shapes.py` (from_dynamic_axes_to_dynamic_shapes)
    """

    code = "OLX301"
    name = "dynamic-axes-unknown-name"
    severity = Severity.ERROR
    requires = ("dynamic_axes",)
    file_scope = True

    VALID = [
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', input_names=['a'], "
            "output_names=['y'], dynamic_axes={'a': [0], 'y': [0]})\n"
        ),
        Valid(  # names built at run time: unknown
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', input_names=names, "
            "dynamic_axes={'a': [0]})\n"
        ),
        Valid(  # dynamo without input_names matches by position
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', dynamic_axes={'a': [0]})\n"
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                torch.onnx.export(
                    model, (x,), "m.onnx",
                    input_names=["input"], output_names=["out"],
                    dynamic_axes={"x_typo": {0: "batch"}, "out": {0: "batch"}},
                )
                """
            ),
            line=5,
            message="'x_typo'",
            severity=Severity.ERROR,
        ),
        Invalid(  # the legacy exporter only warns and leaves the axis static
            dedent(
                """
                import torch
                names = ["image"]
                torch.onnx.export(model, (x,), "m.onnx", dynamo=False, input_names=names,
                                  dynamic_axes={"images": [0]})
                """
            ),
            line=4,
            message="stays static",
            severity=Severity.WARNING,
        ),
        Invalid(  # legacy, no input_names: graph inputs are named after forward's parameters
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, pixel_values):
                        return pixel_values
                torch.onnx.export(Net().eval(), (x,), "m.onnx", dynamo=False,
                                  dynamic_axes={"input": [0]})
                """
            ),
            line=6,
            message="['pixel_values']",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or not exporter_known(call):
            return
        kind = effective_kind(self.ctx, call)
        if kind not in (ExportKind.ONNX_DYNAMO, ExportKind.ONNX_TORCHSCRIPT):
            return
        arg = keyword_arg(node, "dynamic_axes")
        if arg is None or keyword_arg(node, "dynamic_shapes") is not None:
            return
        ref = exported_model(self.ctx, call)
        value = resolve_value(self.ctx, arg.value, ref)
        if not isinstance(value, cst.Dict):
            return
        inputs = names_arg(self.ctx, call, "input_names")
        outputs = names_arg(self.ctx, call, "output_names")
        if inputs is None or outputs is None:
            return
        legacy = kind is ExportKind.ONNX_TORCHSCRIPT
        known = set(inputs) | set(outputs)
        shown = f"`input_names` {inputs}"
        if not inputs:
            params = model_forward_params(self.ctx, ref)
            if not legacy or params is None:
                return  # dynamo matches entries by position when there are no input_names
            known |= set(params)
            shown = f"the `forward` parameters {params}"
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                continue
            key = el.key.evaluated_value
            if not isinstance(key, str) or key in known:
                continue
            where = el.key if value is arg.value else arg
            effect = (
                "the TorchScript exporter ignores it and the axis stays static"
                if legacy
                else "the dynamo exporter fails converting `dynamic_axes`"
            )
            self.report(
                where,
                f"`dynamic_axes` key {key!r} is not in {shown} or `output_names` "
                f"{outputs}: {effect}",
                severity=Severity.WARNING if legacy else Severity.ERROR,
            )
