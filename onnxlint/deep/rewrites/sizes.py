"""Sizes taken as Python ints where export needs them symbolic, and data-dependent sizes
export cannot reason with.

- `int(x.shape[i])` / `int(x.size(i))` / `int(len(x))` on a dim asked to be dynamic (OLX804
  caused by the code): the size as it is (`x.shape[i]`), which torch.export keeps symbolic;
- a literal equal to the example's size of a dynamic dim, in a shape argument (`view`,
  `reshape`, `expand`, a tensor factory) at the line that pins the dim (OLX804): the size
  of the input's dim (`x.shape[0]`), or `-1` in a `view`/`reshape` that has no `-1` yet;
- a size or an index read from tensor data (`k = n.item()`, `k = int(n)`) that export
  cannot reason with (OLX802/OLX803 "data-dependent"): `torch._check_is_size(k)` after the
  line that makes it (k is a size: at least 0), else `torch._check(k >= 0)`;
- an index read from a tensor and used only to index (`i = iv.item()`, then `x[i, :]`,
  `z[i] = ...`: OLX803 "got SymInt", a `scan` body's loop index): indexing with the tensor
  itself, `x[iv.reshape(1), :].squeeze(0)` and `z[iv.reshape(1)] = ...`, which export keeps
  a tensor op (a `scan` body that also returns its input as it is returns a copy: scan
  refuses an output that aliases an input).

Which one is right is for the proof to say: the same outputs at the example and at a
second size of each dynamic dim (where the original runs there), the export, onnxruntime.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import attr, call, ensure_import, name_assignment, paren

_SHAPE_CALLS = frozenset(
    {
        "view",
        "reshape",
        "expand",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "zeros",
        "ones",
        "empty",
        "full",
        "randn",
        "rand",
        "arange",
        "repeat",
        "unflatten",
    }
)
_MINUS_ONE = frozenset({"view", "reshape"})


def _finish(parsed: Parsed, code: str) -> str:
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


def _func_name(node: cst.Call) -> str:
    f = node.func
    if isinstance(f, cst.Attribute):
        return f.attr.value
    if isinstance(f, cst.Name):
        return f.value
    return ""


def _is_size_expr(e: cst.BaseExpression) -> bool:
    """`x.shape[i]`, `x.size(i)`, `x.shape[-1]`, `len(x)`: a size torch keeps symbolic."""
    if isinstance(e, cst.Subscript) and isinstance(e.value, cst.Attribute):
        return e.value.attr.value == "shape"
    if isinstance(e, cst.Call):
        name = _func_name(e)
        if name == "size" and isinstance(e.func, cst.Attribute) and len(e.args) == 1:
            return True
        if name == "len" and isinstance(e.func, cst.Name) and len(e.args) == 1:
            return True
    return False


def _dim_cause(site: Site) -> bool:
    """An OLX804 the code causes (not the example)."""
    dim = site.raw.get("dim") or {}
    return site.violation.code == "OLX804" and dim.get("cause") != "example"


# ------------------------------------------------------------------ int(x.shape[i])


def int_size_candidates(site: Site) -> list[Candidate]:
    if not _dim_cause(site):
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    calls = [
        c
        for c in parsed.at_line(site.line, cst.Call)
        if isinstance(c.func, cst.Name)
        and c.func.value == "int"
        and len(c.args) == 1
        and c.args[0].keyword is None
        and _is_size_expr(c.args[0].value)
    ]
    if not calls:
        return []
    module = parsed.module.visit(_Unwrap(set(calls)))
    return [
        Candidate(
            "int-size",
            "Keep the size symbolic (x.shape[i] without int())",
            {site.path: module.code},
        )
    ]


class _Unwrap(cst.CSTTransformer):
    def __init__(self, calls: set[cst.Call]) -> None:
        self.calls = calls

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        if original in self.calls:
            return updated.args[0].value.with_changes(lpar=updated.lpar, rpar=updated.rpar)
        return updated


# ------------------------------------------------------------------ literal sizes


def _shape_args(node: cst.Call) -> list[cst.BaseExpression]:
    positional = [a.value for a in node.args if a.keyword is None and a.star == ""]
    if len(positional) == 1 and isinstance(positional[0], (cst.Tuple, cst.List)):
        return [e.value for e in positional[0].elements]
    kw = next(
        (
            a.value
            for a in node.args
            if a.keyword is not None and a.keyword.value in ("size", "shape")
        ),
        None,
    )
    if isinstance(kw, (cst.Tuple, cst.List)):
        return [e.value for e in kw.elements]
    return positional


def _is_int(e: cst.BaseExpression, value: int) -> bool:
    if isinstance(e, cst.Integer):
        return int(e.value) == value
    if (
        isinstance(e, cst.UnaryOperation)
        and isinstance(e.operator, cst.Minus)
        and isinstance(e.expression, cst.Integer)
    ):
        return -int(e.expression.value) == value
    return False


def literal_size_candidates(site: Site) -> list[Candidate]:
    if not _dim_cause(site):
        return []
    dim = site.raw.get("dim") or {}
    value, d, name = dim.get("value"), dim.get("dim"), dim.get("input")
    if not isinstance(value, int) or value < 0:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    out: list[Candidate] = []
    for node in parsed.at_line(site.line, cst.Call):
        if _func_name(node) not in _SHAPE_CALLS:
            continue
        args = _shape_args(node)
        hits = [a for a in args if _is_int(a, value)]
        if len(hits) != 1:
            continue  # none, or several of that size: which one is the dim is not known
        lit = hits[0]
        fn = parsed.enclosing(node, cst.FunctionDef)
        params = [p.name.value for p in fn.params.params] if fn is not None else []
        if isinstance(name, str) and name in params and isinstance(d, int):
            size = cst.Subscript(
                value=cst.Attribute(value=cst.Name(name), attr=cst.Name("shape")),
                slice=[cst.SubscriptElement(cst.Index(cst.Integer(str(d))))],
            )
            out.append(
                Candidate(
                    "literal-size",
                    f"Use the input's size ({name}.shape[{d}]) for the literal {value}",
                    {site.path: parsed.replace(lit, size)},
                )
            )
        if _func_name(node) in _MINUS_ONE and not any(_is_int(a, -1) for a in args):
            minus = cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("1"))
            out.append(
                Candidate(
                    "literal-size",
                    f"Let {_func_name(node)} infer that size (-1 for the literal {value})",
                    {site.path: parsed.replace(lit, minus)},
                )
            )
        if out:
            break
    return out


# ------------------------------------------------------------------ k = n.item()


def _data_int(e: cst.BaseExpression) -> bool:
    """`n.item()`, `int(n)` of something that is not a size: a Python int read from data."""
    if not isinstance(e, cst.Call):
        return False
    if isinstance(e.func, cst.Attribute) and e.func.attr.value == "item" and not e.args:
        return True
    return _int_of_data(e)


def _int_of_data(e: cst.Call) -> bool:
    return (
        isinstance(e.func, cst.Name)
        and e.func.value == "int"
        and len(e.args) == 1
        and e.args[0].keyword is None
        and not _is_size_expr(e.args[0].value)
        and not isinstance(e.args[0].value, (cst.Integer, cst.Float, cst.SimpleString))
    )


def _made_from_data(st: cst.SimpleStatementLine) -> tuple[str, cst.Call] | None:
    """`k = n.item()` / `k = int(n)`: the name and the call."""
    for small in st.body:
        if (
            isinstance(small, cst.Assign)
            and len(small.targets) == 1
            and isinstance(small.targets[0].target, cst.Name)
            and isinstance(small.value, cst.Call)
            and _data_int(small.value)
        ):
            return small.targets[0].target.value, small.value
    return None


def size_check_candidates(site: Site) -> list[Candidate]:
    if site.violation.code not in ("OLX802", "OLX803"):
        return []
    message = str(site.raw.get("message") or site.violation.message)
    if "data-dependent" not in message and "DataDependent" not in message:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    lines = parsed.covering(site.line, cst.SimpleStatementLine)
    if not lines:
        return []
    stmt = lines[0]
    fn = parsed.enclosing(stmt, cst.FunctionDef)
    if fn is None:
        return []
    # the statement at the line makes the int (`k = int(n)`: int() is the guard), or the
    # last statement before it that makes a name the line reads
    made = _made_from_data(stmt)
    if made is None:
        read = {n.value for n in _names_in(stmt)}
        best: cst.SimpleStatementLine | None = None
        for st in parsed.nodes(cst.SimpleStatementLine):
            if parsed.enclosing(st, cst.FunctionDef) is not fn:
                continue
            if parsed.start_line(st) >= parsed.start_line(stmt):
                continue
            m = _made_from_data(st)
            if (
                m is not None
                and m[0] in read
                and (best is None or parsed.start_line(st) > parsed.start_line(best))
            ):
                best, made = st, m
        if best is None:
            return []
        stmt = best
    assert made is not None
    name, value = made
    replaced: cst.SimpleStatementLine = stmt
    if _int_of_data(value):  # int(n) guards on the value; n.item() keeps it symbolic
        item = cst.Call(func=cst.Attribute(value=paren(value.args[0].value), attr=cst.Name("item")))
        replaced = stmt.deep_replace(value, item)
    torch = torch_alias(parsed) or "torch"
    out = []
    for title, check in (
        (
            f"Tell export that {name} is a size (torch._check_is_size)",
            call(attr(torch, "_check_is_size"), cst.Name(name)),
        ),
        (
            f"Tell export that {name} >= 0 (torch._check)",
            call(
                attr(torch, "_check"),
                cst.Comparison(
                    left=cst.Name(name),
                    comparisons=[
                        cst.ComparisonTarget(
                            operator=cst.GreaterThanEqual(), comparator=cst.Integer("0")
                        )
                    ],
                ),
            ),
        ),
    ):
        if replaced is not stmt:
            title += " and read it with .item()"
        new = cst.SimpleStatementLine(body=[cst.Expr(check)])
        code = parsed.replace(stmt, cst.FlattenSentinel([replaced, new]))
        out.append(Candidate("size-check", title, {site.path: _finish(parsed, code)}))
    return out


def _names_in(node: cst.CSTNode) -> list[cst.Name]:
    found: list[cst.Name] = []

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.append(n)

    node.visit(V())
    return found


# ------------------------------------------------------------------ i = t.item() as an index


def _item_of(st: cst.BaseStatement) -> tuple[str, cst.Name] | None:
    """`i = t.item()` (t a name): ("i", t)."""
    assigned = name_assignment(st)
    if assigned is None:
        return None
    name, value = assigned
    if not (
        isinstance(value, cst.Call)
        and not value.args
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "item"
        and isinstance(value.func.value, cst.Name)
    ):
        return None
    return name, value.func.value


class _IndexWith(cst.CSTTransformer):
    """`x[..., i, ...]` -> `x[..., t.reshape(1), ...]` (and `.squeeze(k)` where it is read),
    where every other element is a slice; `ok` is False at any other use of `i`."""

    def __init__(self, name: str, tensor: cst.Name) -> None:
        self.name, self.tensor = name, tensor
        self.ok = True
        self.stores: set[cst.Subscript] = set()
        self.done: set[cst.Subscript] = set()

    def _position(self, node: cst.Subscript) -> int | None:
        at = [
            k
            for k, el in enumerate(node.slice)
            if isinstance(el.slice, cst.Index)
            and isinstance(el.slice.value, cst.Name)
            and el.slice.value.value == self.name
        ]
        if len(at) != 1:
            return None
        if not all(
            isinstance(el.slice, cst.Slice) for k, el in enumerate(node.slice) if k != at[0]
        ):
            return None
        return at[0]

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        if isinstance(node.target, cst.Subscript):
            self.stores.add(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Subscript):
            self.stores.add(node.target)

    def leave_Subscript(
        self, original: cst.Subscript, updated: cst.Subscript
    ) -> cst.BaseExpression:
        k = self._position(original)
        if k is None:
            return updated
        one = cst.Call(
            func=cst.Attribute(value=self.tensor, attr=cst.Name("reshape")),
            args=[cst.Arg(cst.Integer("1"))],
        )
        elements = list(updated.slice)
        elements[k] = elements[k].with_changes(slice=cst.Index(one))
        new = updated.with_changes(slice=elements)
        self.done.add(original)
        if original in self.stores:
            if k != 0:  # the value would broadcast against (.., 1, ..) in another way
                self.ok = False
            return new
        return cst.Call(
            func=cst.Attribute(value=new, attr=cst.Name("squeeze")),
            args=[cst.Arg(cst.Integer(str(k)))],
        )


def _hop_body_returns(parsed: Parsed, fn: cst.FunctionDef) -> list[cst.Name]:
    """When `fn` is the body of a `scan` (passed by name to a call named `scan`): the
    names its `return` gives back as they came in (parameters never rebound)."""
    used = any(
        isinstance(c.func, (cst.Attribute, cst.Name))
        and (c.func.attr.value if isinstance(c.func, cst.Attribute) else c.func.value) == "scan"
        and c.args
        and isinstance(c.args[0].value, cst.Name)
        and c.args[0].value.value == fn.name.value
        for c in parsed.nodes(cst.Call)
    )
    if not used:
        return []
    params = {p.name.value for p in fn.params.params}
    rebound: set[str] = set()
    for t in parsed.nodes(cst.AssignTarget):
        if isinstance(t.target, cst.Name) and parsed.enclosing(t, cst.FunctionDef) is fn:
            rebound.add(t.target.value)
    out: list[cst.Name] = []
    for r in parsed.nodes(cst.Return):
        if parsed.enclosing(r, cst.FunctionDef) is not fn or r.value is None:
            continue
        values = r.value.elements if isinstance(r.value, (cst.List, cst.Tuple)) else []
        for el in values:
            v = el.value
            if isinstance(v, cst.Name) and v.value in params and v.value not in rebound:
                out.append(v)
    return out


def item_index_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    lines = parsed.covering(site.line, cst.SimpleStatementLine)
    if not lines:
        return []
    fn = parsed.enclosing(lines[0], cst.FunctionDef)
    if fn is None:
        return []
    # the `i = t.item()` at the line, or the one before it that makes a name the line reads
    read = {n.value for n in _names_in(lines[0])}
    made = [
        (st, m)
        for st in parsed.nodes(cst.SimpleStatementLine)
        if parsed.enclosing(st, cst.FunctionDef) is fn
        and parsed.start_line(st) <= site.line
        and (m := _item_of(st)) is not None
        and (st is lines[0] or m[0] in read)
    ]
    if not made:
        return []
    stmt, (name, tensor) = max(made, key=lambda x: parsed.start_line(x[0]))
    # `i` and `t`: bound once in the function (`t` a parameter or assigned before)
    binds = [
        t
        for t in parsed.nodes((cst.AssignTarget, cst.AugAssign, cst.For, cst.AnnAssign))
        if parsed.enclosing(t, cst.FunctionDef) is fn
        and isinstance(t.target, cst.Name)
        and t.target.value in (name, tensor.value)
    ]
    if len(binds) != 1:
        return []
    block = parsed.parent(stmt)
    body = list(getattr(block, "body", ()))
    if stmt not in body or block is None:
        return []
    i = body.index(stmt)
    rest = body[i + 1 :]
    index_with = _IndexWith(name, tensor)
    new_rest: list[cst.BaseStatement] = []
    for st in rest:
        new = st.visit(index_with)
        if not isinstance(new, cst.BaseStatement):
            return []
        new_rest.append(new)
    if not index_with.ok or not index_with.done:
        return []
    if any(n.value == name for st in new_rest for n in _names_in(st)):
        return []  # `i` has another use than an index
    new_stmts: list[cst.BaseStatement] = [*body[:i], *new_rest]
    if i < len(new_stmts) and stmt.leading_lines:
        nxt = new_stmts[i]
        own = list(getattr(nxt, "leading_lines", ()))
        new_stmts[i] = nxt.with_changes(leading_lines=[*stmt.leading_lines, *own])
    new_fn = fn.deep_replace(block, block.with_changes(body=new_stmts))
    title = f"Index with the tensor {tensor.value} itself, not {tensor.value}.item()"
    # a scan body returning its input as it is: a copy (scan refuses outputs that alias)
    aliased = list(dict.fromkeys(n.value for n in _hop_body_returns(parsed, fn)))
    if aliased:
        new_fn = new_fn.visit(_Clone(set(aliased)))
        title += f" (the scan body returns a copy of {', '.join(aliased)})"
    module = parsed.module.deep_replace(fn, new_fn)
    assert isinstance(module, cst.Module)
    return [Candidate("item-index", title, {site.path: module.code})]


class _Clone(cst.CSTTransformer):
    """`return [z, iv]` -> `return [z, iv.clone()]` for the names given."""

    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.depth = 0

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.depth += 1
        return self.depth == 1  # a nested function's returns are its own

    def leave_FunctionDef(
        self, original: cst.FunctionDef, updated: cst.FunctionDef
    ) -> cst.FunctionDef:
        self.depth -= 1
        return updated

    def leave_Return(self, original: cst.Return, updated: cst.Return) -> cst.Return:
        value = updated.value
        if not isinstance(value, (cst.List, cst.Tuple)):
            return updated
        elements = [
            el.with_changes(
                value=cst.Call(func=cst.Attribute(value=el.value, attr=cst.Name("clone")))
            )
            if isinstance(el.value, cst.Name) and el.value.value in self.names
            else el
            for el in value.elements
        ]
        return updated.with_changes(value=value.with_changes(elements=elements))


REWRITERS = [
    Rewriter(
        "int-size",
        "int(x.shape[i]) on a dynamic dim -> x.shape[i]",
        frozenset({"OLX804"}),
        int_size_candidates,
    ),
    Rewriter(
        "literal-size",
        "literal size of a dynamic dim -> x.shape[i] / -1",
        frozenset({"OLX804"}),
        literal_size_candidates,
    ),
    Rewriter(
        "size-check",
        "k = n.item() feeding a size -> torch._check_is_size(k)",
        frozenset({"OLX802", "OLX803"}),
        size_check_candidates,
    ),
    Rewriter(
        "item-index",
        "i = t.item() used as an index -> index with the tensor t",
        frozenset({"OLX802", "OLX803"}),
        item_index_candidates,
    ),
]
