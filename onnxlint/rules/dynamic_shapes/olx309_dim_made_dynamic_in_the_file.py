"""OLX309: a dim made symbolic in the written ONNX file instead of in the export call."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exporter import effective_kind, exporter_known
from onnxlint.core.violation import Related, Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import ExportCall, ExportKind, keyword_arg
from onnxlint.source.walker import iter_descendants

_UPDATE_DIMS = "update_inputs_outputs_dims"


def _sets_dim_param(target: cst.BaseExpression) -> bool:
    """`<...>.dim[i].dim_param` (an input's or output's shape, as the ONNX protobuf has it)."""
    return (
        isinstance(target, cst.Attribute)
        and target.attr.value == "dim_param"
        and isinstance(target.value, cst.Subscript)
        and isinstance(target.value.value, cst.Attribute)
        and target.value.value.attr.value == "dim"
    )


def _edits_dims(node: cst.CSTNode) -> bool:
    """An assignment of a `dim_param`, or a call of onnx's `update_inputs_outputs_dims`."""
    if isinstance(node, cst.Assign):
        return any(_sets_dim_param(t.target) for t in node.targets)
    if isinstance(node, cst.Call):
        f = node.func
        name = f.attr.value if isinstance(f, cst.Attribute) else getattr(f, "value", None)
        return name == _UPDATE_DIMS
    return False


def _without_dynamic_dims(call: ExportCall) -> bool:
    for name in ("dynamic_shapes", "dynamic_axes"):
        arg = keyword_arg(call.node, name)
        if arg is not None and not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            return False
    return True


class DimMadeDynamicInTheFile(Rule):
    """
    ## What it does
    Flags a dim made symbolic in the ONNX file that `torch.onnx.export` wrote (an input's
    `shape.dim[i].dim_param = "batch"`, or onnx's `update_inputs_outputs_dims`), after an
    export call on the dynamo exporter that declares no dynamic dims. The edit is found in
    the function that exports, or in a function of the file that it calls after the
    export.

    ## Why is this bad?
    The edit renames the dim in the file's inputs; it does not change the graph. The dynamo
    exporter (the default since torch 2.9) exports every dim that is not declared dynamic at
    the example's size, and writes that size wherever the model computes with it: a
    `view(x.size(0), -1)`, a `flatten`, a `reshape`. ONNX Runtime then accepts other sizes
    at the input and fails, or computes wrong, inside the graph. Measured with torch 2.13 on
    insightface's `arcface_torch/torch2onnx.py` (an iresnet50 exported at batch 1, its input
    dim 0 then set to `'None'`): ONNX Runtime fails at batch 2 in a `Reshape` to `{1,25088}`.
    The TorchScript exporter recorded `x.size(0)` as graph ops, so the same script gave a
    file that ran at every batch before torch 2.9.

    ## Example
    ```python
    torch.onnx.export(net, img, "model.onnx", input_names=["data"])
    model = onnx.load("model.onnx")
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
    onnx.save(model, "model.onnx")
    ```

    ## Use instead
    ```python
    torch.onnx.export(
        net, img, "model.onnx", input_names=["data"],
        dynamic_shapes=({0: "batch"},),  # the graph computes with the batch it is given
    )
    ```

    ## Fix safety
    No automatic fix: which dims to declare, and their names, are the user's to choose (the
    edit may name several inputs and outputs).

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html (dynamic_shapes)
    - https://onnx.ai/onnx/api/tools.html (update_inputs_outputs_dims)
    """

    code = "OLX309"
    name = "dim-made-dynamic-in-the-file"
    severity = Severity.WARNING
    since = "0.2.0"
    file_scope = True

    VALID = [
        Valid(  # declared in the export: the edit only renames it
            dedent(
                """
                import onnx, torch
                def convert(net, img, out):
                    torch.onnx.export(net, img, out, dynamic_axes={"data": {0: "n"}})
                    m = onnx.load(out)
                    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
                """
            )
        ),
        Valid(  # the TorchScript exporter keeps `x.size(0)` as graph ops
            dedent(
                """
                import onnx, torch
                def convert(net, img, out):
                    torch.onnx.export(net, img, out, dynamo=False)
                    m = onnx.load(out)
                    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
                """
            )
        ),
        Valid(  # before torch 2.9 the default exporter is the TorchScript one
            dedent(
                """
                import onnx, torch
                def convert(net, img, out):
                    torch.onnx.export(net, img, out)
                    m = onnx.load(out)
                    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
                """
            ),
            config={"target-torch": "2.8"},
        ),
        Valid(  # a file from another converter: no export before the edit here
            dedent(
                """
                import onnx
                def make_dynamic(path):
                    m = onnx.load(path)
                    for i in m.graph.input:
                        i.type.tensor_type.shape.dim[0].dim_param = "batch"
                    onnx.save(m, path)
                """
            )
        ),
        Valid(  # the edit before the export is of another file
            dedent(
                """
                import onnx, torch
                def convert(net, img, out, other):
                    m = onnx.load(other)
                    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "batch"
                    torch.onnx.export(net, img, out)
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # insightface's arcface_torch/torch2onnx.py
            dedent(
                """
                import onnx, torch
                def convert_onnx(net, img, output, opset=11):
                    net.eval()
                    torch.onnx.export(net, img, output, input_names=["data"], opset_version=opset)
                    model = onnx.load(output)
                    graph = model.graph
                    graph.input[0].type.tensor_type.shape.dim[0].dim_param = 'None'
                    onnx.save(model, output)
                """
            ),
            line=7,
            message="dynamo exporter fixed this dim at the example's size",
        ),
        Invalid(  # through a helper of the file, called after the export
            dedent(
                """
                import onnx, torch
                def make_variable_batch_size(num_inputs, onnx_model):
                    for i in range(num_inputs):
                        onnx_model.graph.input[i].type.tensor_type.shape.dim[0].dim_param = 'b'
                    return onnx_model
                def export(model, x, file):
                    torch.onnx.export(model, (x,), file, dynamo=True)
                    m = onnx.load(file)
                    m = make_variable_batch_size(1, m)
                    onnx.save(m, file)
                """
            ),
            line=9,
            message="`make_variable_batch_size()` sets",
        ),
        Invalid(  # the function that exports also edits: found there, not at its call
            dedent(
                """
                import onnx, torch
                def convert(net, img, out):
                    torch.onnx.export(net, img, out)
                    m = onnx.load(out)
                    m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "n"
                if __name__ == "__main__":
                    convert(net, img, "m.onnx")
                """
            ),
            line=5,
            message="renames a dim",
            count=1,
        ),
        Invalid(  # onnx's own helper, at module level
            dedent(
                """
                import onnx, torch
                from onnx.tools import update_model_dims
                torch.onnx.export(model, (x,), "m.onnx")
                m = onnx.load("m.onnx")
                m = update_model_dims.update_inputs_outputs_dims(m, {"x": ["n", 3]}, {"y": ["n"]})
                """
            ),
            line=5,
            message="`update_inputs_outputs_dims`",
        ),
    ]

    @classmethod
    def applies_to(cls, ctx: Context) -> bool:
        text = ctx.text
        return bool(ctx.semantic.export_calls) and ("dim_param" in text or _UPDATE_DIMS in text)

    def visit_Assign(self, node: cst.Assign) -> None:
        if _edits_dims(node):
            self._check(node, "setting `dim_param` in the written file")

    def visit_Call(self, node: cst.Call) -> None:
        if _edits_dims(node):
            self._check(node, f"`{_UPDATE_DIMS}` on the written file")
            return
        f = node.func
        if not isinstance(f, cst.Name):
            return
        helper = self.ctx.semantic.functions.get(f.value)
        if (
            helper is None
            or helper.class_name is not None
            or helper.node is self.ctx.enclosing(cst.FunctionDef)
        ):
            return
        if self._only_edits_dims(helper.node):  # (one that exports too is found in it)
            self._check(node, f"`{f.value}()` sets `dim_param` in the written file, which")

    def _only_edits_dims(self, func: cst.FunctionDef) -> bool:
        """Whether a function of the file edits dims and makes no export call (once per
        function and check: every call of it asks)."""
        key = ("olx309-edits-dims", id(func))
        memo = self.ctx.semantic.memo
        if key not in memo:
            inside = list(iter_descendants(func))
            exports = {id(c.node) for c in self.ctx.semantic.export_calls}
            memo[key] = not any(id(n) in exports for n in inside) and any(
                _edits_dims(n) for n in inside
            )
        return bool(memo[key])

    def _check(self, node: cst.CSTNode, what: str) -> None:
        export = self._export_before(node)
        if export is None:
            return
        related: tuple[Related, ...] = ()
        try:
            at = self.ctx.span(export.node)
            related = (Related(self.ctx.path, at.line, at.column, "the export call"),)
        except LookupError:
            pass
        self.report(
            node,
            f"{what} renames a dim but does not make the graph dynamic: the dynamo exporter "
            "fixed this dim at the example's size wherever the model computes with it (a "
            "view, reshape or flatten), so ONNX Runtime fails at other sizes; declare it in "
            "the export call with `dynamic_shapes`",
            related=related,
        )

    def _export_before(self, node: cst.CSTNode) -> ExportCall | None:
        """The last dynamo export call without dynamic dims before `node`, in its function
        (or at module level when `node` is)."""
        scope = self.ctx.enclosing(cst.FunctionDef)
        try:
            line = self.ctx.span(node).line
        except LookupError:
            return None
        in_scope = {id(n) for n in iter_descendants(scope)} if scope is not None else set()
        found: ExportCall | None = None
        for call in self.ctx.semantic.export_calls:
            if not exporter_known(call) or effective_kind(self.ctx, call) is not (
                ExportKind.ONNX_DYNAMO
            ):
                continue
            if scope is None and isinstance(call.statement, (cst.FunctionDef, cst.ClassDef)):
                continue  # module-level code: a function's export is not before it
            try:
                at = self.ctx.span(call.node).line
            except LookupError:
                earlier = self._module_line(call) if scope is None else None
                if earlier is None:
                    continue
                at = earlier  # an earlier top-level statement
            inside = scope is None or id(call.node) in in_scope
            if inside and at < line:
                found = call
        if found is None or not _without_dynamic_dims(found):
            return None
        return found

    def _module_line(self, call: ExportCall) -> int | None:
        """An order for a module-level export call in another block: 0 (before any line of
        the current block) when its top-level statement comes before the current one."""
        body = self.ctx.semantic.module_body
        top = next((a for a in self.ctx.ancestors if any(a is s for s in body)), None)
        theirs = next((i for i, s in enumerate(body) if s is call.statement), None)
        here = next((i for i, s in enumerate(body) if s is top), None)
        if theirs is None or here is None:
            return None
        return 0 if theirs < here else None
