"""OLX308: string dimension names in `torch.export.export(..., dynamic_shapes=...)`."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Edit, FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.semantic.calls import ExportKind, keyword_arg


def _string_dims(value: cst.BaseExpression) -> list[cst.SimpleString]:
    """String dims in a literal `dynamic_shapes` ({name: {axis: dim}} or ({axis: dim}, ...))."""
    entries: list[cst.BaseExpression] = []
    if isinstance(value, cst.Dict):
        entries = [el.value for el in value.elements if isinstance(el, cst.DictElement)]
    elif isinstance(value, (cst.Tuple, cst.List)):
        entries = [el.value for el in value.elements if isinstance(el, cst.Element)]
    out: list[cst.SimpleString] = []
    for entry in entries:
        if isinstance(entry, cst.Dict):
            dims = [el.value for el in entry.elements if isinstance(el, cst.DictElement)]
        elif isinstance(entry, (cst.Tuple, cst.List)):
            dims = [el.value for el in entry.elements if isinstance(el, cst.Element)]
        else:
            continue
        out.extend(d for d in dims if isinstance(d, cst.SimpleString))
    return out


class StringDimInTorchExport(Rule):
    """
    ## What it does
    Flags a dimension given as a string (`{0: "batch"}`) in the `dynamic_shapes` of
    `torch.export.export`, and offers `torch.export.Dim("batch")`.

    ## Why is this bad?
    Only `torch.onnx.export` turns string dims into dynamic dims (named in the ONNX
    graph). `torch.export.export` rejects them: `UserError: Unexpected dimension mapped to
    index 0 in input tensor shape {0: 'batch'} ... (expected None, an int, a Dim,
    Dim.AUTO, Dim.STATIC, or Dim.DYNAMIC, but got 'batch' instead)`. Code copied from an
    ONNX export into a `torch.export` call breaks this way.

    ## Example
    ```python
    torch.export.export(model, (x,), dynamic_shapes={"x": {0: "batch"}})
    ```

    ## Use instead
    ```python
    torch.export.export(model, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    ```

    ## Fix safety
    Unsafe: the call fails today; after the fix a named `Dim` makes the dimension dynamic
    and requires it to stay dynamic (export fails if the code specialises it), and dims
    sharing a name are constrained to be equal. Offered only for identifier names and
    when the file imports `torch`.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#expressing-dynamism
    """

    code = "OLX308"
    name = "string-dim-in-torch-export"
    severity = Severity.ERROR
    fix_safety = FixSafety.UNSAFE
    requires = ("dynamic_shapes",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(m, (x,), dynamic_shapes={'x': {0: 'batch'}})\n"),
        Valid(
            "import torch\nfrom torch.export import Dim\n"
            "torch.export.export(m, (x,), dynamic_shapes={'x': {0: Dim('batch')}})\n"
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                ep = torch.export.export(
                    model,
                    (x, m),
                    dynamic_shapes=(
                        {0: "batch"},
                        [None, "seq"],
                    ),
                )
                """
            ),
            line=6,
            message="torch.export.Dim",
            count=2,
            fixed=dedent(
                """
                import torch
                ep = torch.export.export(
                    model,
                    (x, m),
                    dynamic_shapes=(
                        {0: torch.export.Dim("batch")},
                        [None, torch.export.Dim("seq")],
                    ),
                )
                """
            ),
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind is not ExportKind.TORCH_EXPORT:
            return
        arg = keyword_arg(node, "dynamic_shapes")
        if arg is None:
            return
        torch_name = next((b for b, q in self.ctx.semantic.imports.items() if q == "torch"), None)
        for dim in _string_dims(arg.value):
            name = dim.evaluated_value
            if not isinstance(name, str):
                continue
            fix = None
            if torch_name is not None and name.isidentifier():
                edit: Edit = self.ctx.replace(dim, f"{torch_name}.export.Dim({dim.value})")
                fix = make_fix("Use `torch.export.Dim`", edit, safety=FixSafety.UNSAFE)
            self.report(
                dim,
                f"`torch.export.export` rejects string dims ({dim.value}); use "
                f"`torch.export.Dim({dim.value})` or `Dim.DYNAMIC` (only `torch.onnx.export` "
                "accepts names)",
                fix=fix,
            )
