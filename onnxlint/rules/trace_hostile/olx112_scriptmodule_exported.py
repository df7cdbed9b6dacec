"""OLX112: a ScriptModule passed to `torch.onnx.export` / `torch.export.export`."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.scope import statements_naming
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.trace_hostile._common import assigned_values
from onnxlint.semantic.calls import ExportKind, positional_args
from onnxlint.source.walker import iter_descendants

# Calls that return a ScriptModule / ScriptFunction.
SCRIPTING = frozenset(
    {
        "torch.jit.script",
        "torch.jit.trace",
        "torch.jit.trace_module",
        "torch.jit.load",
        "torch.jit.freeze",
        "torch.jit.optimize_for_inference",
    }
)
# Those whose first argument is the original eager module or function.
_UNWRAPPABLE = frozenset({"torch.jit.script", "torch.jit.trace"})
_REJECTING = (ExportKind.ONNX_DYNAMO, ExportKind.TORCH_EXPORT)


class ScriptModuleExported(Rule):
    """
    ## What it does
    Flags a TorchScript module (from `torch.jit.script`, `torch.jit.trace`,
    `torch.jit.load`, ...) passed to `torch.onnx.export` (dynamo exporter, the default) or
    `torch.export.export`, directly or through a variable assigned in the same scope.

    ## Why is this bad?
    Since torch 2.8 the exporter rejects it: `TorchExportError` (step 1/3) wrapping
    `ValueError: Exporting a ScriptModule is not supported. Maybe try converting your
    ScriptModule to an ExportedProgram using TS2EPConverter(mod, args, kwargs).convert()`.

    ## Example
    ```python
    torch.onnx.export(torch.jit.script(model), (x,), "model.onnx")
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "model.onnx")
    ```

    ## Fix safety
    Unsafe, and offered only when the eager module is right there
    (`torch.jit.script(model)`, `torch.jit.trace(model, ...)` as the argument): exporting
    the eager module captures Python control flow with `torch.export` instead of
    TorchScript, so data-dependent code may now fail to export or export differently.

    ## References
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/export/__init__.py
    - https://github.com/pytorch/pytorch/pull/152556
    """

    code = "OLX112"
    name = "scriptmodule-exported"
    severity = Severity.ERROR
    fix_safety = FixSafety.UNSAFE
    file_scope = True
    requires = ("export",)

    VALID = [
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n"),
        Valid(  # the legacy exporter accepts ScriptModules (OLX401 flags dynamo=False)
            "import torch\ntorch.onnx.export(torch.jit.script(m), (x,), 'm.onnx', dynamo=False)\n"
        ),
        Valid(
            "import torch\ntorch.onnx.export(torch.jit.script(m), (x,))\n",
            config={"target-torch": "2.7"},
        ),
        Valid(
            dedent(
                """
                import torch
                m = torch.jit.script(net)
                m = Net()
                torch.onnx.export(m, (x,))
                """
            )
        ),
        Valid(  # one branch scripts, the other does not
            dedent(
                """
                import torch
                def export(model, old):
                    if old:
                        m = torch.jit.script(model)
                    else:
                        m = model
                    torch.onnx.export(m, (x,))
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            "import torch\ntorch.onnx.export(torch.jit.script(model), (x,), 'm.onnx')\n",
            line=2,
            message="Exporting a ScriptModule is not supported",
            fixed="import torch\ntorch.onnx.export(model, (x,), 'm.onnx')\n",
        ),
        Invalid(
            dedent(
                """
                import torch
                scripted = torch.jit.trace(model, (x,))

                def main():
                    torch.onnx.export(scripted, (x,), "m.onnx")
                """
            ),
            line=5,
            message="`scripted` is a ScriptModule (from `torch.jit.trace`",
        ),
        Invalid(
            dedent(
                """
                import torch
                def main(path):
                    m = torch.jit.load(path)
                    return torch.export.export(m, (x,))
                """
            ),
            line=4,
            message="torch.jit.load",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = self.ctx.export_call(node)
        if call is None or call.kind not in _REJECTING or self.ctx.config.torch_version < (2, 8):
            return
        model = call.model_expr
        if model is None:
            return
        if isinstance(model, cst.Call):
            q = self.ctx.qualname(model.func)
            if q not in SCRIPTING:
                return
            fix = None
            args = positional_args(model)
            if q in _UNWRAPPABLE and args:
                fix = make_fix(
                    "Export the eager module",
                    self.ctx.replace(model, self.ctx.code_of(args[0].value)),
                    safety=FixSafety.UNSAFE,
                )
            self.report(
                model,
                f"`{q}(...)` returns a ScriptModule: Exporting a ScriptModule is not supported "
                "by `torch.export`/`torch.onnx.export` since torch 2.8; export the eager module",
                fix=fix,
            )
        elif isinstance(model, cst.Name):
            values = self._assigned(model, node)
            qs = {self.ctx.qualname(v.func) if isinstance(v, cst.Call) else None for v in values}
            if not values or not qs <= SCRIPTING:
                return  # some assignment may bind an eager module: stay quiet
            last = values[-1]
            q = self.ctx.qualname(last.func) if isinstance(last, cst.Call) else None
            self.report(
                model,
                f"`{model.value}` is a ScriptModule (from `{q}`): Exporting a ScriptModule "
                "is not supported since torch 2.8; export the eager module",
            )

    def _assigned(self, name: cst.Name, at: cst.Call) -> list[cst.BaseExpression]:
        """Values assigned to `name` before `at`: in the function, else at module level."""
        if self.ctx.function is not None:
            found = assigned_values(self.ctx, name, at)
            if found:
                return found
        values: list[cst.BaseExpression] = []
        for stmt in statements_naming(self.ctx, self.ctx.semantic.module_body, name.value):
            if isinstance(stmt, (cst.FunctionDef, cst.ClassDef)):
                continue
            for node in (stmt, *iter_descendants(stmt)):
                if node is at:
                    return values
                if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
                    break
                if isinstance(node, cst.Assign) and any(
                    isinstance(t.target, cst.Name) and t.target.value == name.value
                    for t in node.targets
                ):
                    values.append(node.value)
        return values
