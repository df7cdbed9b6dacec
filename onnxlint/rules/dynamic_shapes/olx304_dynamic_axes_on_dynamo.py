"""OLX304: `dynamic_axes=` passed to the dynamo exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.dynamic_shapes._convert import convert_dynamic_axes, moved_axes
from onnxlint.semantic.calls import ExportKind, keyword_arg


class DynamicAxesOnDynamo(Rule):
    """
    ## What it does
    Flags `dynamic_axes=` on a `torch.onnx.export` call that uses the dynamo exporter
    (the default since torch 2.9), and offers to rewrite it as `dynamic_shapes=` keyed by
    the `forward` parameter names of the model's class (defined in this file or in the
    project module it is imported from), or as a tuple in input order when the class
    cannot be read (a library class, `forward(*args)`).

    ## Why is this bad?
    The dynamo exporter only understands `dynamic_shapes`. It converts `dynamic_axes`
    with a `UserWarning` and a `DeprecationWarning` (deprecated since torch 2.10, to be
    removed), matches the converted entries to the inputs by their order in the dict
    rather than by name, and fails with `RuntimeError: Failed to convert 'dynamic_axes'
    to 'dynamic_shapes'` on any key that is not in `input_names`/`output_names`. When
    `dynamic_shapes` is also given, `dynamic_axes` is ignored entirely.

    ## Example
    ```python
    torch.onnx.export(
        model, (x,), "m.onnx",
        input_names=["input"], output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
    )
    ```

    ## Use instead
    ```python
    torch.onnx.export(
        model, (x,), "m.onnx",
        input_names=["input"], output_names=["logits"],
        dynamic_shapes={"x": {0: "batch"}},  # keyed by forward(self, x)
    )
    ```

    ## Fix safety
    Unsafe. The rewrite keeps every input's dynamic dims and their names (list-form axes
    get the names the legacy exporter gave them, `<input>_dynamic_axes_<n>`), drops output
    entries (dynamo takes output shapes from the graph) and passes `None` for inputs
    without dynamic dims. It matches inputs by name where torch's own conversion matches
    them by dict order, so a dict written in a different order than `input_names` exports
    differently (correctly) after the fix. ONNX dim names of list-form axes change.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html (dynamic_shapes)
    - https://github.com/pytorch/pytorch/pull/165769 (dynamic_axes deprecated in 2.10)
    - https://github.com/pytorch/pytorch/issues/148629
    """

    code = "OLX304"
    name = "dynamic-axes-on-dynamo"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    deprecated_api = True
    requires = ("dynamic_axes",)
    file_scope = True

    VALID = [
        Valid(
            "import torch\n"
            "torch.onnx.export(m, (x,), 'm.onnx', dynamo=False, dynamic_axes={'x': [0]})\n"
        ),
        Valid(  # before 2.9 the default exporter is the TorchScript one
            "import torch\ntorch.onnx.export(m, (x,), 'm.onnx', dynamic_axes={'x': [0]})\n",
            config={"target-torch": "2.8"},
        ),
        Valid("import torch\ntorch.onnx.export(m, (x,), 'm.onnx', dynamic_shapes=({0: 'b'},))\n"),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x, mask=None):
                        return x
                model = Net().eval()
                x = torch.randn(2, 3)
                torch.onnx.export(
                    model,
                    (x,),
                    "m.onnx",
                    input_names=["input"],
                    output_names=["logits"],
                    dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
                )
                """
            ),
            line=13,
            message="deprecated",
            fixed=dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x, mask=None):
                        return x
                model = Net().eval()
                x = torch.randn(2, 3)
                torch.onnx.export(
                    model,
                    (x,),
                    "m.onnx",
                    input_names=["input"],
                    output_names=["logits"],
                    dynamic_shapes={"x": {0: "batch"}},
                )
                """
            ),
        ),
        Invalid(  # class not in this file: a tuple in input order; list-form axes named
            "import torch\n"
            "from mymodels import Net\n"
            "model = Net().eval()\n"
            'torch.onnx.export(model, (x, m), "m.onnx", input_names=["x", "m"], '
            'dynamic_axes={"m": [0]})\n',
            line=4,
            message="dynamic_shapes",
            fixed="import torch\n"
            "from mymodels import Net\n"
            "model = Net().eval()\n"
            'torch.onnx.export(model, (x, m), "m.onnx", input_names=["x", "m"], dynamic_shapes=(\n'
            "    None,\n"
            '    {0: "m_dynamic_axes_1"},\n'
            "))\n",
        ),
        Invalid(  # a helper returning the module; two inputs, one without dynamic dims
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, ids, mask):
                        return ids
                def build():
                    net = Net()
                    return net.eval()
                def main():
                    model = build()
                    torch.onnx.export(
                        model,
                        (ids, mask),
                        "m.onnx",
                        input_names=["input_ids", "attention_mask"],
                        dynamic_axes={"input_ids": {0: "batch", 1: "seq"}},
                    )
                """
            ),
            line=15,
            message="dynamic_axes",
            fixed=dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, ids, mask):
                        return ids
                def build():
                    net = Net()
                    return net.eval()
                def main():
                    model = build()
                    torch.onnx.export(
                        model,
                        (ids, mask),
                        "m.onnx",
                        input_names=["input_ids", "attention_mask"],
                        dynamic_shapes={"ids": {0: "batch", 1: "seq"}, "mask": None},
                    )
                """
            ),
        ),
        Invalid(  # written in another order than the inputs: torch gives them by position
            dedent(
                """
                import torch
                torch.onnx.export(
                    model,
                    (image, points, labels),
                    "m.onnx",
                    input_names=["image", "points", "labels"],
                    output_names=["masks"],
                    dynamic_axes={"points": {1: "n"}, "labels": {1: "n"}},
                )
                """
            ),
            line=8,
            message="the axes of 'points' go to 'image', the axes of 'labels' go to 'points'",
            fixed=dedent(
                """
                import torch
                torch.onnx.export(
                    model,
                    (image, points, labels),
                    "m.onnx",
                    input_names=["image", "points", "labels"],
                    output_names=["masks"],
                    dynamic_shapes=(None, {1: "n"}, {1: "n"}),
                )
                """
            ),
        ),
        Invalid(  # dynamic_shapes given as well: dynamic_axes is ignored
            "import torch\n"
            "torch.onnx.export(m, (x,), dynamic_shapes=({0: 'b'},), dynamic_axes={'x': [0]})\n",
            line=2,
            message="ignored",
            fixed="import torch\ntorch.onnx.export(m, (x,), dynamic_shapes=({0: 'b'},))\n",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if (
            call is None
            or not exporter_known(call)
            or effective_kind(self.ctx, call) is not ExportKind.ONNX_DYNAMO
        ):
            return
        arg = keyword_arg(node, "dynamic_axes")
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return
        if keyword_arg(node, "dynamic_shapes") is not None:
            self.report(
                arg,
                "`dynamic_axes` is ignored because `dynamic_shapes` is also given; remove it",
                fix=make_fix(
                    "Remove `dynamic_axes`", self.ctx.remove_arg(node, arg), safety=FixSafety.SAFE
                ),
            )
            return
        edits = convert_dynamic_axes(self.ctx, call)
        fix = None
        if edits is not None:
            fix = make_fix("Convert to `dynamic_shapes`", *edits, safety=FixSafety.UNSAFE)
        moved = moved_axes(self.ctx, call)
        if moved:
            pairs = ", ".join(f"the axes of {k!r} go to {to!r}" for k, to in moved)
            self.report(
                arg.keyword or arg,
                "`dynamic_axes` make other inputs dynamic than their names say: the dynamo "
                f"exporter converts them in the dict's order, not by name ({pairs}); pass "
                "`dynamic_shapes` keyed by the `forward` parameter names",
                fix=fix,
                severity=Severity.ERROR,
            )
            return
        deprecated = self.ctx.config.torch_version >= (2, 10)
        self.report(
            arg.keyword or arg,
            "`dynamic_axes` is converted by the dynamo exporter with a warning"
            + (" (deprecated since torch 2.10)" if deprecated else "")
            + " and fails on any name mismatch; pass `dynamic_shapes` keyed by the "
            "`forward` parameter names",
            fix=fix,
            severity=Severity.WARNING if deprecated else Severity.INFO,
        )
