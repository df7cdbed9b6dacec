"""OLX302: a dynamic axis index beyond the rank of its example input."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model, model_forward_params
from onnxlint.analysis.inputs import example_inputs, input_positions, resolve_value, tensor_rank
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import keyword_arg, literal_int
from onnxlint.source.walker import iter_descendants


def _axis_nodes(value: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The axis index expressions of one input's entry (`{0: "b"}` or `[0, 1]`)."""
    if isinstance(value, cst.Dict):
        return [el.key for el in value.elements if isinstance(el, cst.DictElement)]
    if isinstance(value, (cst.List, cst.Tuple)):
        return [el.value for el in value.elements if isinstance(el, cst.Element)]
    return []


class DynamicAxisOutOfRange(Rule):
    """
    ## What it does
    Flags an axis index in `dynamic_axes` or `dynamic_shapes` that does not exist on the
    example input it refers to, when that input is built in the same file with literal
    sizes (`x = torch.randn(1, 3, 224, 224)`).

    ## Why is this bad?
    The exporter cannot mark a dimension the input does not have: `torch.export` raises
    on the `dynamic_shapes` spec, and the legacy exporter fails or silently drops the
    entry. It is usually an off-by-one (axis 4 of a 4-D image batch) or an entry written
    for another input.

    ## Example
    ```python
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (x,), "m.onnx", input_names=["x"], dynamic_axes={"x": {4: "w"}})
    ```

    ## Use instead
    ```python
    x = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, (x,), "m.onnx", input_names=["x"], dynamic_axes={"x": {3: "w"}})
    ```

    ## Fix safety
    No fix: the intended axis is a guess.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#expressing-dynamism
    """

    code = "OLX302"
    name = "dynamic-axis-out-of-range"
    severity = Severity.ERROR
    requires = ("dynamic_",)
    file_scope = True

    VALID = [
        Valid(
            dedent(
                """
                import torch
                x = torch.randn(1, 3, 224, 224)
                torch.onnx.export(m, (x,), "m.onnx", input_names=["x"],
                                  dynamic_axes={"x": {0: "b", 3: "w", -1: "w2"}})
                """
            )
        ),
        Valid(  # rank unknown
            dedent(
                """
                import torch
                x = torch.randn(*shape)
                torch.onnx.export(m, (x,), "m.onnx", input_names=["x"], dynamic_axes={"x": [7]})
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                x = torch.randn(1, 3, 224, 224)
                torch.onnx.export(model, (x,), "m.onnx", input_names=["image"],
                                  dynamic_axes={"image": {0: "batch", 4: "width"}})
                """
            ),
            line=4,
            message="axis 4",
        ),
        Invalid(  # dynamic_shapes keyed by forward parameters
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, ids, mask):
                        return ids
                def main():
                    model = Net().eval()
                    ids = torch.randint(0, 100, (2, 16))
                    mask = torch.ones(2, 16)
                    shapes = {"ids": {0: "b"}, "mask": {2: "s"}}
                    torch.onnx.export(model, (ids, mask), dynamic_shapes=shapes)
                """
            ),
            line=10,
            message="`mask` has 2",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None:
            return
        ref = exported_model(self.ctx, call)
        inputs = example_inputs(self.ctx, call, ref)
        if not inputs:
            return
        entries: list[tuple[int, cst.BaseExpression]] = []
        axes_arg = keyword_arg(node, "dynamic_axes")
        if axes_arg is not None:
            positions = input_positions(self.ctx, call) or {}
            value = resolve_value(self.ctx, axes_arg.value, ref)
            if isinstance(value, cst.Dict):
                for el in value.elements:
                    if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                        key = el.key.evaluated_value
                        if isinstance(key, str) and key in positions:
                            entries.append((positions[key], el.value))
        shapes_arg = keyword_arg(node, "dynamic_shapes")
        if shapes_arg is not None:
            value = resolve_value(self.ctx, shapes_arg.value, ref)
            params = model_forward_params(self.ctx, ref)
            if isinstance(value, cst.Dict) and params is not None:
                for el in value.elements:
                    if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                        key = el.key.evaluated_value
                        if isinstance(key, str) and key in params:
                            entries.append((params.index(key), el.value))
            elif isinstance(value, (cst.Tuple, cst.List)):
                for i, item in enumerate(value.elements):
                    if isinstance(item, cst.Element):
                        entries.append((i, item.value))
        for pos, entry in entries:
            if pos >= len(inputs) or not isinstance(entry, (cst.Dict, cst.List, cst.Tuple)):
                continue
            rank = tensor_rank(self.ctx, inputs[pos], ref)
            if rank is None:
                continue
            for axis_node in _axis_nodes(entry):
                axis = literal_int(axis_node)
                if axis is None or -rank <= axis < rank:
                    continue
                in_call = any(axis_node is n for n in iter_descendants(node))
                name = self.ctx.code_of(inputs[pos])
                self.report(
                    axis_node if in_call else node.func,
                    f"axis {axis} is out of range: example input `{name}` has {rank} "
                    f"dimensions (valid axes 0..{rank - 1})",
                )
