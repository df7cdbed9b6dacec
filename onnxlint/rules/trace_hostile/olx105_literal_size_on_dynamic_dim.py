"""OLX105: a literal size (`x.view(2, 12)`, `x + torch.zeros(2, 3)`) on a dim declared dynamic."""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from onnxlint.analysis.dims import (
    ARITH,
    AUG_ARITH,
    ELEMENTWISE_FUNCS,
    Taint,
    TaintFlow,
    calls_in,
    declared_dims,
    layer_attrs,
    passed_taints,
)
from onnxlint.analysis.exported_model import exported_model, forward_params
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Context, Invalid, Rule, Valid, dedent, make_fix
from onnxlint.semantic.calls import (
    ExportKind,
    keyword_arg,
    literal_int,
    strip_method_calls,
)
from onnxlint.semantic.index import ClassInfo, FunctionInfo, block_index
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import Block
from onnxlint.source.walker import dotted

_EXPORTS = (
    ExportKind.ONNX_DYNAMO,
    ExportKind.ONNX_TORCHSCRIPT,
    ExportKind.ONNX_DYNAMO_EXPORT,
    ExportKind.TORCH_EXPORT,
)
_CONCATS = frozenset({"torch.cat", "torch.concat", "torch.concatenate", "torch.stack"})
_INPLACE_ARITH = frozenset({"add_", "sub_", "mul_", "div_", "add", "sub", "mul", "div"})
# Factories taking sizes as leading positional arguments or one tuple.
_FACTORIES = frozenset(
    {"torch.zeros", "torch.ones", "torch.empty", "torch.rand", "torch.randn", "torch.full"}
)
_NEW_FACTORIES = frozenset({"new_zeros", "new_ones", "new_empty", "new_full"})
_DEVICE_CHAIN = frozenset({"to", "float", "half", "double", "long", "int", "bool", "cuda", "cpu"})


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
        elif q in ELEMENTWISE_FUNCS and len(node.args) >= 2:
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
        if not isinstance(node.operator, ARITH):
            return
        env = self._env()
        if env is not None:
            self._check_broadcast(node.left, node.right, env)
            self._check_broadcast(node.right, node.left, env)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if not isinstance(node.operator, AUG_ARITH):
            return
        env = self._env()
        if env is not None:
            self._check_broadcast(node.target, node.value, env)

    # -- checks

    def _env(self) -> TaintFlow | None:
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
        env: TaintFlow,
    ) -> None:
        if not sizes:
            return
        taint = env.tensor_taint(receiver, call)
        if taint is None:
            return
        for dim, label in taint.dims:
            if method == "expand":
                if taint.rank is None:
                    continue
                pos = dim + len(sizes) - taint.rank  # expand aligns from the right
            elif dim == 0 and all(_batch_free(env, s, call) for s in sizes[1:]):
                pos = 0  # a view keeps only the leading dim in place. Every other size is
                # a constant or another dim of the input (`_, _, ny, nx = y.shape`), so the
                # batch cannot move; with a -1 or a size that may hold the batch
                # (`x.view(2, -1)`, `x.reshape(1, n, c)`) it may move elsewhere
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
            chain, related = self.ctx.taint_chain(taint)
            self.report(
                lit,
                f"literal size {value} in `.{method}()` fixes dim {dim} of input "
                f"`{taint.param}`, which the export declares dynamic ('{label}'){_via(chain)}: "
                f"use `{text}` instead of {value}",
                fix=fix,
                related=related,
            )
            return

    def _check_concat(self, call: cst.Call, q: str, env: TaintFlow) -> None:
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
        taint = next((t for t in (env.tensor_taint(i, i) for i in items) if t is not None), None)
        if taint is None:
            return
        for item in items:
            sizes = literal_factory(env, item)
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
                chain, related = self.ctx.taint_chain(taint)
                self.report(
                    sizes[dim],
                    f"tensor of literal size {value} is concatenated with input "
                    f"`{taint.param}` whose dim {dim} the export declares dynamic "
                    f"('{label}'){_via(chain)}: build it with `{taint.param}.shape[{dim}]` "
                    f"instead of {value}",
                    related=related,
                )
                return

    def _check_broadcast(
        self, tensor: cst.BaseExpression, other: cst.BaseExpression, env: TaintFlow
    ) -> None:
        taint = env.tensor_taint(tensor, tensor)
        if taint is None or taint.rank is None:
            return
        sizes = literal_factory(env, other)
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
            chain, related = self.ctx.taint_chain(taint)
            self.report(
                lit,
                f"tensor of literal size {value} is broadcast against dim {dim} of input "
                f"`{taint.param}`, which the export declares dynamic ('{label}'){_via(chain)}: "
                f"build it with size 1 or `{taint.param}.shape[{dim}]` instead of {value}",
                related=related,
            )
            return


# --------------------------------------------------------------------------- helpers


def _literal(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    return None


def _via(chain: str) -> str:
    return f" ({chain})" if chain else ""


def _batch_free(env: TaintFlow, expr: cst.BaseExpression, at: cst.CSTNode, depth: int = 0) -> bool:
    """A size that cannot carry the batch: `_static`, or a dim other than the leading one
    read from the shape of a value with the input's layout (`ny` of `_, _, ny, nx =
    y.shape`, `y.size(2)`), and arithmetic on those."""
    if _static(expr):
        return True
    if depth > 4:
        return False
    if isinstance(expr, cst.BinaryOperation):
        return _batch_free(env, expr.left, at, depth + 1) and _batch_free(
            env, expr.right, at, depth + 1
        )
    read = env.shape_dim(expr, at)
    if read is not None:
        taint, dim = read
        if dim is None:
            return False
        if dim < 0:
            return taint.rank is not None and dim + taint.rank > 0
        return dim > 0
    if isinstance(expr, cst.Name):
        found, value, _ = env._before(expr.value, at)
        if found and isinstance(value, cst.BaseExpression) and not isinstance(value, cst.Name):
            return _batch_free(env, value, value, depth + 1)
    return False


def _static(expr: cst.BaseExpression) -> bool:
    """A size that cannot carry the batch: a literal other than -1, `self.<attr>` chains
    (config constants), and arithmetic on those."""
    if isinstance(expr, cst.Integer):
        return True
    if isinstance(expr, cst.BinaryOperation):
        return _static(expr.left) and _static(expr.right)
    d = dotted(expr)
    return d is not None and d.startswith("self.") and "shape" not in d


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


def literal_factory(
    flow: TaintFlow, expr: cst.BaseExpression, depth: int = 0
) -> list[cst.BaseExpression] | None:
    """The size arguments of `torch.zeros(2, 3)` (maybe `.to(...)`, or a name bound
    to it before), when every size is an integer literal."""
    if isinstance(expr, cst.Name) and depth < 3:
        found, value, _ = flow._before(expr.value, expr)
        if found and isinstance(value, cst.BaseExpression):
            return literal_factory(flow, value, depth + 1)
        return None
    expr = strip_method_calls(expr, _DEVICE_CHAIN)
    if not isinstance(expr, cst.Call):
        return None
    func = expr.func
    q = flow.ctx.qualname(func)
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


def _flow(ctx: Context, func: FunctionInfo, params: dict[str, Taint]) -> TaintFlow:
    memo = ctx.semantic.memo
    key = ("olx105-flow", id(func.node))
    found = memo.get(key)
    if not isinstance(found, TaintFlow):
        found = TaintFlow(ctx, func, params, _layers(ctx, func))
        memo[key] = found
    return found


def _layers(ctx: Context, func: FunctionInfo) -> frozenset[str]:
    cls = ctx.semantic.classes.get(func.class_name) if func.class_name else None
    return layer_attrs(ctx, cls)


# --------------------------------------------------------------------------- export facts


def _facts(ctx: Context) -> Facts:
    """Per function reachable from an exported model's `forward`: its tainted parameters,
    from this file's export calls and from the project model (`FileReach.taints`: what
    the exports of other files pass to this file's methods, submodules and helpers)."""
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
        declared = declared_dims(ctx, call, forward_params(ctx, ref.class_info))
        if declared:
            _propagate(ctx, ref.class_info, declared, facts)
    _remote_facts(ctx, facts)
    return facts


def _remote_facts(ctx: Context, facts: Facts) -> None:
    """The tainted parameters the project model found for this file's functions."""
    reach = ctx.reach
    if reach is None or not reach.taints:
        return
    for key, params in reach.taints.items():
        func = function_of(ctx.semantic, key)
        if func is None:
            continue
        have = facts.setdefault(id(func.node), {})
        for name, (taint, _site, _chain) in params.items():
            if taint.seq:
                continue
            have.setdefault(name, taint)


def function_of(model: SemanticModel, key: tuple[str | None, str]) -> FunctionInfo | None:
    """The function or method a reach key names in a file."""
    cls, name = key
    if cls is None:
        return model.functions.get(name)
    info = model.classes.get(cls)
    return info.methods.get(name) if info is not None else None


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
        flow = TaintFlow(ctx, func, have, _layers(ctx, func))
        for node in calls_in(func.node.body):
            target = _callee(ctx, cls, node)
            if target is None:
                continue
            passed = passed_taints(flow, node, [p.name.value for p in target.params()])
            if passed:
                todo.append((target, passed))


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
