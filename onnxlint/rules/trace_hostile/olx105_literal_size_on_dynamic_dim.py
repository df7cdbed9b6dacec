"""OLX105: a literal size (`x.view(2, 12)`, `x + torch.zeros(2, 3)`) on a dim declared dynamic."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from onnxlint.analysis.exportflow import (
    example_inputs,
    exported_model,
    forward_params,
    input_positions,
    resolve_value,
    tensor_rank,
)
from onnxlint.analysis.file import FileView
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.project.exports import call_line
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent, make_fix
from onnxlint.semantic.calls import (
    ExportCall,
    ExportKind,
    keyword_arg,
    literal_int,
    strip_method_calls,
)
from onnxlint.semantic.index import ClassInfo, FunctionInfo, block_index
from onnxlint.source.blocks import Block
from onnxlint.source.walker import dotted, iter_children

_EXPORTS = (
    ExportKind.ONNX_DYNAMO,
    ExportKind.ONNX_TORCHSCRIPT,
    ExportKind.ONNX_DYNAMO_EXPORT,
    ExportKind.TORCH_EXPORT,
)
# Methods and functions whose result has the shape of their tensor input.
_SAME_SHAPE_METHODS = frozenset(
    {"float", "half", "double", "bfloat16", "long", "int", "bool", "to", "type", "cuda", "cpu"}
    | {"contiguous", "clone", "detach", "abs", "exp", "log", "sqrt", "rsqrt", "neg", "sigmoid"}
    | {"tanh", "relu", "clamp", "clip", "pow", "add", "sub", "mul", "div", "masked_fill"}
    | {"softmax", "log_softmax", "sin", "cos", "floor", "ceil", "round", "reciprocal"}
)
_SAME_SHAPE_FUNCS = frozenset(
    {f"torch.{n}" for n in ("relu", "sigmoid", "tanh", "exp", "log", "abs", "sqrt", "sin")}
    | {f"torch.{n}" for n in ("cos", "clamp", "softmax", "log_softmax", "neg", "rsqrt")}
    | {f"torch.nn.functional.{n}" for n in ("relu", "gelu", "silu", "sigmoid", "tanh", "elu")}
    | {f"torch.nn.functional.{n}" for n in ("leaky_relu", "softmax", "log_softmax", "dropout")}
    | {"torch.nn.functional.mish", "torch.nn.functional.hardswish", "torch.nn.functional.normalize"}
)
_ELEMENTWISE_FUNCS = frozenset(
    {"torch.add", "torch.sub", "torch.mul", "torch.div", "torch.maximum", "torch.minimum"}
)
_CONCATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
_INPLACE_ARITH = frozenset({"add_", "sub_", "mul_", "div_", "add", "sub", "mul", "div"})
_ARITH = (
    cst.Add,
    cst.Subtract,
    cst.Multiply,
    cst.Divide,
    cst.FloorDivide,
    cst.Modulo,
    cst.Power,
)
_AUG_ARITH = (
    cst.AddAssign,
    cst.SubtractAssign,
    cst.MultiplyAssign,
    cst.DivideAssign,
    cst.FloorDivideAssign,
    cst.ModuloAssign,
    cst.PowerAssign,
)
# Factories taking sizes as leading positional arguments or one tuple.
_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"}
)
_NEW_FACTORIES = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
_DEVICE_CHAIN = frozenset({"to", "float", "half", "double", "long", "int", "bool", "cuda", "cpu"})
_DIM_QUALNAMES = ("torch.export.Dim", "torch.export.dynamic_shapes.Dim")


@dataclass(frozen=True)
class Taint:
    """A value with the layout of a forward input that has dynamic dims."""

    param: str  # the forward parameter it comes from
    dims: tuple[tuple[int, str], ...]  # (dim index, dim name) declared dynamic
    rank: int | None  # the example input's rank when known


Facts = dict[int, dict[str, Taint]]  # function node id -> parameter -> taint


class LiteralSizeOnDynamicDim(Rule):
    """
    ## What it does
    Flags a literal size where a dimension the export declares dynamic goes
    (`x.view(2, 12)`, `x.expand(2, 3, 4)`, `x + torch.zeros(2, 3)`) in code reachable
    from the exported model's `forward`.

    It reports only when the same file exports the model (its class defined in the
    file) with `dynamic_shapes` or `dynamic_axes` marking that dimension of that input,
    and follows the input through elementwise operations and into the methods and
    helpers `forward` calls. A `view`/`reshape` is flagged when its leading size is a
    literal and its other sizes are constants (so the element count is fixed); a
    broadcast when the literal-sized tensor's size meets the dynamic dimension
    (aligned from the right, so the input's rank must be known from the example input);
    `torch.cat`/`torch.stack` with a literal-sized tensor when the literal sits at the
    dynamic dimension and the concatenation runs along another one.

    ## Why is this bad?
    The literal forces the dimension to one size. With string dims (`{0: "batch"}`) or
    `Dim.DYNAMIC`, `torch.onnx.export` fails with `tracing inferred a static shape of 2
    for dimension inputs['x'].shape[0]`; with a named `torch.export.Dim("batch")` it
    silently applies torch's suggested fix and exports a model whose batch is fixed at
    2; the legacy exporter writes the constant into the graph, which then fails or
    computes garbage for any other batch size. A size of 1 (which broadcasts) and `-1`
    are fine.

    ## Example
    ```python
    class Net(torch.nn.Module):
        def forward(self, x):
            return x.view(2, 12)

    torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
    ```

    ## Use instead
    ```python
    class Net(torch.nn.Module):
        def forward(self, x):
            return x.view(x.shape[0], 12)  # or x.view(-1, 12)
    ```

    ## Fix safety
    Unsafe, offered for `view`/`reshape` on a plain name whose leading dimension is the
    dynamic one (the literal becomes `x.shape[0]`) and for `expand` (the literal becomes
    `-1`, keeping the dimension): it assumes the literal meant "the batch", which the
    linter cannot know. No fix for broadcasting against a literal-sized tensor.

    ## References
    - https://docs.pytorch.org/docs/stable/export.html#expressing-dynamism
    - https://github.com/pytorch/pytorch/issues/157621
    - https://github.com/pytorch/pytorch/blob/v2.13.0/torch/onnx/_internal/exporter/_capture_strategies.py
    """

    code = "OLX105"
    name = "literal-size-on-dynamic-dim"
    severity = Severity.ERROR
    fix_safety = FixSafety.UNSAFE
    requires = ("view", "reshape", "expand", "zeros", "ones", "empty", "rand", "full")
    file_scope = True
    forward_only = True

    @classmethod
    def applies_to(cls, ctx: Context) -> bool:
        reach = ctx.reach
        return ctx.semantic.declares_dynamic_dims or (reach is not None and reach.exports_dynamic)

    def block_key(self, block: Block) -> object:
        """Findings in a block depend on the rest of the file only through the tainted
        parameters of the block's functions (`_facts`): a cell of a notebook that exports
        with a dynamic batch is not walked again for this rule after an edit elsewhere."""
        facts = _facts(self.ctx)
        idx = block_index(block)
        funcs = [*idx.functions, *(m for c in idx.classes for m in c.methods.values())]
        return tuple(
            (i, tuple(sorted(facts[id(f.node)].items())))
            for i, f in enumerate(funcs)
            if facts.get(id(f.node))
        )

    VALID = [
        Valid(  # no export call in the file
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x.view(2, 12) + torch.zeros(2, 12)
                """
            )
        ),
        Valid(  # dim 1 is dynamic, the literal is at position 0
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x.view(2, 12)
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({1: "seq"},))
                """
            )
        ),
        Valid(  # -1, the input's own size, and a size-1 broadcast
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        y = x.view(-1, 12)
                        z = x.reshape(x.shape[0], 12)
                        w = x.view(2, -1)  # folds the batch, does not fix it
                        return y + torch.ones(1, 12) + z.expand(-1, 12)
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
                """
            )
        ),
        Valid(  # the value no longer has the input's layout
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        h = x.transpose(0, 1)
                        x = self.proj(x)
                        return h.view(3, 8), x.reshape(2, 12)
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
                """
            )
        ),
        Valid(  # another class is exported
            dedent(
                """
                import torch
                class Head(torch.nn.Module):
                    def forward(self, x):
                        return x.view(2, 12)
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
                """
            )
        ),
        Valid(  # broadcast aligns from the right: 4 meets dim 1, not the batch
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x + torch.zeros(4, 5)
                torch.onnx.export(Net(), (torch.randn(2, 4, 5),), dynamic_shapes=({0: "batch"},))
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
                    def forward(self, x):
                        return x.view(2, 12)
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
                """
            ),
            line=4,
            message="'batch'",
            fixed=dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x.view(x.shape[0], 12)
                torch.onnx.export(Net(), (torch.randn(2, 3, 4),), dynamic_shapes=({0: "batch"},))
                """
            ),
        ),
        Invalid(  # broadcast against a literal-sized tensor, through a helper method
            dedent(
                """
                import torch
                from torch.export import Dim
                class Net(torch.nn.Module):
                    def forward(self, x):
                        return self.shift(torch.relu(x) * 2)
                    def shift(self, h):
                        bias = torch.zeros(2, 3)
                        return h + bias
                def main():
                    model = Net().eval()
                    x = torch.randn(2, 3)
                    torch.onnx.export(model, (x,), dynamic_shapes={"x": {0: Dim("batch")}})
                """
            ),
            line=7,
            message="broadcast",
        ),
        Invalid(  # dynamic_axes keyed by input_names
            dedent(
                """
                import torch
                class Net(torch.nn.Module):
                    def forward(self, ids):
                        ids = ids.float()
                        return ids.reshape((4, 16))
                torch.onnx.export(Net(), (torch.ones(4, 16),), "m.onnx", input_names=["input_ids"],
                                  dynamic_axes={"input_ids": {0: "batch"}})
                """
            ),
            line=5,
            message="declares dynamic",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        env = self._env()
        if env is None:
            return
        func = node.func
        q = self.ctx.qualname(func)
        if q == "torch.reshape" and len(node.args) == 2:
            self._check_resize(node, node.args[0].value, "reshape", _sizes(node.args[1:]), env)
        elif q in _ELEMENTWISE_FUNCS and len(node.args) >= 2:
            a, b = node.args[0].value, node.args[1].value
            self._check_broadcast(a, b, env)
            self._check_broadcast(b, a, env)
        elif q in _CONCATS and node.args:
            self._check_concat(node, q, env)
        elif q is None and isinstance(func, cst.Attribute):
            method = func.attr.value
            if method in ("view", "reshape", "expand"):
                self._check_resize(node, func.value, method, _sizes(node.args), env)
            elif method in _INPLACE_ARITH and len(node.args) == 1:
                self._check_broadcast(func.value, node.args[0].value, env)

    def visit_BinaryOperation(self, node: cst.BinaryOperation) -> None:
        if not isinstance(node.operator, _ARITH):
            return
        env = self._env()
        if env is not None:
            self._check_broadcast(node.left, node.right, env)
            self._check_broadcast(node.right, node.left, env)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, _AUG_ARITH):
            return
        env = self._env()
        if env is not None:
            self._check_broadcast(node.target, node.value, env)

    # -- checks

    def _env(self) -> _TaintFlow | None:
        """The taint analysis of the function being walked, None when it has no taint."""
        func = self.ctx.function
        if func is None or self.ctx.function_stack[-1] is not func:
            return None
        params = _facts(self.ctx).get(id(func.node))
        if not params:
            return None
        return _flow(self.ctx, func, params)

    def _check_resize(
        self,
        call: cst.Call,
        receiver: cst.BaseExpression,
        method: str,
        sizes: list[cst.BaseExpression] | None,
        env: _TaintFlow,
    ) -> None:
        if not sizes:
            return
        taint = env.taint(receiver, call)
        if taint is None:
            return
        for dim, label in taint.dims:
            if method == "expand":
                if taint.rank is None:
                    continue
                pos = dim + len(sizes) - taint.rank  # expand aligns from the right
            elif dim == 0 and all(_static(s) for s in sizes[1:]):
                pos = 0  # a view keeps only the leading dim in place. Every other size is
                # a constant, so the element count is fixed; with a -1 or a size read from
                # a shape (`x.view(2, -1)`, `x.reshape(1, n, c)`) the batch may move elsewhere
            else:
                continue
            if not 0 <= pos < len(sizes):
                continue
            lit = sizes[pos]
            value = _literal(lit)
            if value is None or value < 1:
                continue
            recv = self.ctx.code_of(receiver)
            fix = None
            if method == "expand":
                text = "-1"
                fix = make_fix("Use -1", self.ctx.replace(lit, "-1"), safety=FixSafety.UNSAFE)
            else:
                text = f"{recv}.shape[0]" if isinstance(receiver, cst.Name) else "-1"
                if isinstance(receiver, cst.Name):
                    fix = make_fix(
                        f"Use `{text}`", self.ctx.replace(lit, text), safety=FixSafety.UNSAFE
                    )
            self.report(
                lit,
                f"literal size {value} in `.{method}()` fixes dim {dim} of input "
                f"`{taint.param}`, which the export declares dynamic ('{label}'): use "
                f"`{text}` instead of {value}",
                fix=fix,
            )
            return

    def _check_concat(self, call: cst.Call, q: str, env: _TaintFlow) -> None:
        """`torch.cat([x, torch.zeros(2, 3)], dim=1)`: every other dim must match."""
        seq = call.args[0].value
        if call.args[0].keyword is not None or not isinstance(seq, (cst.List, cst.Tuple)):
            return
        items = [e.value for e in seq.elements if isinstance(e, cst.Element)]
        if len(items) != len(seq.elements):
            return
        dim_arg = keyword_arg(call, "dim") or keyword_arg(call, "axis")
        if dim_arg is None:
            dim_arg = call.args[1] if len(call.args) > 1 and call.args[1].keyword is None else None
        cat_dim = literal_int(dim_arg.value) if dim_arg is not None else 0
        if cat_dim is None:
            return
        taint = next((t for t in (env.taint(i, i) for i in items) if t is not None), None)
        if taint is None:
            return
        for item in items:
            sizes = env.literal_factory(item)
            if sizes is None:
                continue
            if taint.rank is not None and taint.rank != len(sizes):
                continue  # concatenated tensors have one rank: the layout is not what we think
            rank = len(sizes) + (1 if q == "torch.stack" else 0)
            along = cat_dim + rank if cat_dim < 0 else cat_dim
            for dim, label in taint.dims:
                if (dim == along and q != "torch.stack") or dim >= len(sizes):
                    continue
                value = _literal(sizes[dim])
                if value is None:
                    continue
                self.report(
                    sizes[dim],
                    f"tensor of literal size {value} is concatenated with input "
                    f"`{taint.param}` whose dim {dim} the export declares dynamic "
                    f"('{label}'): build it with `{taint.param}.shape[{dim}]` instead of {value}",
                )
                return

    def _check_broadcast(
        self, tensor: cst.BaseExpression, other: cst.BaseExpression, env: _TaintFlow
    ) -> None:
        taint = env.taint(tensor, tensor)
        if taint is None or taint.rank is None:
            return
        sizes = env.literal_factory(other)
        if sizes is None:
            return
        for dim, label in taint.dims:
            pos = dim - (taint.rank - len(sizes))  # broadcasting aligns from the right
            if not 0 <= pos < len(sizes):
                continue
            lit = sizes[pos]
            value = _literal(lit)
            if value is None or value < 2:
                continue
            self.report(
                lit,
                f"tensor of literal size {value} is broadcast against dim {dim} of input "
                f"`{taint.param}`, which the export declares dynamic ('{label}'): build it "
                f"with size 1 or `{taint.param}.shape[{dim}]` instead of {value}",
            )
            return


# --------------------------------------------------------------------------- helpers


def _literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    return None


def _static(expr: cst.BaseExpression) -> bool:
    """A size that cannot carry the batch: a literal other than -1, `self.<attr>` chains
    (config constants), and arithmetic on those."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.BinaryOperation):
        return _static(expr.left) and _static(expr.right)
    d = dotted(expr)
    return d is not None and d.startswith("self.") and "shape" not in d


def _number(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation):
        expr = expr.expression
    return isinstance(expr, (cst.Integer, cst.Float))


def _sizes(args: Sequence[cst.Arg]) -> list[cst.BaseExpression] | None:
    """Size arguments given positionally or as one tuple/list; None if unreadable."""
    pos = [a for a in args if a.keyword is None]
    if any(a.star for a in pos) or not pos:
        return None
    if len(pos) == 1 and isinstance(pos[0].value, (cst.Tuple, cst.List)):
        out = []
        for el in pos[0].value.elements:
            if not isinstance(el, cst.Element) or isinstance(el, cst.StarredElement):
                return None
            out.append(el.value)
        return out
    return [a.value for a in pos]


class _TaintFlow:
    """Which values of one function carry a forward input's layout (source order)."""

    def __init__(self, ctx: Context, func: FunctionInfo, params: dict[str, Taint]) -> None:
        self.ctx = ctx
        self.params = params
        self.order: dict[int, int] = {}
        self.bindings: dict[str, list[tuple[int, cst.CSTNode | None]]] = {}
        self._index(func.node.body)

    def _index(self, body: cst.CSTNode) -> None:
        """Number nodes in source order; a binding counts once its whole statement is done
        (so `x = x.float()` reads the earlier `x`)."""
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
            stack.extend((c, False) for c in reversed(list(iter_children(node))))

    def _bindings_of(self, node: cst.CSTNode, n: int) -> None:
        if isinstance(node, cst.Assign):
            for t in node.targets:
                value = node.value if isinstance(t.target, cst.Name) else None
                self._bind(t.target, value, n)
        elif isinstance(node, cst.AnnAssign):
            self._bind(node.target, node.value, n)
        elif isinstance(node, cst.AugAssign):
            self._bind(node.target, node, n)
        elif isinstance(node, (cst.For, cst.CompFor)):
            self._bind(node.target, None, n)
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

    def _before(self, name: str, at: cst.CSTNode) -> tuple[bool, cst.CSTNode | None]:
        """(found, value) of the last binding of `name` before `at`."""
        where = self.order.get(id(at), 1 << 30)
        last: tuple[bool, cst.CSTNode | None] = (False, None)
        for n, value in self.bindings.get(name, ()):
            if n < where:
                last = (True, value)
        return last

    def taint(self, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> Taint | None:
        if depth > 8:
            return None
        if isinstance(expr, cst.Name):
            found, value = self._before(expr.value, at)
            if not found:
                return self.params.get(expr.value)
            if isinstance(value, cst.AugAssign):
                if not isinstance(value.operator, _AUG_ARITH):
                    return None
                return self.taint(expr, value, depth + 1)
            if isinstance(value, cst.BaseExpression):
                return self.taint(value, value, depth + 1)
            return None
        if isinstance(expr, cst.BinaryOperation):
            if not isinstance(expr.operator, _ARITH):
                return None
            left = self.taint(expr.left, at, depth + 1)
            if left is not None or not _number(expr.left):
                return left  # `a * x` with a tensor `a` may have more dims than `x`
            return self.taint(expr.right, at, depth + 1)
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
            return self.taint(expr.expression, at, depth + 1)
        if isinstance(expr, cst.Call):
            func = expr.func
            q = self.ctx.qualname(func)
            if expr.args and (q in _SAME_SHAPE_FUNCS or q in _ELEMENTWISE_FUNCS):
                return self.taint(expr.args[0].value, at, depth + 1)
            if (
                q is None
                and isinstance(func, cst.Attribute)
                and func.attr.value in _SAME_SHAPE_METHODS
            ):
                return self.taint(func.value, at, depth + 1)
        return None

    def literal_factory(
        self, expr: cst.BaseExpression, depth: int = 0
    ) -> list[cst.BaseExpression] | None:
        """The size arguments of `torch.zeros(2, 3)` (maybe `.to(...)`, or a name bound
        to it before), when every size is an integer literal."""
        if isinstance(expr, cst.Name) and depth < 3:
            found, value = self._before(expr.value, expr)
            if found and isinstance(value, cst.BaseExpression):
                return self.literal_factory(value, depth + 1)
            return None
        expr = strip_method_calls(expr, _DEVICE_CHAIN)
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        q = self.ctx.qualname(func)
        args = [a for a in expr.args if a.keyword is None]
        method = func.attr.value if isinstance(func, cst.Attribute) else ""
        if q in _FACTORIES or (q is None and method in _NEW_FACTORIES):
            full = q == "torch.full" or method == "new_full"
            size_kw = keyword_arg(expr, "size")
            if size_kw is not None:
                sizes = _sizes([size_kw.with_changes(keyword=None)])
            else:
                sizes = _sizes(args[:1] if full else args)
            if sizes and all(_literal(s) is not None for s in sizes):
                return sizes
        return None


def _flow(ctx: Context, func: FunctionInfo, params: dict[str, Taint]) -> _TaintFlow:
    memo = ctx.semantic.memo
    key = ("olx105-flow", id(func.node))
    found = memo.get(key)
    if not isinstance(found, _TaintFlow):
        found = _TaintFlow(ctx, func, params)
        memo[key] = found
    return found


# --------------------------------------------------------------------------- export facts


def _facts(ctx: Context) -> Facts:
    """Per function reachable from an exported model's `forward`: its tainted parameters."""
    memo = ctx.semantic.memo
    found = memo.get("olx105-facts")
    if isinstance(found, dict):
        return found
    facts: Facts = {}
    memo["olx105-facts"] = facts
    for call in ctx.semantic.export_calls:
        if call.kind not in _EXPORTS:
            continue
        ref = exported_model(ctx, call)
        if ref is None or ref.class_info is None:
            continue
        declared = _declared(ctx, call, ref.class_info)
        if declared:
            _propagate(ctx, ref.class_info, declared, facts)
    _remote_facts(ctx, facts)
    return facts


def _remote_facts(ctx: Context, facts: Facts) -> None:
    """The same for a model class of this file that an export in another file of the
    project exports with dynamic dims (`tools/export.py` exporting `models/head.py`)."""
    reach, project = ctx.reach, ctx.project
    if reach is None or project is None or not reach.roots:
        return
    here = os.path.abspath(ctx.path)
    for name, sites in reach.roots.items():
        cls = ctx.semantic.classes.get(name)
        params = forward_params(ctx, cls) if cls is not None else None
        if cls is None or params is None:
            continue
        for site in sorted(sites, key=lambda s: (s.path, s.line)):
            if site.path == here or not site.dynamic or site.kind not in _EXPORTS:
                continue
            other = project.facts(site.path)
            if other is None:
                continue
            call = next(
                (c for c in other.semantic.export_calls if call_line(other, c.node) == site.line),
                None,
            )
            if call is None:
                continue
            declared = _declared(other.analysis, call, cls, params)
            if declared:
                _propagate(ctx, cls, declared, facts)


def _declared(
    ctx: FileView, call: ExportCall, cls: ClassInfo, params: list[str] | None = None
) -> dict[str, Taint]:
    """forward parameter -> its dynamic dims, from `dynamic_shapes` / `dynamic_axes`
    (`params`: the class's forward parameters when the class is in another file)."""
    ref = exported_model(ctx, call)
    if params is None:
        params = forward_params(ctx, cls)
    if params is None or ref is None:
        return {}
    entries: list[tuple[int, cst.BaseExpression, str]] = []
    shapes = keyword_arg(call.node, "dynamic_shapes")
    if shapes is not None:
        value = resolve_value(ctx, shapes.value, ref)
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
        positions = input_positions(ctx, call) or {}
        value = resolve_value(ctx, axes.value, ref)
        if isinstance(value, cst.Dict):
            for el in value.elements:
                if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                    key = el.key.evaluated_value
                    if isinstance(key, str) and key in positions:
                        entries.append((positions[key], el.value, key))
    if not entries:
        return {}
    inputs = example_inputs(ctx, call, ref)
    out: dict[str, Taint] = {}
    for pos, entry, key_name in entries:
        if pos >= len(params):
            continue
        entry = resolve_value(ctx, entry, ref) or entry
        dims = _dims(ctx, entry, key_name or params[pos])
        if not dims:
            continue
        rank = None
        if inputs is not None and pos < len(inputs):
            rank = tensor_rank(ctx, inputs[pos], ref)
        if rank is not None:
            dims = [(d + rank if d < 0 else d, n) for d, n in dims]
            dims = [(d, n) for d, n in dims if 0 <= d < rank]
        dims = [(d, n) for d, n in dims if d >= 0]
        if dims:
            out[params[pos]] = Taint(params[pos], tuple(sorted(dims)), rank)
    return out


def _dims(ctx: FileView, entry: cst.BaseExpression, key: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    if isinstance(entry, cst.Dict):
        for el in entry.elements:
            if not isinstance(el, cst.DictElement):
                continue
            axis = literal_int(el.key)
            label = _dim_label(ctx, el.value)
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
            label = _dim_label(ctx, item.value)  # dynamic_shapes per-dim form: (Dim, None)
            if label is not None:
                out.append((i, label))
    return out


def _dim_label(ctx: FileView, spec: cst.BaseExpression) -> str | None:
    """The name of a dynamic dim spec: a string, `Dim("b")`, `Dim.DYNAMIC`, a variable
    bound to a `Dim`; None for `None`, `Dim.AUTO`/`Dim.STATIC` and literals."""
    if isinstance(spec, cst.SimpleString):
        v = spec.evaluated_value
        return v if isinstance(v, str) else None
    if isinstance(spec, cst.Name):
        if spec.value in ("None", "True", "False"):
            return None
        value = resolve_value(ctx, spec)
        if isinstance(value, cst.Call):
            return _dim_label(ctx, value) or spec.value
        return spec.value if value is None else None
    if isinstance(spec, cst.Attribute):
        d = dotted(spec) or ""
        if d.endswith(".DYNAMIC"):
            return "Dim.DYNAMIC"
        return None
    if isinstance(spec, cst.Call):
        q = ctx.qualname(spec.func) or ""
        if q in _DIM_QUALNAMES or q.endswith(".Dim"):
            first = spec.args[0].value if spec.args else None
            if isinstance(first, cst.SimpleString) and isinstance(first.evaluated_value, str):
                return first.evaluated_value
            return "Dim"
    return None


def _propagate(ctx: Context, cls: ClassInfo, declared: dict[str, Taint], facts: Facts) -> None:
    """Carry the tainted parameters from `forward` into the methods and module functions it
    calls (arguments matched by position or keyword)."""
    fwd = ctx.semantic.find_method(cls.name, "forward")
    if fwd is None:
        return
    todo: list[tuple[FunctionInfo, dict[str, Taint]]] = [(fwd, declared)]
    steps = 0
    while todo and steps < 64:
        steps += 1
        func, params = todo.pop()
        have = facts.setdefault(id(func.node), {})
        new = {k: v for k, v in params.items() if k not in have}
        if not new:
            continue
        have.update(new)
        memo_key = ("olx105-flow", id(func.node))
        ctx.semantic.memo.pop(memo_key, None)
        flow = _TaintFlow(ctx, func, have)
        for node in _calls(func.node.body):
            target = _callee(ctx, cls, node)
            if target is None:
                continue
            names = [p.name.value for p in target.params()]
            passed: dict[str, Taint] = {}
            for i, arg in enumerate(node.args):
                if arg.star:
                    break
                t = flow.taint(arg.value, node)
                if t is None:
                    continue
                if arg.keyword is not None:
                    if arg.keyword.value in names:
                        passed[arg.keyword.value] = t
                elif i < len(names):
                    passed[names[i]] = t
            if passed:
                todo.append((target, passed))


def _calls(body: cst.CSTNode) -> list[cst.Call]:
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


def _callee(ctx: Context, cls: ClassInfo, call: cst.Call) -> FunctionInfo | None:
    func = call.func
    if (
        isinstance(func, cst.Attribute)
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    ):
        return ctx.semantic.find_method(cls.name, func.attr.value)
    if isinstance(func, cst.Name):
        return ctx.semantic.functions.get(func.value)
    return None
