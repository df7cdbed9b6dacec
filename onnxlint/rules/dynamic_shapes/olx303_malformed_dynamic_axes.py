"""OLX303: a `dynamic_axes` value the exporters cannot read."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.analysis.inputs import resolve_value
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import keyword_arg

_LITERALS = (
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.ConcatenatedString,
    cst.List,
    cst.Tuple,
    cst.Dict,
    cst.Set,
)


def _problem(value: cst.BaseExpression) -> tuple[cst.CSTNode, str] | None:
    """(node, what is wrong) for the first malformed part of a literal `dynamic_axes`."""
    if isinstance(value, (cst.List, cst.Tuple, cst.Set)):
        return value, "`dynamic_axes` must be a dict {input or output name: axes}"
    if not isinstance(value, cst.Dict):
        return None
    for el in value.elements:
        if not isinstance(el, cst.DictElement):
            continue
        if isinstance(el.key, _LITERALS) and not isinstance(el.key, cst.SimpleString):
            return el.key, "`dynamic_axes` keys must be input or output names (strings)"
        axes = el.value
        if isinstance(axes, cst.Dict):
            for item in axes.elements:
                if not isinstance(item, cst.DictElement):
                    continue
                if isinstance(item.key, _LITERALS) and not isinstance(item.key, cst.Integer):
                    return item.key, "axes must map integer dimension indices to names"
                if isinstance(item.value, _LITERALS) and not isinstance(
                    item.value, (cst.SimpleString, cst.ConcatenatedString)
                ):
                    return item.value, "dimension names in `dynamic_axes` must be strings"
        elif isinstance(axes, cst.List):
            for elem in axes.elements:
                if (
                    isinstance(elem, cst.Element)
                    and isinstance(elem.value, _LITERALS)
                    and not isinstance(elem.value, cst.Integer)
                ):
                    return elem.value, "a list of axes must hold integer dimension indices"
        elif isinstance(axes, _LITERALS):
            return axes, (
                "each `dynamic_axes` value must be a dict {axis: name} or a list of axes "
                f"(not `{cst.Module([]).code_for_node(axes)}`)"
            )
    return None


class MalformedDynamicAxes(Rule):
    """
    ## What it does
    Flags a literal `dynamic_axes` that is not `{name: {axis: "dim_name"}}` or
    `{name: [axis, ...]}`: a list instead of a dict, integer keys, a tuple or a single
    integer as axes, non-integer axes, non-string dimension names.

    ## Why is this bad?
    The dynamo exporter rejects it when converting: `ValueError: The axis in dynamic_axes
    must be in the form of: dict[int, str] or list[int]` or `Unsupported dynamic_axes
    format. Please provide a dict or a list.`; the TorchScript exporter fails with less
    clear errors or ignores the entry.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", input_names=["x"],
                      dynamic_axes={"x": (0, 1)})
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", input_names=["x"],
                      dynamic_axes={"x": {0: "batch", 1: "seq"}})
    ```

    ## Fix safety
    No fix.

    ## References
    - `torch/onnx/_internal/exporter/_dynamic_shapes.py` (from_dynamic_axes_to_dynamic_shapes)
    - https://docs.pytorch.org/docs/stable/onnx_torchscript.html (dynamic_axes)
    """

    code = "OLX303"
    name = "malformed-dynamic-axes"
    severity = Severity.ERROR
    requires = ("dynamic_axes",)
    file_scope = True

    VALID = [
        Valid(
            "import torch\ntorch.onnx.export(m, (x,), 'f', input_names=['x'], "
            "dynamic_axes={'x': {0: 'b'}, 'y': [0, 1], NAME: {AXIS: DIM}})\n"
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), 'f', input_names=['x'], "
            "dynamic_axes={'x': (0, 1)})\n",
            line=2,
            message="dict {axis: name} or a list",
        ),
        Invalid(
            "import torch\ntorch.onnx.export(m, (x,), 'f', dynamic_axes={'x': {0: 1}})\n",
            line=2,
            message="must be strings",
        ),
        Invalid(
            dedent(
                """
                import torch
                AXES = {0: {0: "batch"}}
                torch.onnx.export(m, (x,), "f", dynamic_axes=AXES)
                """
            ),
            line=3,
            message="keys must be input or output names",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None:
            return
        arg = keyword_arg(node, "dynamic_axes")
        if arg is None:
            return
        value = resolve_value(self.ctx, arg.value, exported_model(self.ctx, call))
        if value is None:
            return
        found = _problem(value)
        if found is None:
            return
        where, message = found
        self.report(where if value is arg.value else arg, message)
