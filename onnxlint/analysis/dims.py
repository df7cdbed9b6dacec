"""Dynamic dims followed through a function: which values carry an exported input's
layout, and which Python numbers are read from a dim the export declares dynamic.

- `declared_dims(view, call, params)`: forward parameter -> the dims an export call
  declares dynamic (`dynamic_shapes`, `dynamic_axes`), as a `Taint`.
- `TaintFlow(view, func, params, layers)`: per function, in source order, which values
  carry a tainted parameter's layout: the parameter itself, elementwise results, a
  `torch.nn` layer's output (the leading dim survives `self.conv(x)`), the elements of a
  list of such tensors (`for f in feats`, `[... for f in feats]`, `feats[0]`).
  `shape_dim(expr)` says which dim of which tainted value a size expression reads
  (`x.shape[0]`, `x.size(2)`, `h` of `_, _, h, w = x.shape`, `len(x)`, `x.numel()`).

OLX105 and OLX104 read these in one file; the project model (`onnxlint.project.reach`)
carries the taints into the methods, submodules and helpers of other files that an export
reaches, so a helper of another module that turns a dynamic feature size into an `int`
is found where it does it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.analysis.inputs import example_inputs, input_positions, resolve_value, tensor_rank
from onnxlint.semantic.calls import ExportCall, keyword_arg, literal_int
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.walker import dotted, iter_children, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

# Methods and functions whose result has the shape of their tensor input.
SAME_SHAPE_METHODS = frozenset(
    {"float", "half", "double", "bfloat16", "long", "int", "bool", "to", "type", "cuda", "cpu"}
    | {"contiguous", "clone", "detach", "abs", "exp", "log", "sqrt", "rsqrt", "neg", "sigmoid"}
    | {"tanh", "relu", "clamp", "clip", "pow", "add", "sub", "mul", "div", "masked_fill"}
    | {"softmax", "log_softmax", "sin", "cos", "floor", "ceil", "round", "reciprocal"}
)
SAME_SHAPE_FUNCS = frozenset(
    {f"torch.{n}" for n in ("relu", "sigmoid", "tanh", "exp", "log", "abs", "sqrt", "sin")}
    | {f"torch.{n}" for n in ("cos", "clamp", "softmax", "log_softmax", "neg", "rsqrt")}
    | {f"torch.nn.functional.{n}" for n in ("relu", "gelu", "silu", "sigmoid", "tanh", "elu")}
    | {f"torch.nn.functional.{n}" for n in ("leaky_relu", "softmax", "log_softmax", "dropout")}
    | {"torch.nn.functional.mish", "torch.nn.functional.hardswish", "torch.nn.functional.normalize"}
)
ELEMENTWISE_FUNCS = frozenset(
    {"torch.add", "torch.sub", "torch.mul", "torch.div", "torch.maximum", "torch.minimum"}
)
ARITH = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
)
AUG_ARITH = (
    cst.AddAssign,
    cst.SubtractAssign,
    cst.MultiplyAssign,
    cst.DivideAssign,
    cst.FloorDivideAssign,
    cst.ModuloAssign,
    cst.PowerAssign,
)
_DIM_QUALNAMES = ("torch.export.Dim", "torch.export.dynamic_shapes.Dim")
# `torch.nn` layers whose output keeps the input's leading dim (batch-first, or the
# sequence of a sequence-first layer): `self.conv(x)`.
_LEADING_DIM_LAYERS = (
    "torch.nn.Conv",
    "torch.nn.ConvTranspose",
    "torch.nn.BatchNorm",
    "torch.nn.InstanceNorm",
    "torch.nn.LayerNorm",
    "torch.nn.GroupNorm",
    "torch.nn.Linear",
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
    "torch.nn.AdaptiveAvgPool",
    "torch.nn.AdaptiveMaxPool",
    "torch.nn.Upsample",
    "torch.nn.Identity",
    "torch.nn.Embedding",
)


@dataclass(frozen=True)
class Taint:
    """A value with the layout of a forward input that has dynamic dims."""

    param: str  # the forward parameter it comes from
    dims: tuple[tuple[int, str], ...]  # (dim index, dim name) declared dynamic
    rank: int | None  # the example input's rank when known
    seq: bool = False  # a list or tuple of such tensors (`[c3, c4]`)

    def label(self, dim: int) -> str | None:
        """The name of `dim` when it is declared dynamic (negative dims need the rank)."""
        if dim < 0:
            if self.rank is None:
                return None
            dim += self.rank
        for d, name in self.dims:
            if d == dim:
                return name
        return None


# --------------------------------------------------------------------------- declared dims


def declared_dims(view: FileView, call: ExportCall, params: list[str] | None) -> dict[str, Taint]:
    """forward parameter -> its dynamic dims, from `dynamic_shapes` / `dynamic_axes`
    (`params`: the model class's forward parameters)."""
    ref = exported_model(view, call)
    if params is None or ref is None:
        return {}
    entries: list[tuple[int, cst.BaseExpression, str]] = []
    shapes = keyword_arg(call.node, "dynamic_shapes")
    if shapes is not None:
        value = resolve_value(view, shapes.value, ref)
        if isinstance(value, cst.Dict):
            for el in value.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                    key = el.key.evaluated_value
                    if isinstance(key, str) and key in params:
                        entries.append((params.index(key), el.value, key))
        elif isinstance(value, (cst.Tuple, cst.List)):
            for i, item in enumerate(value.elements):
                if isinstance(item, cst.Element) and not isinstance(item, cst.StarredElement):
                    entries.append((i, item.value, ""))
    axes = keyword_arg(call.node, "dynamic_axes")
    if axes is not None:
        positions = input_positions(view, call) or {}
        value = resolve_value(view, axes.value, ref)
        if isinstance(value, cst.Dict):
            for el in value.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                    key = el.key.evaluated_value
                    if isinstance(key, str) and key in positions:
                        entries.append((positions[key], el.value, key))
    if not entries:
        return {}
    inputs = example_inputs(view, call, ref)
    out: dict[str, Taint] = {}
    for pos, entry, key_name in entries:
        if pos >= len(params):
            continue
        entry = resolve_value(view, entry, ref) or entry
        dims = _dims(view, entry, key_name or params[pos])
        if not dims:
            continue
        rank = None
        if inputs is not None and pos < len(inputs):
            rank = tensor_rank(view, inputs[pos], ref)
        if rank is not None:
            dims = [(d + rank if d < 0 else d, n) for d, n in dims]
            dims = [(d, n) for d, n in dims if 0 <= d < rank]
        dims = [(d, n) for d, n in dims if d >= 0]
        if dims:
            out[params[pos]] = Taint(params[pos], tuple(sorted(dims)), rank)
    return out


def _dims(view: FileView, entry: cst.BaseExpression, key: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if isinstance(entry, cst.Dict):
        for el in entry.elements:
            if not isinstance(el, cst.DictElement):
                continue
            axis = literal_int(el.key)
            label = dim_label(view, el.value)
            if axis is not None and label is not None:
                out.append((axis, label))
    elif isinstance(entry, (cst.List, cst.Tuple)):
        for i, item in enumerate(entry.elements):
            if not isinstance(item, cst.Element) or isinstance(item, cst.StarredElement):
                return []
            axis = literal_int(item.value)
            if axis is not None:  # dynamic_axes list form: [0, 1]
                out.append((axis, f"{key}_dynamic_axes_{len(out) + 1}"))
                continue
            label = dim_label(view, item.value)  # dynamic_shapes per-dim form: (Dim, None)
            if label is not None:
                out.append((i, label))
    return out


def dim_label(view: FileView, spec: cst.BaseExpression) -> str | None:
    """The name of a dynamic dim spec: a string, `Dim("b")`, `Dim.DYNAMIC`, a variable
    bound to a `Dim`, `2 * h`; None for `None`, `Dim.AUTO`/`Dim.STATIC` and literals."""
    if isinstance(spec, cst.SimpleString):
        v = spec.evaluated_value
        return v if isinstance(v, str) else None
    if isinstance(spec, cst.Name):
        if spec.value in ("None", "True", "False"):
            return None
        value = resolve_value(view, spec)
        if isinstance(value, cst.Call):
            return dim_label(view, value) or spec.value
        return spec.value if value is None else None
    if isinstance(spec, cst.Attribute):
        d = dotted(spec) or ""
        if d.endswith(".DYNAMIC"):
            return "Dim.DYNAMIC"
        return None
    if isinstance(spec, cst.BinaryOperation):  # `2 * h`: a derived dim
        for side in (spec.left, spec.right):
            if not isinstance(side, (cst.Integer, cst.Float)):
                inner = dim_label(view, side)
                if inner is not None:
                    return cst.Module([]).code_for_node(spec)
        return None
    if isinstance(spec, cst.Call):
        q = view.qualname(spec.func) or ""
        if q in _DIM_QUALNAMES or q.endswith(".Dim"):
            first = spec.args[0].value if spec.args else None
            if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                return first.evaluated_value
            return "Dim"
    return None


# --------------------------------------------------------------------------- the flow


def layer_attrs(view: FileView, cls: ClassInfo | None) -> frozenset[str]:
    """`self.<attr>` of a class that hold a `torch.nn` layer keeping the leading dim
    (`self.conv = nn.Conv2d(...)` in a method of the class)."""
    if cls is None:
        return frozenset()
    memo = view.semantic.memo
    key = ("layer attrs", cls.name)
    found = memo.get(key)
    if isinstance(found, frozenset):
        return found
    out: set[str] = set()
    for method in cls.methods.values():
        for node in iter_descendants(method.node.body):
            if not isinstance(node, cst.Assign) or not isinstance(node.value, cst.Call):
                continue
            q = view.qualname(node.value.func) or ""
            if not q.startswith(_LEADING_DIM_LAYERS):
                continue
            for t in node.targets:
                d = dotted(t.target)
                if d is not None and d.startswith("self.") and d.count(".") == 1:
                    out.add(d[5:])
    result = frozenset(out)
    memo[key] = result
    return result


class TaintFlow:
    """Which values of one function carry a forward input's layout (source order)."""

    def __init__(
        self,
        view: FileView,
        func: FunctionInfo,
        params: dict[str, Taint],
        layers: frozenset[str] = frozenset(),
        keep_all: frozenset[str] = frozenset(),
    ) -> None:
        self.ctx = view
        self.params = params
        self.layers = layers
        # Layers whose output keeps every dim of the input dynamic (a convolution's or a
        # pooling's height and width follow the input's): `self.conv(x)` keeps them all.
        self.keep_all = keep_all
        self.order: dict[int, int] = {}
        self.bindings: dict[str, list[tuple[int, cst.CSTNode | None]]] = {}
        # name -> (order, the shape expression unpacked, index in it): `_, _, h, w = x.shape`
        self.unpacked: dict[str, list[tuple[int, cst.BaseExpression, int]]] = {}
        self._index(func.node.body)

    def _index(self, body: cst.CSTNode) -> None:
        """Number nodes in source order; a binding counts once its whole statement is done
        (so `x = x.float()` reads the earlier `x`); a comprehension binds before its
        element is computed."""
        stack: list[tuple[cst.CSTNode, bool]] = [(body, False)]
        n = 0
        while stack:
            node, done = stack.pop()
            n += 1
            if done:
                self._bindings_of(node, n)
                continue
            self.order[id(node)] = n
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
                continue
            stack.append((node, True))
            children = list(iter_children(node))
            if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
                children.sort(key=lambda c: c is not node.for_in)
            stack.extend((c, False) for c in reversed(children))

    def _bindings_of(self, node: cst.CSTNode, n: int) -> None:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                value = node.value if isinstance(t.target, cst.Name) else None
                self._bind(t.target, value, n)
                if isinstance(t.target, (cst.Tuple, cst.List)):
                    self._unpack(t.target, node.value, n)
        elif isinstance(node, cst.AnnAssign):
            self._bind(node.target, node.value, n)
        elif isinstance(node, cst.AugAssign):
            self._bind(node.target, node, n)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self._bind(node.target, node if isinstance(node.target, cst.Name) else None, n)
        elif isinstance(node, cst.AsName):
            self._bind(node.name, None, n)
        elif isinstance(node, cst.NamedExpr):
            self._bind(node.target, node.value, n)

    def _bind(self, target: cst.CSTNode, value: cst.CSTNode | None, n: int) -> None:
        if isinstance(target, cst.Name):
            self.bindings.setdefault(target.value, []).append((n, value))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for el in target.elements:
                self._bind(el.value, None, n)
        elif isinstance(target, cst.StarredElement):
            self._bind(target.value, None, n)

    def _unpack(self, target: cst.Tuple | cst.List, value: cst.BaseExpression, n: int) -> None:
        """`_, _, h, w = x.shape`, `h, w = x.shape[-2:]`, `b, c = x.size()`: which
        index of the shape each name gets (slices with literal bounds only)."""
        elements = target.elements
        if any(isinstance(e, cst.StarredElement) for e in elements):
            return
        shape, start = _shape_slice(value, len(elements))
        if shape is None:
            return
        for i, el in enumerate(elements):
            if isinstance(el.value, cst.Name):
                index = start + i
                self.unpacked.setdefault(el.value.value, []).append((n, shape, index))

    def _before(self, name: str, at: cst.CSTNode) -> tuple[bool, cst.CSTNode | None, int]:
        """(found, value, order) of the last binding of `name` before `at`."""
        where = self.order.get(id(at), 1 << 30)
        last: tuple[bool, cst.CSTNode | None, int] = (False, None, 0)
        for n, value in self.bindings.get(name, ()):
            if n < where:
                last = (True, value, n)
        return last

    def tensor_taint(self, expr: cst.BaseExpression, at: cst.CSTNode) -> Taint | None:
        """`taint`, for a tensor (not a list of them)."""
        found = self.taint(expr, at)
        return None if found is None or found.seq else found

    def taint(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> Taint | None:
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            found, value, _ = self._before(expr.value, at)
            if not found:
                return self.params.get(expr.value)
            if isinstance(value, cst.AugAssign):
                if not isinstance(value.operator, AUG_ARITH):
                    return None
                return self.taint(expr, value, depth + 1)
            if isinstance(value, (cst.For, cst.CompFor)):  # `for f in feats`
                return _element(self.taint(value.iter, value, depth + 1))
            if isinstance(value, cst.BaseExpression):
                return self.taint(value, value, depth + 1)
            return None
        if isinstance(expr, (cst.List, cst.Tuple)):
            parts = [
                self.tensor_taint(e.value, at)
                for e in expr.elements
                if not isinstance(e, cst.StarredElement)
            ]
            if not parts or any(p is None for p in parts):
                return None
            first = parts[0]
            assert first is not None
            common = tuple(
                d for d in first.dims if all(p is not None and d[0] in dict(p.dims) for p in parts)
            )
            return Taint(first.param, common, first.rank, seq=True) if common else None
        if isinstance(expr, cst.Subscript):
            base = self.taint(expr.value, at, depth + 1)
            if base is not None and base.seq and len(expr.slice) == 1:
                index = expr.slice[0].slice
                if isinstance(index, cst.Index):
                    return _element(base)
            return None
        if isinstance(expr, cst.BinaryOperation):
            if not isinstance(expr.operator, ARITH):
                return None
            left = self.tensor_taint(expr.left, at) if depth < 8 else None
            if left is not None or not _number(expr.left):
                return left  # `a * x` with a tensor `a` may have more dims than `x`
            return self.tensor_taint(expr.right, at)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self.taint(expr.expression, at, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            q = self.ctx.qualname(func)
            if expr.args and (q in SAME_SHAPE_FUNCS or q in ELEMENTWISE_FUNCS):
                return self.tensor_taint(expr.args[0].value, at)
            if (
                q is None
                and isinstance(func, cst.Attribute)
                and func.attr.value in SAME_SHAPE_METHODS
            ):
                return self.tensor_taint(func.value, at)
            d = dotted(func)
            if d is not None and d.startswith("self.") and d[5:] in self.keep_all and expr.args:
                return self.tensor_taint(expr.args[0].value, at)
            if d is not None and d.startswith("self.") and d[5:] in self.layers and expr.args:
                inner = self.tensor_taint(expr.args[0].value, at)
                label = inner.label(0) if inner is not None else None
                if inner is not None and label is not None:  # `self.conv(x)`: dim 0 stays
                    return Taint(inner.param, ((0, label),), None)
        return None

    def shape_dim(
        self, expr: cst.BaseExpression, at: cst.CSTNode
    ) -> tuple[Taint, int | None] | None:
        """(the tainted tensor, the dim: None for all of them) a size expression reads:
        `x.shape[i]`, `x.size(i)`, a name unpacked from `x.shape`, `len(x)`, `x.numel()`."""
        if isinstance(expr, cst.Name):
            found, _, order = self._before(expr.value, at)
            if not found:
                return None
            for n, shape, at_index in self.unpacked.get(expr.value, ()):
                if n == order:
                    receiver = _shape_receiver(shape)
                    taint = self.tensor_taint(receiver, shape) if receiver is not None else None
                    return (taint, at_index) if taint is not None else None
            return None
        if isinstance(expr, cst.Subscript):
            receiver = _shape_receiver(expr.value)
            index = _single_index(expr)
            if receiver is not None and index is not None:
                taint = self.tensor_taint(receiver, expr)
                return (taint, index) if taint is not None else None
            return None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            method = expr.func.attr.value
            if method == "size" and expr.args:
                which = literal_int(expr.args[0].value)
                taint = self.tensor_taint(expr.func.value, expr)
                return (taint, which) if taint is not None and which is not None else None
            if method == "numel" and not expr.args:
                taint = self.tensor_taint(expr.func.value, expr)
                return (taint, None) if taint is not None else None
        if (
            isinstance(expr, cst.Call)
            and expr.args
            and self.ctx.qualname(expr.func) == "builtins.len"
        ):
            taint = self.tensor_taint(expr.args[0].value, expr)
            return (taint, 0) if taint is not None else None
        return None


def _element(taint: Taint | None) -> Taint | None:
    return replace(taint, seq=False) if taint is not None and taint.seq else None


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _shape_receiver(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """`x` of `x.shape` / `x.size()`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "shape":
        return expr.value
    if (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "size"
        and not expr.args
    ):
        return expr.func.value
    return None


def _single_index(expr: cst.Subscript) -> int | None:
    if len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    return literal_int(index.value) if isinstance(index, cst.Index) else None


def _shape_slice(value: cst.BaseExpression, count: int) -> tuple[cst.BaseExpression | None, int]:
    """(`x.shape`, first index) when `value` is `x.shape`, `x.size()` or a slice of it
    with a literal start (`x.shape[2:]`, `x.shape[-2:]`: -2 with `count` names)."""
    if _shape_receiver(value) is not None:
        return value, 0
    if isinstance(value, cst.Subscript) and len(value.slice) == 1:
        inner = value.slice[0].slice
        if isinstance(inner, cst.Slice) and _shape_receiver(value.value) is not None:
            start = literal_int(inner.lower) if inner.lower is not None else 0
            if start is None or inner.step is not None:
                return None, 0
            if start < 0 and inner.upper is None and -start == count:
                return value.value, start  # negative: `label` needs the rank
            if start >= 0:
                return value.value, start
    return None, 0


def calls_in(body: cst.CSTNode) -> list[cst.Call]:
    """The calls of a function body, not in nested defs."""
    out: list[cst.Call] = []
    stack = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Call):
            out.append(node)
        stack.extend(iter_children(node))
    return out


def passed_taints(flow: TaintFlow, call: cst.Call, params: Sequence[str]) -> dict[str, Taint]:
    """The callee's parameters (`params`, in order) the call passes a tainted value to."""
    passed: dict[str, Taint] = {}
    for i, arg in enumerate(call.args):
        if arg.star:
            break
        t = flow.taint(arg.value, call)
        if t is None:
            continue
        if arg.keyword is not None:
            if arg.keyword.value in params:
                passed[arg.keyword.value] = t
        elif i < len(params):
            passed[params[i]] = t
    return passed
