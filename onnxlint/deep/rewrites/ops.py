"""Ops whose ONNX translation refuses the form the code calls them in.

- `scaled_dot_product_attention` on 3-D query, key and value (OLX808: torch 2.13's
  translation supports only 4-D ones): a head dim of 1 added to each and removed from the
  result (`sdpa(q.unsqueeze(-3), k.unsqueeze(-3), v.unsqueeze(-3)).squeeze(-3)`), which
  computes the same attention; an `attn_mask` given is left as it is (it broadcasts) in a
  first candidate and gets the head dim too in a second;
- `base.scatter_reduce(dim, index, src, reduce="mean")`, whose ONNX translation
  (ScatterElements) computes other numbers than eager (OLX810 at the op): the mean as a sum
  and a count made with `scatter_add`, and the base where nothing is scattered
  (`include_self=False`), or counted once (`include_self=True`, the default);
- a real tensor times an imaginary number (`1j * torch.sin(p)`, Euler's formula for a
  complex spectrogram), which torch 2.13 cannot translate (OLX805: `aten.mul.Scalar`, "No
  decompositions registered for the complex-valued input"): the complex tensor made from
  its real and imaginary parts, `torch.complex(torch.zeros_like(x), x)`.
"""

from __future__ import annotations

import libcst as cst

from onnxlint.deep.rewrites.base import (
    Candidate,
    Parsed,
    Rewriter,
    Site,
    fresh_name,
    torch_alias,
)
from onnxlint.deep.rewrites.exprs import attr, call, ensure_import, paren

_QKV = ("query", "key", "value")


def _unsqueezed(e: cst.BaseExpression) -> cst.Call:
    return cst.Call(
        func=cst.Attribute(value=paren(e), attr=cst.Name("unsqueeze")),
        args=[cst.Arg(cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("3")))],
    )


def sdpa_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX808":
        return []
    message = str(site.raw.get("message") or site.violation.message)
    if "4D" not in message and "4-D" not in message:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    calls = [
        c
        for c in parsed.at_line(site.line, cst.Call)
        if (
            isinstance(c.func, cst.Attribute)
            and c.func.attr.value == "scaled_dot_product_attention"
        )
        or (isinstance(c.func, cst.Name) and c.func.value == "scaled_dot_product_attention")
    ]
    if len(calls) != 1:
        return []
    node: cst.Call = calls[0]
    if any(a.star for a in node.args):
        return []
    positional = [a for a in node.args if a.keyword is None]
    keywords = {a.keyword.value: a for a in node.args if a.keyword is not None}
    if len(positional) + sum(1 for k in _QKV if k in keywords) < 3:
        return []
    mask_arg = keywords.get("attn_mask") or (positional[3] if len(positional) > 3 else None)
    out: list[Candidate] = []
    for with_mask in (False, True) if mask_arg is not None else (False,):
        args = []
        for i, a in enumerate(node.args):
            is_qkv = (a.keyword is None and i < 3) or (
                a.keyword is not None and a.keyword.value in _QKV
            )
            if is_qkv or (with_mask and a is mask_arg):
                a = a.with_changes(value=_unsqueezed(a.value))
            args.append(a)
        new = cst.Call(
            func=cst.Attribute(value=node.with_changes(args=args), attr=cst.Name("squeeze")),
            args=[cst.Arg(cst.UnaryOperation(operator=cst.Minus(), expression=cst.Integer("3")))],
        )
        title = "Give attention 4-D inputs (a head dim of 1: unsqueeze(-3), squeeze(-3))"
        if with_mask:
            title = "Give attention and its mask 4-D inputs (unsqueeze(-3), squeeze(-3))"
        out.append(Candidate("sdpa-4d", title, {site.path: parsed.replace(node, new)}))
    return out


# ------------------------------------------------------------------ scatter_reduce mean


def _simple(e: cst.BaseExpression) -> bool:
    """A name, an attribute, a subscript of those or a number: safe to read twice."""
    if isinstance(e, (cst.Name, cst.Integer)):
        return True
    if isinstance(e, cst.Attribute):
        return _simple(e.value)
    return isinstance(e, cst.UnaryOperation) and isinstance(e.expression, cst.Integer)


def _finish(parsed: Parsed, code: str) -> str:
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


def scatter_mean_candidates(site: Site) -> list[Candidate]:
    if site.violation.code not in ("OLX810", "OLX811"):
        return []
    if "scatter_reduce" not in str(site.raw.get("op") or site.raw.get("message") or ""):
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    found = [
        c
        for c in parsed.at_line(site.line, cst.Call)
        if isinstance(c.func, cst.Attribute) and c.func.attr.value == "scatter_reduce"
    ]
    if len(found) != 1:
        return []
    node: cst.Call = found[0]
    assert isinstance(node.func, cst.Attribute)
    base = node.func.value
    positional = [a.value for a in node.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
    names = ("dim", "index", "src", "reduce")
    values = {n: positional[i] for i, n in enumerate(names) if i < len(positional)}
    values.update({n: keywords[n] for n in names if n in keywords})
    reduce = values.get("reduce")
    if not (isinstance(reduce, cst.SimpleString) and reduce.evaluated_value == "mean"):
        return []
    if any(n not in values or not _simple(values[n]) for n in ("dim", "index", "src")):
        return []
    if not _simple(base) or set(keywords) - {*names, "include_self"}:
        return []
    include = keywords.get("include_self")
    if include is None:
        include_self = True
    elif isinstance(include, cst.Name) and include.value in ("True", "False"):
        include_self = include.value == "True"
    else:
        return []
    stmt = next(iter(parsed.covering(site.line, cst.SimpleStatementLine)), None)
    if stmt is None or parsed.enclosing(stmt, cst.FunctionDef) is None:
        return []
    torch = torch_alias(parsed) or "torch"
    sums_name = fresh_name(parsed, "sums")
    counts_name = fresh_name(parsed, "counts", [sums_name])
    dim, index, src = values["dim"], values["index"], values["src"]

    def scatter_add(value: cst.BaseExpression) -> cst.Call:
        zeros = call(attr(torch, "zeros_like"), base)
        return call(cst.Attribute(value=zeros, attr=cst.Name("scatter_add")), dim, index, value)

    sums = cst.SimpleStatementLine(
        body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(sums_name))], value=scatter_add(src))]
    )
    counts = cst.SimpleStatementLine(
        body=[
            cst.Assign(
                targets=[cst.AssignTarget(cst.Name(counts_name))],
                value=scatter_add(call(attr(torch, "ones_like"), src)),
            )
        ]
    )
    s_name, c_name = cst.Name(sums_name), cst.Name(counts_name)
    if include_self:  # (base + sum) / (1 + count): the base where nothing is scattered
        value: cst.BaseExpression = cst.BinaryOperation(
            left=cst.BinaryOperation(
                left=base,
                operator=cst.Add(),
                right=s_name,
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            ),
            operator=cst.Divide(),
            right=cst.BinaryOperation(
                left=cst.Integer("1"),
                operator=cst.Add(),
                right=c_name,
                lpar=[cst.LeftParen()],
                rpar=[cst.RightParen()],
            ),
        )
    else:
        clamp = cst.Call(
            func=cst.Attribute(value=c_name, attr=cst.Name("clamp")),
            args=[
                cst.Arg(
                    cst.Integer("1"),
                    keyword=cst.Name("min"),
                    equal=cst.AssignEqual(
                        whitespace_before=cst.SimpleWhitespace(""),
                        whitespace_after=cst.SimpleWhitespace(""),
                    ),
                )
            ],
        )
        value = call(
            attr(torch, "where"),
            cst.Comparison(
                left=c_name,
                comparisons=[cst.ComparisonTarget(cst.GreaterThan(), cst.Integer("0"))],
            ),
            cst.BinaryOperation(left=s_name, operator=cst.Divide(), right=clamp),
            base,
        )
    new_stmt = stmt.deep_replace(node, paren(value) if not isinstance(value, cst.Call) else value)
    assert isinstance(new_stmt, cst.SimpleStatementLine)
    code = parsed.replace(
        stmt,
        cst.FlattenSentinel(
            [
                sums.with_changes(leading_lines=stmt.leading_lines),
                counts,
                new_stmt.with_changes(leading_lines=[]),
            ]
        ),
    )
    return [
        Candidate(
            "scatter-mean",
            "Compute the mean with scatter_add (a sum and a count)",
            {site.path: _finish(parsed, code)},
        )
    ]


# ------------------------------------------------------------------ 1j * x


def _imaginary_factor(node: cst.BinaryOperation) -> tuple[str, cst.BaseExpression] | None:
    """`cj * x` or `x * cj` (c a number literal): (c as written, "" for 1; x)."""
    if not isinstance(node.operator, cst.Multiply):
        return None
    for lit, other in ((node.left, node.right), (node.right, node.left)):
        if isinstance(lit, cst.Imaginary) and not lit.lpar and not isinstance(other, cst.Imaginary):
            c = lit.value[:-1]
            try:
                value = float(c)
            except ValueError:
                return None
            return ("" if value == 1 else c), other
    return None


_IMPURE = ("rand", "dropout", "normal", "bernoulli", "multinomial")


def _pure(e: cst.BaseExpression) -> bool:
    """Safe to compute twice: no random draw, no in-place call."""
    calls = [
        n.func
        for n in _walk(e)
        if isinstance(n, cst.Call) and isinstance(n.func, (cst.Name, cst.Attribute))
    ]
    for f in calls:
        name = f.value if isinstance(f, cst.Name) else f.attr.value
        if any(k in name.lower() for k in _IMPURE) or (
            name.endswith("_") and not name.endswith("__")
        ):
            return False
    return True


def _walk(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            out.append(n)
            return True

    node.visit(V())
    return out


def complex_scalar_candidates(site: Site) -> list[Candidate]:
    if site.violation.code != "OLX805":
        return []
    text = f"{site.raw.get('op') or ''} {site.raw.get('message') or site.violation.message}"
    if "mul" not in text:
        return []
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    found = [
        (b, f)
        for b in parsed.covering(site.line, cst.BinaryOperation)
        if (f := _imaginary_factor(b)) is not None
    ]
    if len(found) != 1:
        return []
    node, (c, x) = found[0]
    if not _pure(x):
        return []
    torch = torch_alias(parsed) or "torch"
    bare = x.with_changes(lpar=[], rpar=[]) if x.lpar else x
    imag: cst.BaseExpression = bare
    if c:
        imag = cst.BinaryOperation(
            left=cst.Float(c) if "." in c or "e" in c.lower() else cst.Integer(c),
            operator=cst.Multiply(),
            right=paren(x),
        )
    new = call(attr(torch, "complex"), call(attr(torch, "zeros_like"), bare), imag)
    new = new.with_changes(lpar=node.lpar, rpar=node.rpar)
    return [
        Candidate(
            "complex-scalar",
            f"Make the complex tensor with torch.complex ({c or '1'}j * x has no ONNX translation)",
            {site.path: _finish(parsed, parsed.replace(node, new))},
        )
    ]


REWRITERS = [
    Rewriter(
        "scatter-mean",
        "scatter_reduce mean -> scatter_add sum / count",
        frozenset({"OLX810", "OLX811"}),
        scatter_mean_candidates,
    ),
    Rewriter(
        "sdpa-4d",
        "3-D scaled_dot_product_attention -> 4-D (a head dim of 1)",
        frozenset({"OLX808"}),
        sdpa_candidates,
    ),
    Rewriter(
        "complex-scalar",
        "imaginary number times a real tensor -> torch.complex(zeros, x)",
        frozenset({"OLX805"}),
        complex_scalar_candidates,
    ),
]
