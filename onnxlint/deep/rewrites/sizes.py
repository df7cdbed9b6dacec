"""Sizes taken as Python ints where export needs them symbolic, and data-dependent sizes
export cannot reason with.

- `int(x.shape[i])` / `int(x.size(i))` / `int(len(x))` on a dim asked to be dynamic (OLX804
  caused by the code): the size as it is (`x.shape[i]`), which torch.export keeps symbolic;
- a literal equal to the example's size of a dynamic dim, in a shape argument (`view`,
  `reshape`, `expand`, a tensor factory) at the line that pins the dim (OLX804): the size
  of the input's dim (`x.shape[0]`), or `-1` in a `view`/`reshape` that has no `-1` yet;
- a size or an index read from tensor data (`k = n.item()`, `k = int(n)`) that export
  cannot reason with (OLX802/OLX803 "data-dependent"): `torch._check_is_size(k)` after the
  line that makes it (k is a size: at least 0), else `torch._check(k >= 0)`.

Which one is right is for the proof to say: the same outputs at the example and at a
second size of each dynamic dim (where the original runs there), the export, onnxruntime.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, torch_alias
from onnxlint.deep.rewrites.exprs import attr, call, ensure_import, paren

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
]
