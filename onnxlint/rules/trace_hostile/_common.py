"""Helpers shared by the OLX1xx rules: export-path facts and where a value flows."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence

import libcst as cst

from onnxlint.rules.base import Context
from onnxlint.semantic.calls import ExportKind
from onnxlint.semantic.kinds import Kind
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_descendants

# Calls that tell the code is being exported or compiled: code guarded by them was written
# with export in mind, so the tensor-condition rules leave it alone.
EXPORT_GUARD_TAILS = frozenset(
    {
        "is_torchdynamo_compiling",
        "is_compiling",
        "is_exporting",
        "is_in_onnx_export",
        "is_tracing",
        "is_scripting",
        "_get_tracing_state",
        "is_torch_fx_proxy",
        "is_fx_tracing",
    }
)

# Calls whose (leading) positional arguments are sizes.
SIZE_FUNCTIONS = frozenset(
    {
        "torch.zeros",
        "torch.ones",
        "torch.empty",
        "torch.full",
        "torch.rand",
        "torch.randn",
        "torch.randint",
        "torch.arange",
        "torch.eye",
        "torch.linspace",
        "torch.tensor_split",
    }
)
SIZE_METHODS = frozenset(
    {
        "view",
        "reshape",
        "expand",
        "repeat",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "narrow",
        "unflatten",
        "tile",
    }
)
# Calls a Python number passes through unchanged in kind (the use is decided further up).
_PASS_THROUGH = frozenset(
    {"builtins.int", "builtins.float", "builtins.round", "builtins.abs", "math.ceil", "math.floor"}
)

BRANCH, RANGE, SIZE = "branch", "range", "size"


def traced(ctx: Context) -> bool:
    """Whether the code being walked is captured by tracing (values become constants):
    by the exports of the project that reach it, else by the file's own exports."""
    sites = ctx.reaching_exports()
    if sites:  # a dynamo export that fails outranks a trace that freezes a constant
        return all(s.traced for s in sites)
    model = ctx.semantic
    if model.export_calls:
        return any(
            e.kind in (ExportKind.JIT_TRACE, ExportKind.ONNX_TORCHSCRIPT)
            for e in model.export_calls
        )
    return ctx.config.exporter == "torchscript"


def mentions_export_guard(ctx: Context, expr: cst.CSTNode) -> bool:
    """Whether `expr` calls an export/compile guard or tests `self.training` (exported
    models are in eval mode, so training-only code does not run)."""
    code = ctx.code_of(expr)
    if "self.training" in code and "not self.training" not in code:
        return True
    if "is_" not in code and "_get_tracing_state" not in code:
        return False
    for node in _walk(expr):
        if isinstance(node, cst.Call):
            d = dotted(node.func)
            if d is not None and d.rsplit(".", 1)[-1] in EXPORT_GUARD_TAILS:
                return True
        elif isinstance(node, cst.Name) and node.value in EXPORT_GUARD_TAILS:
            return True  # `is_compiling = torch.compiler.is_compiling()` ... `if is_compiling:`
    return False


def under_export_guard(ctx: Context, node: cst.CSTNode) -> bool:
    """True when an enclosing `if`/`while`/ternary/`and`/`or` tests an export guard."""
    chain = [*ctx.ancestors, node]
    for i in range(len(chain) - 1):
        a, child = chain[i], chain[i + 1]
        if isinstance(a, (cst.If, cst.While, cst.IfExp)):
            guard = a.test if child is not a.test else None
        elif isinstance(a, cst.BooleanOperation):
            guard = a.left if child is a.right else None
        else:
            continue
        if guard is not None and mentions_export_guard(ctx, guard):
            return True
        if isinstance(a, cst.If) and child is a.body and _selects_flash_attention(a.test):
            return True
    return False


def _selects_flash_attention(test: cst.BaseExpression) -> bool:
    """`if config._attn_implementation == "flash_attention_2":` (or `in (...)` of such
    names): the flash-attention path, CUDA kernels of the `flash_attn` package that no
    ONNX export runs (an exported model takes the eager or SDPA path)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    op = test.comparisons[0].operator
    if not isinstance(op, (cst.Equal, cst.In)):
        return False
    strings = [
        n.value.lower()
        for n in (test.left, *iter_descendants(test.comparisons[0].comparator))
        if isinstance(n, cst.SimpleString)
    ]
    if isinstance(test.comparisons[0].comparator, cst.SimpleString):
        strings.append(test.comparisons[0].comparator.value.lower())
    return bool(strings) and all("flash" in v for v in strings)


def _walk(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    yield from iter_descendants(node)


def size_call(ctx: Context, call: cst.Call, arg: cst.Arg | None = None) -> bool:
    """A call whose positional arguments are sizes: `torch.zeros(n)`, `x.view(n, -1)`.

    With `arg`, whether that argument is one of the sizes (`torch.full(size, fill)` has one).
    """
    q = ctx.qualname(call.func)
    if q not in SIZE_FUNCTIONS and not (
        isinstance(call.func, cst.Attribute) and call.func.attr.value in SIZE_METHODS
    ):
        return False
    if arg is None:
        return True
    if arg.keyword is not None:
        return arg.keyword.value in ("size", "sizes", "shape", "length", "end", "n")
    positional = [a for a in call.args if a.keyword is None]
    method = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if q in ("torch.full", "torch.randint") or method == "new_full":
        return arg is positional[0 if q != "torch.randint" else -1]
    if method == "narrow":
        return arg is not positional[0]
    return True


def classify_use(ctx: Context, chain: list[cst.CSTNode]) -> tuple[str | None, str | None]:
    """Where the value of `chain[-1]` goes, looking up its ancestors `chain[:-1]`.

    Returns (use, None) with use in BRANCH/RANGE/SIZE, (None, name) when the value is
    assigned to a plain name (whose uses decide), or (None, None) when it goes elsewhere.
    """
    for i in range(len(chain) - 1, 0, -1):
        child, parent = chain[i], chain[i - 1]
        if isinstance(parent, (cst.If, cst.While, cst.Assert, cst.IfExp)):
            return (BRANCH, None) if child is parent.test else (None, None)
        if isinstance(parent, (cst.CompIf, cst.BooleanOperation)):
            return BRANCH, None
        if isinstance(parent, cst.UnaryOperation):
            if isinstance(parent.operator, cst.Not):
                return BRANCH, None
            continue
        if isinstance(parent, cst.Comparison):
            if all(isinstance(c.operator, (cst.Is, cst.IsNot)) for c in parent.comparisons):
                return None, None  # `v is None` reads no value
            continue
        if isinstance(parent, cst.BinaryOperation):
            if ctx.kind(parent) is Kind.TENSOR:
                return None, None  # back into a tensor: OLX101 judges its truth
            continue
        if isinstance(parent, cst.ComparisonTarget):
            continue
        if isinstance(parent, cst.Arg):
            continue
        if isinstance(parent, cst.Call):
            if child is parent.func:
                return None, None
            q = ctx.qualname(parent.func)
            if q == "builtins.range":
                return RANGE, None
            if size_call(ctx, parent, child if isinstance(child, cst.Arg) else None):
                return SIZE, None
            if q in _PASS_THROUGH:
                continue
            return None, None
        if isinstance(parent, cst.Assign):
            if child is parent.value and len(parent.targets) == 1:
                target = parent.targets[0].target
                if isinstance(target, cst.Name):
                    return None, target.value
            return None, None
        return None, None
    return None, None


class NameUses:
    """For one function: which names reach a branch, a `range()` or a size argument."""

    def __init__(self, ctx: Context, body: cst.CSTNode) -> None:
        self.uses: dict[str, set[str]] = {}
        self.flows: dict[str, set[str]] = {}  # name -> names assigned from it
        stack: list[tuple[cst.CSTNode, list[cst.CSTNode]]] = [(body, [])]
        from onnxlint.source.walker import iter_children

        while stack:
            node, chain = stack.pop()
            here = [*chain, node]
            if isinstance(node, cst.Name) and chain:
                use, name = classify_use(ctx, here)
                if use is not None:
                    self.uses.setdefault(node.value, set()).add(use)
                elif name is not None and name != node.value:
                    self.flows.setdefault(node.value, set()).add(name)
            if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and chain:
                continue
            for child in iter_children(node):
                stack.append((child, here))

    def of(self, name: str) -> set[str]:
        """The uses of `name`, following two assignments (`n = v; m = n + 1; if m:`)."""
        out: set[str] = set(self.uses.get(name, ()))
        for nxt in self.flows.get(name, ()):
            out |= self.uses.get(nxt, set())
            for nxt2 in self.flows.get(nxt, ()):
                out |= self.uses.get(nxt2, set())
        return out


def name_uses(ctx: Context, cache: dict[int, NameUses]) -> NameUses | None:
    func = ctx.function
    if func is None:
        return None
    found = cache.get(id(func.node))
    if found is None:
        found = cache[id(func.node)] = NameUses(ctx, func.node.body)
    return found


def value_uses(ctx: Context, node: cst.CSTNode, cache: dict[int, NameUses]) -> set[str]:
    """Where the value of `node` (being visited) goes: BRANCH, RANGE, SIZE."""
    use, name = classify_use(ctx, [*ctx.ancestors, node])
    if use is not None:
        return {use}
    if name is not None:
        uses = name_uses(ctx, cache)
        return uses.of(name) if uses is not None else set()
    return set()


def is_tensor(ctx: Context, expr: cst.BaseExpression) -> bool:
    return ctx.kind(expr) is Kind.TENSOR


def unannotated_param(ctx: Context, expr: cst.BaseExpression) -> bool:
    """A bare parameter without annotation (its kind is only a guess)."""
    func = ctx.function
    if func is None or not isinstance(expr, cst.Name):
        return False
    for p in func.params():
        if p.name.value == expr.value:
            return p.annotation is None
    return False


def torch_name(model: SemanticModel) -> str | None:
    """The name the file binds the `torch` module to (`torch`, or `th` for `import torch as th`)."""
    if model.imports.get("torch") == "torch":
        return "torch"
    for bound, full in model.imports.items():
        if full == "torch":
            return bound
    return None


def assigned_values(
    ctx: Context, name: cst.Name, at: cst.CSTNode, *, unpack: bool = False
) -> list[cst.BaseExpression]:
    """The values assigned to `name` before `at` in the current function, in source order
    (empty when there is none, e.g. a parameter); with `unpack`, also its element of a
    literal tuple unpacked in parallel (`main, rest = parts[0], parts[1:]` gives `rest`
    the value `parts[1:]`)."""
    func = ctx.function
    if func is None:
        return []
    from onnxlint.source.walker import iter_descendants

    found: list[cst.BaseExpression] = []
    enclosing = {id(a) for a in ctx.ancestors}  # `x = np.exp(x)`: not yet assigned
    other = _other_branches(ctx.ancestors)
    for node in iter_descendants(func.node.body):
        if node is at:
            break
        if id(node) in enclosing or id(node) in other:
            continue
        if not isinstance(node, cst.Assign):
            continue
        if any(
            isinstance(t.target, cst.Name) and t.target.value == name.value for t in node.targets
        ):
            found.append(node.value)
        elif unpack:
            item = _parallel_item(node, name.value)
            if item is not None:
                found.append(item)
    return found


def _parallel_item(node: cst.Assign, name: str) -> cst.BaseExpression | None:
    """`a, b = x, y`: the value `name` gets (None when it is not a plain element there)."""
    value = node.value
    if not isinstance(value, (cst.Tuple, cst.List)):
        return None
    for t in node.targets:
        target = t.target
        if not isinstance(target, (cst.Tuple, cst.List)):
            continue
        if len(target.elements) != len(value.elements):
            continue
        for el, v in zip(target.elements, value.elements, strict=True):
            if (
                isinstance(el, cst.Element)
                and isinstance(v, cst.Element)
                and isinstance(el.value, cst.Name)
                and el.value.value == name
            ):
                return v.value
    return None


def _other_branches(chain: Sequence[cst.CSTNode]) -> set[int]:
    """Nodes in the branches of the enclosing `if`s that the walked node is not in (`if a:
    x = torch.cat(x)` / `else: for v in x:`): an assignment there never runs before it."""
    out: set[int] = set()
    for i, anc in enumerate(chain[:-1]):
        if not isinstance(anc, cst.If):
            continue
        child = chain[i + 1]
        if child is anc.body and anc.orelse is not None:
            out |= {id(n) for n in iter_descendants(anc.orelse)}
        elif child is anc.orelse:
            out |= {id(n) for n in iter_descendants(anc.body)}
    return out


def last_value(ctx: Context, name: cst.Name, at: cst.CSTNode) -> cst.BaseExpression | None:
    """The value last assigned to `name` before `at` in the current function."""
    values = assigned_values(ctx, name, at)
    return values[-1] if values else None


def kind_here(ctx: Context, expr: cst.BaseExpression, at: cst.CSTNode) -> Kind:
    """The kind of `expr` at `at`: for a plain name, the kind of its last assignment
    before `at` in source order (the flow-insensitive kind merges every assignment)."""
    if not isinstance(expr, cst.Name):
        return ctx.kind(expr)
    from onnxlint.semantic.kinds import narrowed_kind

    narrowed = narrowed_kind(ctx.semantic, ctx.ancestors, expr)
    if narrowed is not None:
        return narrowed  # `else:` of `isinstance(x, torch.Tensor)`: whatever the if-branch assigned
    unpacked = _unpacked_kind(ctx, expr, at)
    if unpacked is not None:
        return unpacked
    last = last_value(ctx, expr, at)
    return ctx.kind(expr) if last is None else ctx.kind(last)


def _unpacked_kind(ctx: Context, name: cst.Name, at: cst.CSTNode) -> Kind | None:
    """The kind of `name` when its last binding before `at` unpacks a value (`a, b =
    multi_apply(...)`; the flow-insensitive kind would merge a later `a = torch.cat(a)`):
    an item of a shape is a size, of `x.split(...)`/`x.unbind()` a tensor, of a literal
    tuple its element's kind, anything else unknown. None when the last binding is a
    plain assignment (or there is none)."""
    func = ctx.function
    if func is None:
        return None
    enclosing = {id(a) for a in ctx.ancestors}
    other = _other_branches(ctx.ancestors)
    found: Kind | None = None
    for node in iter_descendants(func.node.body):
        if node is at:
            break
        if id(node) in enclosing or id(node) in other or not isinstance(node, cst.Assign):
            continue
        for t in node.targets:
            target = t.target
            if isinstance(target, cst.Name):
                if target.value == name.value:
                    found = None
                continue
            if not isinstance(target, (cst.Tuple, cst.List)):
                continue
            for i, el in enumerate(target.elements):
                if isinstance(el.value, cst.Name) and el.value.value == name.value:
                    if isinstance(el, cst.StarredElement):
                        found = Kind.OTHER  # `a, *rest = ...`: rest is a list
                    else:
                        found = _item_kind(ctx, node.value, i, len(target.elements))
    return found


def _item_kind(ctx: Context, value: cst.BaseExpression, i: int, n: int) -> Kind:
    if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == n:
        return ctx.kind(value.elements[i].value)
    kind = ctx.kind(value)
    if kind is Kind.SHAPE:
        return Kind.SIZE
    if kind is Kind.TENSOR:
        return Kind.TENSOR  # `ids, counts = torch.unique_consecutive(...)`, `a, b = x.split(4)`
    return Kind.UNKNOWN  # `a, b = name.split(".")`, `feats, _ = multi_apply(...)`


def shape_names(ctx: Context, cache: dict[int, set[str]]) -> set[str]:
    """Names of the current function bound to sizes read from tensor shapes
    (`b, c, h, w = x.shape`, `n = x.size(0)`, `t = len(x)`)."""
    func = ctx.function
    if func is None:
        return set()
    found = cache.get(id(func.node))
    if found is not None:
        return found
    from onnxlint.source.walker import iter_descendants

    names: set[str] = set()
    assigns = [n for n in iter_descendants(func.node.body) if isinstance(n, cst.Assign)]
    for _ in range(2):  # `n = x.size(0)` then `m = n * 2`
        for a in assigns:
            if from_shape(ctx, a.value, names):
                for t in a.targets:
                    _bind(t.target, names)
    cache[id(func.node)] = names
    return names


def _bind(target: cst.BaseExpression, names: set[str]) -> None:
    if isinstance(target, cst.Name):
        names.add(target.value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for el in target.elements:
            _bind(el.value, names)


def from_shape(ctx: Context, expr: cst.BaseExpression, names: set[str]) -> bool:
    """Whether `expr` computes with a dimension size read from a tensor's shape."""
    for node in _walk(expr):
        if isinstance(node, cst.Name) and node.value in names:
            return True
        if isinstance(node, cst.Attribute) and node.attr.value == "shape":
            if ctx.kind(node.value) is Kind.TENSOR:
                return True
        elif isinstance(node, cst.Call):
            f = node.func
            if isinstance(f, cst.Attribute) and f.attr.value == "size":
                if ctx.kind(f.value) is Kind.TENSOR:
                    return True
            elif (
                ctx.qualname(f) == "builtins.len"
                and node.args
                and ctx.kind(node.args[0].value) is Kind.TENSOR
            ):
                return True
    return False


def specialising_path(ctx: Context, index: int | None = None) -> str | None:
    """Why a shape read as a Python int is a problem here, or None if it is not known to
    be: tracing keeps the example's value, a declared dynamic dim is specialised. The
    exports of the project that reach the code decide, named in the reason; without
    one, the file's own export calls and the `exporter` setting. `index`: the dim the code
    reads, when it is one literal index; the reason names a declared dim only when it is
    that one (`x.shape[0]` specialises `batch`, not the `width` of dim 3)."""
    here = os.path.abspath(ctx.path)
    sites = [s for s in ctx.reaching_exports() if s.path != here]
    if sites and not ctx.semantic.export_calls:
        root = str(ctx.config.root) if ctx.config.root is not None else None
        ordered = sorted(sites, key=lambda s: (s.path, s.line))
        for site in ordered:
            if site.kind is ExportKind.JIT_TRACE:
                return f"tracing freezes it to the example input's size ({site.where(root)})"
        for site in ordered:
            if site.dynamic:
                named = [n for i, n in site.dim_names if index is not None and i == index]
                dims = f" ({', '.join(dict.fromkeys(named))})" if named else ""
                if site.traced:  # the TorchScript exporter traces
                    return (
                        f"tracing freezes it, and with it the dimension{dims} that "
                        f"{site.where(root)} declares dynamic ({site.exporter})"
                    )
                return (
                    f"it specialises a dimension{dims} that {site.where(root)} declares "
                    f"dynamic ({site.exporter})"
                )
        return None
    model = ctx.semantic
    if any(e.kind is ExportKind.JIT_TRACE for e in model.export_calls):
        return "tracing freezes it to the example input's size"
    if model.declares_dynamic_dims:
        return "it specialises a dimension the export call declares dynamic"
    if not model.export_calls and ctx.config.exporter == "torchscript":
        return "tracing freezes it to the example input's size"
    return None
