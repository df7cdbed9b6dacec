"""OLX104: a tensor's size read as a Python int: `int(x.shape[0])`, `range(x.size(1))`."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.dims import Taint, TaintFlow, layer_attrs
from onnxlint.core.violation import Severity
from onnxlint.project.exports import ExportSite
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import from_shape, shape_names, specialising_path
from onnxlint.semantic.calls import ExportKind


class ShapeFrozen(Rule):
    """
    ## What it does
    Flags a dimension size turned into a Python number in code reachable from `forward`:
    `int(x.shape[0])`, `float(x.size(1))`, `range(x.size(1))`, `range(len(x))`, and
    `assert x.shape[0] == 4`, when the file's export makes that a problem: it traces
    (`torch.jit.trace`) or it declares dynamic dimensions (`dynamic_shapes`,
    `dynamic_axes`). Without such an export call in the file it stays quiet.

    ## Why is this bad?
    Tracing records the example input's size as a constant, so the traced model is wrong
    for other sizes. The dynamo exporter specialises the dimension instead, and a
    dimension declared dynamic then fails with `Received user-specified dim hint
    Dim.DYNAMIC ..., but tracing inferred a static shape`, or (with a named `Dim`) is
    silently exported as static.

    ## Example
    ```python
    def forward(self, x):
        for i in range(x.size(0)):
            x[i] = x[i] * 2
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x * 2  # vectorise; keep sizes as tensor ops (`x.size(0)` without int())
    ```

    ## Fix safety
    No automatic fix: removing the loop or the conversion is a rewrite.

    ## References
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    - https://github.com/pytorch/pytorch/issues/157621
    """

    code = "OLX104"
    forward_only = True
    name = "shape-frozen-to-constant"
    severity = Severity.WARNING
    requires = ("shape", "size", "len(")

    VALID = [
        Valid(  # no export call that traces or declares dynamic dims: quiet
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return x.view(int(x.shape[0]), -1)
                """
            )
        ),
        Valid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = torch.nn.ModuleList()
                    def forward(self, x):
                        for i in range(len(self.layers)):
                            x = self.layers[i](x)
                        return x.view(x.size(0), -1)
                torch.onnx.export(M(), (torch.ones(2, 3),), dynamic_shapes=({0: "b"},))
                """
            )
        ),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        b, c = x.shape
                        for i in range(b):
                            x[i] = x[i] * 2
                        assert x.shape[0] == 4
                        return x
                torch.onnx.export(M(), (torch.ones(4, 3),), dynamic_shapes=({0: "batch"},))
                """
            ),
            line=5,
            message="declares dynamic",
            count=2,
        ),
        Invalid(
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        n = int(x.size(0))
                        return x.view(n, -1)
                traced = torch.jit.trace(M(), torch.ones(2, 3))
                """
            ),
            line=4,
            message="tracing freezes it",
        ),
    ]

    def __init__(self, ctx: Context) -> None:
        super().__init__(ctx)
        self._names: dict[int, set[str]] = {}
        self._flows: dict[int, TaintFlow | None] = {}

    def _shape(self, expr: cst.BaseExpression) -> bool:
        return from_shape(self.ctx, expr, shape_names(self.ctx, self._names))

    def _flow(self) -> TaintFlow | None:
        """The dynamic dims the project's exports carry into the function being walked
        (`FileReach.taints`: its own file's exports too), None when there are none."""
        func = self.ctx.function
        reach = self.ctx.reach
        if func is None or reach is None:
            return None
        key = id(func.node)
        if key not in self._flows:
            entries = reach.taints.get(func.key)
            flow = None
            if entries:
                cls = self.ctx.semantic.classes.get(func.class_name) if func.class_name else None
                params = {name: taint for name, (taint, _, _) in entries.items()}
                flow = TaintFlow(self.ctx, func, params, layer_attrs(self.ctx, cls))
            self._flows[key] = flow
        return self._flows[key]

    def _dynamic_read(self, node: cst.Call, args: list[cst.BaseExpression]) -> bool | None:
        """Reports a conversion of a dim the export declares dynamic, read from a value
        whose layout the project model follows (`int(f.shape[2])` of a feature map a
        forward of another file passes to this helper); True when reported, False when
        the dims read are known static (under an exporter that keeps other dims symbolic),
        None when the layout is not known."""
        flow = self._flow()
        if flow is None:
            return None
        for arg in args:
            read = flow.shape_dim(arg, node)
            if read is None:
                continue
            taint, dim = read
            labels = _labels(taint, dim)
            if not labels:
                if any(s.kind is ExportKind.JIT_TRACE for s in self.ctx.reaching_exports()):
                    return None  # tracing freezes every size
                return False
            self._report_dynamic(node, arg, taint, labels)
            return True
        return None

    def _site(self, taint: Taint) -> ExportSite | None:
        """The export that declares the dims `taint` carries into this function."""
        func, reach = self.ctx.function, self.ctx.reach
        if func is None or reach is None:
            return None
        entries = list(reach.taints.get(func.key, {}).values())
        same = [site for found, site, _ in entries if found.param == taint.param]
        found = same or [site for _, site, _ in entries]
        return found[0] if found else None

    def _report_dynamic(
        self, node: cst.Call, arg: cst.BaseExpression, taint: Taint, labels: list[tuple[int, str]]
    ) -> None:
        q = self.ctx.qualname(node.func) or ""
        what = "`range()` over a tensor size" if q == "builtins.range" else "a tensor size"
        conv = "" if q == "builtins.range" else f" converted with `{q.rsplit('.', 1)[-1]}()`"
        dims = ", ".join(f"dim {d} ('{name}')" for d, name in labels)
        site = self._site(taint)
        root = str(self.ctx.config.root) if self.ctx.config.root is not None else None
        declared = "the export declares dynamic"
        if site is not None:
            declared = f"{site.where(root, self.ctx.path)} declares dynamic"
        chain, related = self.ctx.taint_chain(taint)
        via = f"; {chain}" if chain else ""
        self.report(
            node,
            f"{what}{conv} becomes a Python number: `{self.ctx.code_of(arg)}` reads {dims} of "
            f"input `{taint.param}`, which {declared}{via}; {_consequence(site)}",
            related=related,
        )

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q not in ("builtins.int", "builtins.float", "builtins.range") or not node.args:
            return
        if not self.ctx.in_forward:
            return
        found = self._dynamic_read(node, [a.value for a in node.args])
        if found is not None:
            return
        why = specialising_path(self.ctx)
        if why is None or not any(self._shape(a.value) for a in node.args):
            return
        what = "`range()` over a tensor size" if q == "builtins.range" else "a tensor size"
        conv = "" if q == "builtins.range" else f" converted with `{q[9:]}()`"
        self.report(node, f"{what}{conv} becomes a Python number: {why}")

    def visit_Assert(self, node: cst.Assert) -> None:
        test = node.test
        if not isinstance(test, cst.Comparison) or not self.ctx.in_forward:
            return
        if not all(isinstance(c.operator, (cst.Equal, cst.NotEqual)) for c in test.comparisons):
            return
        sides = [test.left, *(c.comparator for c in test.comparisons)]
        if not any(isinstance(s, cst.Integer) for s in sides):
            return
        why = specialising_path(self.ctx)
        if why is not None and any(self._shape(s) for s in sides):
            self.report(test, f"asserting a tensor size equals a constant: {why}")


def _labels(taint: Taint, dim: int | None) -> list[tuple[int, str]]:
    """The dynamic dims a read of `dim` (None: every dim, `numel()`) takes."""
    if dim is None:
        return list(taint.dims)
    label = taint.label(dim)
    if label is None:
        return []
    index = dim + taint.rank if dim < 0 and taint.rank is not None else dim
    return [(index, label)]


def _consequence(site: ExportSite | None) -> str:
    """What the exporter does with a dynamic dim the code turns into a number (torch 2.13)."""
    if site is not None and site.kind is ExportKind.TORCH_EXPORT:
        return "torch.export fails with 'Constraints violated' (specialized to a constant)"
    if site is not None and site.kind is ExportKind.ONNX_TORCHSCRIPT:
        return "the TorchScript exporter records the example's size as a constant"
    return "torch.onnx.export then exports that dim static, without a warning"
