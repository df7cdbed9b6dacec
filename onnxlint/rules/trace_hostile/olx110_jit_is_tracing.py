"""OLX110: `torch.jit.is_tracing()` guards, not taken by the dynamo exporter."""

from __future__ import annotations

import libcst as cst

from onnxlint.rule import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.trace_hostile._common import torch_name
from onnxlint.semantic import ExportKind, dotted
from onnxlint.violation import FixSafety, Severity
from onnxlint.walker import iter_descendants

_TRACING = frozenset({"torch.jit.is_tracing", "torch.jit._trace.is_tracing"})


class JitIsTracing(Rule):
    """
    ## What it does
    Flags `torch.jit.is_tracing()`, usually a guard that picks an export-friendly code path.

    ## Why is this bad?
    The dynamo exporter (`torch.onnx.export`, the default since torch 2.9) does not trace
    with TorchScript, so `torch.jit.is_tracing()` is `False` during export and the eager
    branch is exported instead, silently. `torch.onnx.is_in_onnx_export()` is `True` under
    both ONNX exporters.

    ## Example
    ```python
    if torch.jit.is_tracing():
        x = x.view(-1, 4)
    ```

    ## Use instead
    ```python
    if torch.onnx.is_in_onnx_export():
        x = x.view(-1, 4)
    ```
    (`torch.compiler.is_exporting()` covers `torch.export.export` too.)

    Guards that also test `torch.compiler.is_compiling()` / `is_exporting()` are left alone:
    the dynamo path already takes them.

    ## Fix safety
    Offered only where a dynamo export of the project reaches the guard: on code that is
    only traced, the new guard would break the trace path. Unsafe: the guard changes
    meaning outside ONNX export. `torch.jit.trace` without ONNX
    no longer takes the branch, and the dynamo ONNX exporter now takes it (which is the
    point, but changes the exported graph).

    ## References
    - https://docs.pytorch.org/docs/stable/onnx.html#torch.onnx.is_in_onnx_export
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/onnx/__init__.py
    """

    code = "OLX110"
    name = "jit-is-tracing-guard"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    requires = ("is_tracing",)

    VALID = [
        Valid("import torch\nif torch.onnx.is_in_onnx_export():\n    pass\n"),
        Valid("def is_tracing():\n    return False\nif is_tracing():\n    pass\n"),
        Valid(  # the dynamo path is handled by the other half of the condition
            "import torch\nok = torch.jit.is_tracing() or torch.compiler.is_compiling()\n"
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if torch.jit.is_tracing():
                            return x.view(-1, 4)
                        return x
                torch.onnx.export(M().eval(), (torch.ones(2, 4),), "m.onnx")
                """
            ),
            line=4,
            message="not taken by the dynamo exporter",
            fixed=dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        if torch.onnx.is_in_onnx_export():
                            return x.view(-1, 4)
                        return x
                torch.onnx.export(M().eval(), (torch.ones(2, 4),), "m.onnx")
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch as th
                from torch.jit import is_tracing
                def f(x):
                    return x if is_tracing() else x + 1
                class M(th.nn.Module):
                    def forward(self, x):
                        return f(x)
                th.onnx.export(M().eval(), (th.ones(1),), "m.onnx")
                """
            ),
            line=4,
            message="is_in_onnx_export",
            fixed=dedent(
                """
                import torch as th
                from torch.jit import is_tracing
                def f(x):
                    return x if th.onnx.is_in_onnx_export() else x + 1
                class M(th.nn.Module):
                    def forward(self, x):
                        return f(x)
                th.onnx.export(M().eval(), (th.ones(1),), "m.onnx")
                """
            ),
        ),
        Invalid(  # no export reaches it: reported, but the fix is not offered
            dedent(
                """
                import torch
                def f(x):
                    return x if torch.jit.is_tracing() else x + 1
                """
            ),
            line=3,
            message="is_tracing",
        ),
        Invalid(  # no name for torch: no fix
            "from torch import jit\nok = not jit.is_tracing()\n",
            line=2,
            message="torch.onnx.is_in_onnx_export()",
        ),
        Invalid(  # the file traces: still worth knowing, lower severity
            dedent(
                """
                import torch
                def f(x):
                    return 1 if torch.jit.is_tracing() else 2
                torch.jit.trace(f, (torch.ones(1),))
                """
            ),
            line=3,
            message="is_tracing",
            severity=Severity.INFO,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        if node.args or self.ctx.qualname(node.func) not in _TRACING:
            return
        if self._dynamo_guarded(node):
            return  # `is_tracing() or is_compiling()`: the dynamo path is already handled
        sites = self.ctx.reaching_exports()
        if sites:
            only_tracing = all(s.traced or s.kind is ExportKind.JIT_SCRIPT for s in sites)
        else:
            model = self.ctx.model
            only_tracing = bool(model.export_calls) and all(
                e.kind in (ExportKind.JIT_TRACE, ExportKind.ONNX_TORCHSCRIPT)
                for e in model.export_calls
            )
        torch = torch_name(self.ctx.model)
        fix = None
        # The fix switches the guard to the dynamo path: only where a dynamo export runs it
        # (on code that is only traced it would break the trace path).
        dynamo = any(not s.traced and s.kind is not ExportKind.JIT_SCRIPT for s in sites)
        if torch is not None and dynamo:
            fix = make_fix(
                "Use `torch.onnx.is_in_onnx_export()`",
                self.ctx.replace(node, f"{torch}.onnx.is_in_onnx_export()"),
                safety=FixSafety.UNSAFE,
            )
        self.report(
            node,
            "`torch.jit.is_tracing()` is False under the dynamo exporter, so this guard is "
            "not taken by the dynamo exporter; use `torch.onnx.is_in_onnx_export()`",
            fix=fix,
            severity=Severity.INFO if only_tracing else None,
        )

    def _dynamo_guarded(self, node: cst.Call) -> bool:
        """Whether the boolean expression holding the call (`is_tracing() or
        is_compiling()`) also tests a compile/export guard."""
        top: cst.CSTNode | None = None
        for anc in reversed(self.ctx.ancestors):
            if not isinstance(anc, (cst.BooleanOperation, cst.UnaryOperation)):
                break
            top = anc
        if top is None:
            return False
        for n in iter_descendants(top):
            if isinstance(n, cst.Call) and n is not node:
                d = dotted(n.func) or ""
                if d.rsplit(".", 1)[-1] in _DYNAMO_GUARDS:
                    return True
        return False


_DYNAMO_GUARDS = frozenset(
    {"is_compiling", "is_exporting", "is_torchdynamo_compiling", "is_in_onnx_export"}
)
