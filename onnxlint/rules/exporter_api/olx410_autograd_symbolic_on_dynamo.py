"""OLX410: a `torch.autograd.Function` with a `symbolic` method on the dynamo export path."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.chains import where_path
from onnxlint.core.violation import Related, Severity
from onnxlint.project.reach import symbolic_stand_in
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.semantic.calls import ExportKind
from onnxlint.source.walker import dotted

_WAY_OUT = (
    "export it with `dynamo=False`, or make it a `torch.library` custom op with an entry in "
    "`custom_translation_table=`"
)


_CONSEQUENCE = {
    True: "the ONNX model is silently wrong",
    False: "the export fails there or bakes the values in",
}


class AutogradSymbolicOnDynamo(Rule):
    """
    ## What it does
    Flags `MyFunction.apply(...)` in model code that an export on the dynamo path reaches
    (`torch.onnx.export`, the default since torch 2.9, or `torch.export.export`), where
    `MyFunction` is a `torch.autograd.Function` with a `symbolic` static method, and the
    export call itself.

    ## Why is this bad?
    `symbolic` only feeds the legacy TorchScript exporter. The dynamo exporter ignores it
    and exports what `forward` computes: for an NMS or a TensorRT plugin that is a
    placeholder (`return torch.zeros(...)`), so the ONNX model exports without an error
    and is silently wrong.

    ## Example
    ```python
    class NMS(torch.autograd.Function):
        @staticmethod
        def forward(ctx, boxes, scores):
            return torch.zeros(0, 3, dtype=torch.int64)  # placeholder

        @staticmethod
        def symbolic(g, boxes, scores):
            return g.op("NonMaxSuppression", boxes, scores)
    ```

    ## Use instead
    `torch.onnx.export(..., dynamo=False)` keeps the `symbolic`; on the dynamo path, define
    a `torch.library.custom_op` with a fake implementation and give its ONNX translation
    in `custom_translation_table=`.

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_dynamo.html
    - https://docs.pytorch.org/docs/stable/onnx_torchscript.html#static-symbolic-method
    """

    code = "OLX410"
    name = "autograd-symbolic-on-dynamo"
    severity = Severity.ERROR
    since = "0.3.0"
    requires = ("apply", "symbolic", "export")
    file_scope = True  # the export call reads what the project model found beyond its block

    VALID = [
        Valid(  # the TorchScript exporter uses the symbolic
            dedent(
                """
                import torch
                class NMS(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        return x
                    @staticmethod
                    def symbolic(g, x):
                        return g.op("Identity", x)
                class M(torch.nn.Module):
                    def forward(self, x):
                        return NMS.apply(x)
                torch.onnx.export(M().eval(), (torch.ones(2),), "m.onnx", dynamo=False)
                """
            )
        ),
        Valid(  # forward computes the result: dynamo exports it, correctly (RobustVideoMatting)
            dedent(
                """
                import torch
                class Crop(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x, y):
                        return x[:, :, : y.size(2), : y.size(3)]
                    @staticmethod
                    def symbolic(g, x, y):
                        return g.op("Slice", x, y)
                class M(torch.nn.Module):
                    def forward(self, x, y):
                        return Crop.apply(x, y)
                x, y = torch.ones(1, 1, 4, 4), torch.ones(1, 1, 2, 2)
                torch.onnx.export(M().eval(), (x, y), "m.onnx")
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class NMS(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        return torch.zeros(0)
                    @staticmethod
                    def symbolic(g, x):
                        return g.op("NonMaxSuppression", x)
                class M(torch.nn.Module):
                    def forward(self, x):
                        return NMS.apply(x)
                torch.onnx.export(M().eval(), (torch.ones(2),), "m.onnx")
                """
            ),
            line=11,
            message="ignores `NMS.symbolic`",
            count=2,
        ),
        Invalid(  # the stand-in is what an export gets; the model set by another method
            dedent(
                """
                import torch
                class Plugin(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, x):
                        if torch.onnx.is_in_onnx_export():
                            return torch.zeros_like(x)
                        return x.relu()
                    @staticmethod
                    def symbolic(g, x):
                        return g.op("trt::Plugin", x)
                class M(torch.nn.Module):
                    def forward(self, x):
                        return Plugin.apply(x)
                class Exporter:
                    def init_model(self):
                        self.model = M().eval()
                    def export(self):
                        torch.onnx.export(self.model, (torch.ones(2),), "m.onnx")
                """
            ),
            line=13,
            message="ignores `Plugin.symbolic`",
            count=2,
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "apply":
            self._apply(node, func)
            return
        call = self.ctx.export_call(node)
        reach = self.ctx.reach
        if call is None or reach is None or _traced(call.kind):
            return
        span = self.ctx.span(node)
        names = reach.symbolic.get(span.line)
        if names:
            listed = ", ".join(f"`{n}.symbolic`" for n in names)
            self.report(
                node.func,
                f"this export takes the dynamo path, which ignores {listed} and exports "
                f"what `forward` does in its place, a stand-in for the exporter; {_WAY_OUT}",
            )

    def visit_Assign(self, node: cst.Assign) -> None:
        """`roi_pool = RoIPoolFunction.apply` at module level, called by reached code."""
        reach = self.ctx.reach
        if reach is None or not reach.aliases or self.ctx.function is not None:
            return
        for target in node.targets:
            if not isinstance(target.target, cst.Name):
                continue
            found = reach.aliases.get(target.target.value)
            if found is None:
                continue
            cls, calls, sites = found
            live = [s for s in sites if not _traced(s.kind)]
            if not live:
                return
            root = str(self.ctx.config.root) if self.ctx.config.root is not None else None
            where = live[0].where(root, self.ctx.path)
            callers = ", ".join(
                f"{text} ({where_path(self.ctx, path, line)})" for path, line, _, text in calls[:3]
            )
            what = self._stand_in(cls) or "a placeholder"
            self.report(
                node.value,
                f"`{target.target.value}` is `{cls}.apply`, and {callers or 'the model calls it'}: "
                f"the dynamo exporter ({where}) ignores `{cls}.symbolic` and exports "
                f"{_exported(cls, what)}; {_WAY_OUT}",
                related=tuple(Related(p, ln, col, text) for p, ln, col, text in calls),
            )
            return

    def _stand_in(self, name: str) -> str | None:
        """What the `forward` of the Function `name` (as written here) does in place of its
        `symbolic` (`reach.stand_in`), or None."""
        project = self.ctx.project
        facts = project.facts(self.ctx.path, self.ctx.text) if project is not None else None
        return symbolic_stand_in(project, facts, name) if project and facts else None

    def _apply(self, node: cst.Call, func: cst.Attribute) -> None:
        sites = [s for s in self.ctx.reaching_exports() if not _traced(s.kind)]
        if not sites or self.ctx.project is None:
            return
        name = dotted(func.value)
        if name is None:
            return
        what = self._stand_in(name)
        if what is None:
            return
        root = str(self.ctx.config.root) if self.ctx.config.root is not None else None
        site = min(sites, key=lambda s: (s.path, s.line))
        where = site.where(root, self.ctx.path)
        func_info = self.ctx.function
        steps = self.ctx.reach.via.get(func_info.key, ()) if func_info and self.ctx.reach else ()
        chain = "; ".join(
            f"{text} ({where_path(self.ctx, path, line)})" for path, line, _, text in steps
        )
        self.report(
            func,
            f"the dynamo exporter ({where}) ignores `{name}.symbolic` and exports "
            f"{_exported(name, what)}{f' ({chain})' if chain else ''}; {_WAY_OUT}",
            related=tuple(Related(p, ln, col, text) for p, ln, col, text in steps),
        )


def _exported(name: str, what: str) -> str:
    """`Name.forward`, what it does, and what that makes of the ONNX model."""
    return f"`{name}.forward`, {what}: {_CONSEQUENCE[what.startswith('a placeholder')]}"


def _traced(kind: ExportKind) -> bool:
    return kind in (ExportKind.ONNX_TORCHSCRIPT, ExportKind.JIT_TRACE, ExportKind.JIT_SCRIPT)
