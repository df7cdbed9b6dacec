"""OLX104: a tensor's size read as a Python int: `int(x.shape[0])`, `range(x.size(1))`."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.dims import Taint, TaintFlow, layer_attrs
from onnxlint.core.violation import Severity
from onnxlint.project.exports import ExportSite
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import from_shape, shape_names, specialising_path
from onnxlint.semantic.calls import ExportKind
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.walker import dotted, iter_descendants


class ShapeFrozen(Rule):
    """
    ## What it does
    Flags a dimension size turned into a Python number in code reachable from `forward`:
    `int(x.shape[0])`, `float(x.size(1))`, `range(x.size(1))`, `range(len(x))`, and
    `assert x.shape[0] == 4`, when the file's export makes that a problem: it traces
    (`torch.jit.trace`) or it declares dynamic dimensions (`dynamic_shapes`,
    `dynamic_axes`), also when the export is in another file of the project.

    In a module's `forward` that no export of the project reaches (a model library,
    exported by its users), it flags `int()`, `float()` and `range()` of the dims an
    export usually makes dynamic: dim 0 of the first input (the batch), the height and
    width of a convolution's input (dims 2, 3 of an `nn.Conv2d` model, followed through
    its convolutions), the sequence of an `nn.Embedding`'s input ids (dim 1). These
    findings say "no export in this project reaches it": the `unreached` setting decides
    whether they are reported, lowered or left out.

    ## Why is this bad?
    The dynamo exporter (`torch.onnx.export`, `torch.export`) specialises the dimension
    to the example input's size. With a named `Dim`, torch 2.13's `torch.onnx.export`
    catches torch.export's "Constraints violated", applies its suggested fix and exports
    the dim static without a warning (ONNX Runtime then rejects any other size);
    `Dim.DYNAMIC` fails with `Received user-specified dim hint Dim.DYNAMIC ..., but
    tracing inferred a static shape`.

    Tracing (`torch.jit.trace`, the TorchScript exporter `dynamo=False`) records the
    example input's size as a constant, so the traced model is wrong for other sizes,
    whatever `dynamic_axes` declares.

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
    scripting_keeps_python = True
    name = "shape-frozen-to-constant"
    severity = Severity.WARNING
    requires = ("shape", "size", "len(")

    VALID = [
        Valid(  # no export reaches it, and `unreached = "ignore"`
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return x.view(int(x.shape[0]), -1)
                """
            ),
            config={"unreached": "ignore"},
        ),
        Valid(  # unreached: dim 0 counts decoder layers (`self.branches[i]`), not a batch
            dedent(
                """
                import torch
                class Head(torch.nn.Module):
                    def forward(self, hidden_states):
                        outs = []
                        for i in range(hidden_states.shape[0]):
                            outs.append(self.branches[i](hidden_states[i]))
                        return torch.stack(outs)
                """
            )
        ),
        Valid(  # unreached: the channels of a convolution's input are not dynamic
            dedent(
                """
                import torch
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = torch.nn.Conv2d(3, 8, 3)
                    def forward(self, x):
                        y = self.conv(x)
                        return y.view(-1, int(y.shape[1]))
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
        Invalid(  # unreached library code: the height after a convolution
            dedent(
                """
                import torch
                import torch.nn.functional as F
                class M(torch.nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.conv = torch.nn.Conv2d(3, 8, 3)
                    def forward(self, x):
                        y = self.conv(x)
                        h, w = y.shape[2:]
                        return F.interpolate(y, size=(int(h) * 2, w * 2))
                """
            ),
            line=10,
            message="reads dim 2 (height) of input `x`",
        ),
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
        self._assumed: dict[int, tuple[TaintFlow, dict[str, str]] | None] = {}

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

    def _assumed_flow(self) -> tuple[TaintFlow, dict[str, str]] | None:
        """For the `forward` of a module class that no export of the project reaches (model
        library code, exported by its users): the dims an export usually makes dynamic,
        assumed on its first input (dim 0 the batch; the height and width of a
        convolution's input, the sequence of an embedding's), and why."""
        func, reach = self.ctx.function, self.ctx.reach
        if func is None or reach is None or func.name != "forward" or func.class_name is None:
            return None
        key = id(func.node)
        if key in self._assumed:
            return self._assumed[key]
        self._assumed[key] = None
        if self.ctx.reaching_exports() or self.ctx.semantic.export_calls:
            return None
        cls = self.ctx.semantic.classes.get(func.class_name)
        if cls is None or not cls.is_module:
            return None
        param = _first_input(func)
        if param is None:
            return None
        dims, why, keep = assumed_layout(self.ctx, cls)
        flow = TaintFlow(
            self.ctx,
            func,
            {param: Taint(param, dims, None)},
            layer_attrs(self.ctx, cls),
            keep,
        )
        self._assumed[key] = (flow, why)
        return self._assumed[key]

    def _assumed_read(self, node: cst.Call, arg: cst.BaseExpression) -> bool:
        """Report a conversion of a dim an export usually makes dynamic in unreached
        forward code; True when reported. (`np.prod(x.shape)` is not one: torch 2.13
        keeps the product symbolic.)"""
        found = self._assumed_flow()
        if found is None:
            return False
        flow, why = found
        if isinstance(arg, cst.Call) and self.ctx.qualname(arg.func) == "builtins.len":
            return False  # `len(feats)`: often a list, not a tensor
        dim_read = flow.shape_dim(arg, node)
        if dim_read is None or dim_read[1] is None:
            return False
        if self._indexes_submodules(node):
            return False  # `self.branches[i]` in the loop: the dim counts layers (DETR heads)
        taint = dim_read[0]
        labels = _labels(taint, dim_read[1])
        if not labels:
            return False
        q = self.ctx.qualname(node.func) or ""
        short = q.rsplit(".", 1)[-1]
        if q == "builtins.range":
            what = "`range()` over a tensor size"
        else:
            what = f"a tensor size converted with `{short}()`"
        dims = ", ".join(f"dim {d} ({name})" for d, name in labels)
        names = " and ".join(dict.fromkeys(name for _, name in labels))
        reasons = "; ".join(dict.fromkeys(why[name] for _, name in labels))
        self.report(
            node,
            f"{what} becomes a Python number: `{self.ctx.code_of(arg)}` reads {dims} of input "
            f"`{taint.param}` or of what follows it ({reasons}); exported with that dim "
            "dynamic, torch.onnx.export "
            "catches torch.export's 'Constraints violated', applies its suggested fix and "
            f"exports the {names} static, without a warning: ONNX Runtime then rejects any "
            f"other {names}",
        )
        return True

    def _indexes_submodules(self, node: cst.Call) -> bool:
        """`for i in range(...)` whose body indexes a submodule list with `i`
        (`self.cls_branches[i](hidden_states[i])`), or whose variable says it counts layers
        or levels (`layer_id`, `lvl`): the size is a number of layers."""
        loop = next((a for a in reversed(self.ctx.ancestors) if isinstance(a, cst.For)), None)
        if loop is None or loop.iter is not node or not isinstance(loop.target, cst.Name):
            return False
        name = loop.target.value
        if any(w in name.lower() for w in _COUNTED_WORDS):
            return True  # `for layer_id in range(hidden_states.shape[0])`: says what it counts
        for n in iter_descendants(loop.body):
            if (
                isinstance(n, cst.Subscript)
                and len(n.slice) == 1
                and isinstance(n.slice[0].slice, cst.Index)
                and isinstance(n.slice[0].slice.value, cst.Name)
                and n.slice[0].slice.value.value == name
            ):
                d = dotted(n.value)
                if d is not None and d.startswith("self.") and d.count(".") == 1:
                    return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        q = self.ctx.qualname(node.func)
        if q not in ("builtins.int", "builtins.float", "builtins.range") or not node.args:
            return
        if not self.ctx.in_forward:
            return
        found = self._dynamic_read(node, [a.value for a in node.args])
        if found is not None:
            return
        why = specialising_path(self.ctx, _read_index(node.args[0].value))
        if why is None:
            if len(node.args) == 1 or q == "builtins.range":
                for a in node.args[:2]:
                    if self._assumed_read(node, a.value):
                        return
            return
        if not any(self._shape(a.value) for a in node.args):
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
        read = {_read_index(s) for s in sides if not isinstance(s, cst.Integer)}
        why = specialising_path(self.ctx, read.pop() if len(read) == 1 else None)
        if why is not None and any(self._shape(s) for s in sides):
            self.report(test, f"asserting a tensor size equals a constant: {why}")


# Loop variables that say the size counts layers, levels or stages, not a batch.
_COUNTED_WORDS = ("layer", "lvl", "level", "stage", "block", "head")
# The dims an export usually makes dynamic, by what a module's layers say of its input.
_SPATIAL_NAMES = {1: ("length",), 2: ("height", "width"), 3: ("depth", "height", "width")}
_CONVS = {
    f"torch.nn.{kind}{n}d": n for kind in ("Conv", "ConvTranspose", "LazyConv") for n in (1, 2, 3)
}
# Layers whose output keeps every dim of the input dynamic (the spatial sizes follow it).
_KEEP_ALL = (
    "torch.nn.Conv",
    "torch.nn.ConvTranspose",
    "torch.nn.LazyConv",
    "torch.nn.BatchNorm",
    "torch.nn.InstanceNorm",
    "torch.nn.GroupNorm",
    "torch.nn.ReLU",
    "torch.nn.GELU",
    "torch.nn.SiLU",
    "torch.nn.Sigmoid",
    "torch.nn.Tanh",
    "torch.nn.LeakyReLU",
    "torch.nn.Hardswish",
    "torch.nn.Mish",
    "torch.nn.Dropout",
    "torch.nn.MaxPool",
    "torch.nn.AvgPool",
    "torch.nn.Identity",
)


def assumed_layout(
    view: Context, cls: ClassInfo
) -> tuple[tuple[tuple[int, str], ...], dict[str, str], frozenset[str]]:
    """(dim index -> name, why, layers keeping every dim) for the first input of a module
    class's `forward` that no export declares: dim 0 is the batch; with convolutions of
    one kind (`nn.Conv2d`), dims 2.. are its height and width; with an `nn.Embedding` and
    no convolution, dim 1 is the sequence."""
    memo = view.semantic.memo
    key = ("olx104 layout", cls.name)
    found = memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    ranks: set[int] = set()
    embedding = False
    keep: set[str] = set()
    conv_name = ""
    for method in cls.methods.values():
        for node in iter_descendants(method.node.body):
            if isinstance(node, cst.Call):
                q = view.qualname(node.func) or ""
                if q in _CONVS:
                    ranks.add(_CONVS[q])
                    conv_name = conv_name or q[len("torch.nn.") :]
                elif q == "torch.nn.Embedding":
                    embedding = True
            elif isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                q = view.qualname(node.value.func) or ""
                if q.startswith(_KEEP_ALL):
                    for t in node.targets:
                        d = dotted(t.target)
                        if d is not None and d.startswith("self.") and d.count(".") == 1:
                            keep.add(d[5:])
    dims: list[tuple[int, str]] = [(0, "batch")]
    why = {"batch": "dim 0 of a forward input is its batch"}
    if len(ranks) == 1:
        names = _SPATIAL_NAMES[next(iter(ranks))]
        dims += [(2 + i, n) for i, n in enumerate(names)]
        listed = ", ".join(str(2 + i) for i in range(len(names)))
        for n in names:
            why[n] = (
                f"`{cls.name}` has an `nn.{conv_name}`: dims {listed} of its input are the "
                f"{' and '.join(names)}"
            )
    elif not ranks and embedding:
        dims.append((1, "sequence"))
        why["sequence"] = (
            f"`{cls.name}` has an `nn.Embedding`: dim 1 of its input ids is the sequence"
        )
    result = (tuple(dims), why, frozenset(keep) if len(ranks) == 1 else frozenset())
    memo[key] = result
    return result


def _first_input(func: FunctionInfo) -> str | None:
    """The first parameter of a `forward` after `self` when it can be a tensor: no
    default, no annotation other than a tensor's."""
    params = func.params()
    if not params:
        return None
    p = params[0]
    if p.default is not None or p.star not in ("", cst.MaybeSentinel.DEFAULT):
        return None
    if p.annotation is not None:
        text = cst.Module([]).code_for_node(p.annotation.annotation)
        if "Tensor" not in text or any(w in text for w in ("List", "list", "Tuple", "tuple")):
            return None
    return p.name.value


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


def _read_index(expr: cst.BaseExpression) -> int | None:
    """The one dim an expression reads by a literal index (`x.shape[0]`, `x.size(1)`,
    `len(x)`), else None (several, a variable index, or a name bound from a shape)."""
    nodes = [expr, *iter_descendants(expr)]
    # names that are parts of a read (`x` and `shape` in `x.shape`), not values
    parts = {id(n.attr) for n in nodes if isinstance(n, cst.Attribute)}
    parts |= {id(n.value) for n in nodes if isinstance(n, cst.Attribute)}
    parts |= {id(n.func) for n in nodes if isinstance(n, cst.Call)}
    found: set[int] = set()
    for node in nodes:
        if isinstance(node, cst.Subscript) and isinstance(node.value, cst.Attribute):
            if node.value.attr.value == "shape":
                index = node.slice[0].slice if len(node.slice) == 1 else None
                value = index.value if isinstance(index, cst.Index) else None
                if not isinstance(value, cst.Integer):
                    return None
                found.add(int(value.value, 0))
        elif isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value == "size":
                if len(node.args) != 1 or not isinstance(node.args[0].value, cst.Integer):
                    return None
                found.add(int(node.args[0].value.value, 0))
            elif isinstance(f, cst.Name) and f.value == "len" and node.args:
                found.add(0)
                parts.add(id(node.args[0].value))
        elif isinstance(node, cst.Name) and id(node) not in parts:
            return None  # a name bound from a shape (`b, c = x.shape`): which dim is unknown
    return found.pop() if len(found) == 1 else None
