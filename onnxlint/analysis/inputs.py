"""How an export call's example inputs are given and named. Imports exported_model, scope.

- `example_inputs(ctx, call, ref)`: the positional example inputs (`args`), one expression
  each; `tensor_rank(ctx, expr, ref)`: the rank of one built by a torch factory with
  literal sizes (`torch.randn(1, 3, 224, 224)`).
- `names_arg(ctx, call, name)`, `names_arg_of`: a literal `input_names`/`output_names`;
  `input_positions(ctx, call)`: input name -> position, from those names and from the
  exported model's `forward` parameters.
- `resolve_value(ctx, expr, ref)`: the value of a variable assigned once in the export
  call's scope (or at module level); `literal_str_list(expr)`.

Used by the dynamic-shape rules (OLX3xx) and the dynamic dims (`onnxlint.analysis.dims`).
Nothing here imports or runs user code; everything answers None when unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.exported_model import ModelRef, exported_model, model_forward_params
from onnxlint.analysis.scope import named_assignments
from onnxlint.semantic.calls import ExportCall, ExportKind, keyword_arg, strip_method_calls

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

__all__ = [
    "example_inputs",
    "input_positions",
    "literal_str_list",
    "names_arg",
    "names_arg_of",
    "resolve_value",
    "tensor_rank",
]


def resolve_value(
    ctx: FileView, expr: cst.BaseExpression | None, ref: ModelRef | None = None
) -> cst.BaseExpression | None:
    """`expr`, or the value of the variable it names when that variable has exactly one
    assignment in the export call's scope (or, failing that, at module level)."""
    if expr is None or not isinstance(expr, cst.Name):
        return expr
    scopes: list[Sequence[cst.CSTNode]] = []
    if ref is not None:
        scopes.append(ref.scope)
    scopes.append(ctx.semantic.module_body)
    for stmts in scopes:
        found = named_assignments(ctx, stmts, expr.value)
        if len(found) == 1:
            node = found[0]
            assert isinstance(node, (cst.Assign, cst.AnnAssign))
            if isinstance(node, cst.Assign) and len(node.targets) != 1:
                return None
            return node.value
        if found:
            return None
    return None


def literal_str_list(expr: cst.BaseExpression | None) -> list[str] | None:
    """`["a", "b"]` / `("a", "b")` -> ["a", "b"]; None unless every element is a plain string."""
    if not isinstance(expr, (cst.List, cst.Tuple)):
        return None
    out: list[str] = []
    for el in expr.elements:
        if not isinstance(el, cst.Element) or not isinstance(el.value, cst.SimpleString):
            return None
        value = el.value.evaluated_value
        if not isinstance(value, str):
            return None
        out.append(value)
    return out


def example_inputs(
    ctx: FileView, call: ExportCall, ref: ModelRef | None
) -> list[cst.BaseExpression] | None:
    """The positional example inputs of an export call (`args`), one expression each.

    `(x, y)` -> [x, y]; a single non-tuple expression -> [it] (torch wraps it); a name bound
    once to a tuple literal is followed. None when the count cannot be known.
    """
    arg = call.arg("args", 1)
    if arg is None:
        return [] if call.kind in (ExportKind.ONNX_DYNAMO, ExportKind.ONNX_TORCHSCRIPT) else None
    value: cst.BaseExpression | None = arg.value
    if isinstance(value, cst.Name):
        resolved = resolve_value(ctx, value, ref)
        if isinstance(resolved, (cst.Tuple, cst.List)):
            value = resolved
    if isinstance(value, cst.Tuple):
        elements = []
        for el in value.elements:
            if not isinstance(el, cst.Element) or isinstance(el, cst.StarredElement):
                return None
            elements.append(el.value)
        # `(x, {"mask": m})`: a trailing dict is keyword inputs to the legacy exporter.
        if elements and isinstance(elements[-1], cst.Dict):
            return None
        return elements
    if isinstance(value, (cst.List, cst.Dict, cst.ListComp, cst.GeneratorExp)):
        return None
    if value is None:
        return None
    # A single input: only when it clearly is one tensor (a name bound to a call could
    # just as well hold a tuple of inputs).
    single = resolve_value(ctx, value, ref) if isinstance(value, cst.Name) else value
    return [value] if single is not None and _is_tensor_expr(ctx, single) else None


_TENSOR_CHAIN = frozenset(
    {"to", "cuda", "cpu", "float", "half", "double", "long", "int", "bool", "unsqueeze"}
    | {"view", "reshape", "permute", "contiguous", "clone", "detach", "requires_grad_"}
    | {"expand", "repeat", "transpose", "squeeze", "type", "bfloat16"}
)


def _is_tensor_expr(ctx: FileView, expr: cst.BaseExpression) -> bool:
    """A `torch.<factory>(...)` call, possibly followed by tensor methods (`.to(device)`)."""
    expr = strip_method_calls(expr, _TENSOR_CHAIN)
    if not isinstance(expr, cst.Call):
        return False
    q = ctx.qualname(expr.func) or ""
    if q in ("torch.autograd.Variable", "torch.Tensor", "torch.tensor", "torch.from_numpy"):
        return True
    return q.startswith("torch.") and q.count(".") == 1 and q[6:7].islower()


def names_arg_of(
    ctx: FileView, call: ExportCall, name: str, ref: ModelRef | None
) -> list[str] | None:
    """A literal list of names (`[]` when the argument is absent), None when unreadable."""
    arg = call.arg(name)
    if arg is None:
        return []
    return literal_str_list(resolve_value(ctx, arg.value, ref))


_SHAPE_FACTORIES = frozenset(
    {"randn", "rand", "zeros", "ones", "empty", "full", "randint", "randn_like", "ones_like"}
)


def names_arg(ctx: FileView, call: ExportCall, name: str) -> list[str] | None:
    """A literal `input_names`/`output_names` list (`[]` when absent), None when unreadable."""
    return names_arg_of(ctx, call, name, exported_model(ctx, call))


def tensor_rank(ctx: FileView, expr: cst.BaseExpression, ref: ModelRef | None) -> int | None:
    """The rank of an example input built by a torch factory with literal sizes
    (`torch.randn(1, 3, 224, 224)`, `torch.zeros((2, 8), dtype=...)`), else None."""
    value = resolve_value(ctx, expr, ref)
    if not isinstance(value, cst.Call):
        return None
    q = ctx.qualname(value.func) or ""
    if not q.startswith("torch.") or q.count(".") != 1:
        return None
    fn = q.split(".", 1)[1]
    if fn not in _SHAPE_FACTORIES or fn.endswith("_like"):
        return None
    size_kw = keyword_arg(value, "size")
    pos = [a for a in value.args if a.keyword is None]
    if any(a.star for a in pos):
        return None
    if size_kw is not None:
        sizes: list[cst.BaseExpression] = [size_kw.value]
    elif fn == "randint":
        sizes = [pos[-1].value] if len(pos) >= 2 else []
    elif fn == "full":
        sizes = [pos[0].value] if pos else []
    else:
        sizes = [a.value for a in pos]
    if len(sizes) == 1 and isinstance(sizes[0], (cst.Tuple, cst.List)):
        elements = sizes[0].elements
        if any(
            not isinstance(e, cst.Element) or isinstance(e, cst.StarredElement) for e in elements
        ):
            return None
        return len(elements)
    if not sizes or any(isinstance(s, (cst.Tuple, cst.List)) for s in sizes):
        return None
    if len(sizes) == 1 and not isinstance(sizes[0], cst.Integer):
        return None  # `torch.zeros(shape)`: a size variable
    return len(sizes)


def input_positions(ctx: FileView, call: ExportCall) -> dict[str, int] | None:
    """Input name -> index of the positional example input it names: from `input_names`,
    and from the `forward` parameter names when the model's class is in this file."""
    ref = exported_model(ctx, call)
    names = names_arg_of(ctx, call, "input_names", ref)
    if names is None:
        return None
    out = {n: i for i, n in enumerate(names)}
    params = model_forward_params(ctx, ref)
    for i, p in enumerate(params or ()):
        out.setdefault(p, i)
    return out
