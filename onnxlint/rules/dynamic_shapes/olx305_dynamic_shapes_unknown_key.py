"""OLX305: `dynamic_shapes` keys that are not the `forward` parameter names of the inputs."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import (
    exported_model,
    model_forward_file,
    model_forward_params,
)
from onnxlint.analysis.inputs import example_inputs, names_arg, resolve_value
from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import ExportCall, ExportKind, keyword_arg

_CHECKED = (ExportKind.ONNX_DYNAMO, ExportKind.TORCH_EXPORT)


class DynamicShapesUnknownKey(Rule):
    """
    ## What it does
    Flags a `dynamic_shapes` dict whose keys are not exactly the `forward` parameter names
    of the inputs passed (the model's class is read from this file or from the project
    module it is imported from: `from model import Net` reads `model.py`, never runs it),
    and a `dynamic_shapes` tuple whose length differs from the number of example inputs.

    ## Why is this bad?
    `torch.export` (and so the dynamo ONNX exporter) matches a `dynamic_shapes` dict to
    the inputs by the names of `forward`'s parameters, not by `input_names`, and requires
    one entry per input: `UserError: When dynamic_shapes is specified as a dict, its
    top-level keys must be the arg names ['x'] of inputs, but here they are ['input']`.
    Keying it by the ONNX `input_names` is the most reported mistake with the new exporter.

    ## Example
    ```python
    class Net(nn.Module):
        def forward(self, pixel_values): ...

    torch.onnx.export(Net(), (x,), input_names=["image"],
                      dynamic_shapes={"image": {0: "batch"}})
    ```

    ## Use instead
    ```python
    torch.onnx.export(Net(), (x,), input_names=["image"],
                      dynamic_shapes={"pixel_values": {0: "batch"}})
    ```

    ## Fix safety
    No fix (a single unknown key next to a single missing name is easy to fix by hand; the
    message lists the expected names).

    ## References
    - https://github.com/pytorch/pytorch/issues/166001
    - https://github.com/pytorch/pytorch/issues/148629
    - https://docs.pytorch.org/docs/stable/export.html#expressing-dynamism
    """

    code = "OLX305"
    name = "dynamic-shapes-unknown-key"
    severity = Severity.ERROR
    requires = ("dynamic_shapes",)
    file_scope = True

    VALID = [
        Valid(
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x, mask=None):
                        return x
                torch.onnx.export(Net().eval(), (x,), dynamic_shapes={"x": {0: "b"}})
                """
            )
        ),
        Valid(  # class not in this file: unknown parameters
            "import torch\nfrom m import Net\n"
            "torch.onnx.export(Net(), (x,), dynamic_shapes={'image': {0: 'b'}})\n"
        ),
        Valid(
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, ids, mask=None):
                        return ids
                torch.export.export(Net(), (ids,), kwargs={"mask": m},
                                    dynamic_shapes={"ids": {0: "b"}, "mask": None})
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, pixel_values):
                        return pixel_values
                model = Net().eval()
                torch.onnx.export(model, (x,), input_names=["image"],
                                  dynamic_shapes={"image": {0: "batch"}})
                """
            ),
            line=7,
            message="not a `forward` parameter",
        ),
        Invalid(  # an input is missing
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x, mask):
                        return x
                torch.onnx.export(Net().eval(), (x, m), dynamic_shapes={"x": {0: "b"}})
                """
            ),
            line=5,
            message="['x', 'mask']",
        ),
        Invalid(  # a tuple of the wrong length
            "import torch\ntorch.onnx.export(m, (x, y), dynamic_shapes=({0: 'b'},))\n",
            line=2,
            message="2 example inputs",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind not in _CHECKED:
            return
        arg = keyword_arg(node, "dynamic_shapes")
        if arg is None:
            return
        ref = exported_model(self.ctx, call)
        value = resolve_value(self.ctx, arg.value, ref)
        inputs = example_inputs(self.ctx, call, ref)
        if isinstance(value, (cst.Tuple, cst.List)):
            if inputs is None or keyword_arg(node, "kwargs") is not None:
                return
            if any(isinstance(e, cst.StarredElement) for e in value.elements):
                return
            if len(value.elements) != len(inputs):
                self.report(
                    arg,
                    f"`dynamic_shapes` has {len(value.elements)} entries for "
                    f"{len(inputs)} example inputs: give one entry (or None) per input",
                )
            return
        if not isinstance(value, cst.Dict) or ref is None:
            return
        params = model_forward_params(self.ctx, ref)
        if params is None:
            return
        keys: list[tuple[str, cst.CSTNode]] = []
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return
            key = el.key.evaluated_value
            if not isinstance(key, str):
                return
            keys.append((key, el.key))
        onnx_names = names_arg(self.ctx, call, "input_names") or []
        elsewhere = model_forward_file(self.ctx, ref)
        where = f" (in {elsewhere})" if elsewhere else ""
        built, related = self.ctx.chain(ref.built)
        if built:  # the class a builder of the project returns: say which
            where = f"{where}: {built}"
        for key, key_node in keys:
            if key in params:
                continue
            hint = ""
            if key in onnx_names:
                hint = " (keys are `forward` parameter names, not `input_names`)"
            self.report(
                key_node if value is arg.value else arg,
                f"`dynamic_shapes` key {key!r} is not a `forward` parameter of "
                f"`{ref.class_name or 'the model'}`{where}; "
                f"expected names from {params}{hint}",
                related=related,
            )
            return
        expected = _expected_keys(call, params, inputs)
        if expected is None:
            return
        names = [k for k, _ in keys]
        missing = [p for p in expected if p not in names]
        if missing:
            self.report(
                arg,
                f"`dynamic_shapes` must have one key per input {expected}; missing "
                f"{missing} (use None for a static input)",
            )


def _expected_keys(
    call: ExportCall, params: list[str], inputs: list[cst.BaseExpression] | None
) -> list[str] | None:
    """The keys torch requires: the parameters the positional inputs fill, then kwargs."""
    if inputs is None or len(inputs) > len(params):
        return None
    expected = params[: len(inputs)]
    kw = call.arg("kwargs")
    if kw is not None:
        if not isinstance(kw.value, cst.Dict):
            return None
        for el in kw.value.elements:
            if not isinstance(el, cst.DictElement) or not isinstance(el.key, cst.SimpleString):
                return None
            key = el.key.evaluated_value
            if not isinstance(key, str):
                return None
            expected.append(key)
    return expected
