"""A Python `if` on tensor data (OLX802, and the breaks and failures at the same `if`).

Three rewrites, tried in this order:

- a check that raises (`if count != n: raise ValueError(...)`): `torch._check` of what must
  hold (`torch._check(count.item() == n, ...)`: torch.export keeps it as a runtime
  assertion and reasons with it), else the check skipped while exporting
  (`if not torch.compiler.is_exporting() and ...`: eager PyTorch still checks);
- both branches tensor expressions (assignments to the same names, or returns):
  `torch.where(cond, then, else)`, one per name;
- anything else: `torch.cond(cond, true_fn, false_fn, operands)`, the branches as
  functions of the names they rebind.

Which of them is right for the code is for the proof to say (torch.where needs branches of
one shape, torch.cond branches of one output structure); the first that is proven is
offered.
"""

from __future__ import annotations

from typing import Any

import libcst as cst

from onnxlint.deep.rewrites.base import Candidate, Parsed, Rewriter, Site, fresh_name, torch_alias
from onnxlint.deep.rewrites.exprs import (
    attr,
    call,
    ensure_import,
    has_inplace_call,
    has_kind,
    loaded_names,
    names,
    negated,
    paren,
    statements_of,
    substitute,
    tensor_condition,
)

CODES = frozenset({"OLX802", "OLX803", "OLX816"})


def _if_at(parsed: Parsed, line: int) -> cst.If | None:
    found = parsed.at_line(line, cst.If)
    return found[0] if found else None


def _torch(parsed: Parsed) -> str:
    return torch_alias(parsed) or "torch"


def _finish(parsed: Parsed, code: str) -> str:
    """The rewritten code, with `import torch` added where the file has no `torch`."""
    if torch_alias(parsed) is not None:
        return code
    return ensure_import(cst.parse_module(code), "torch", "import torch").code


# ------------------------------------------------------------------ checks that raise


def _raises(block: cst.BaseSuite) -> cst.Raise | None:
    stmts = statements_of(block)
    if not stmts:
        return None
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise):
        return last.body[-1]
    return None


def guard_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    node = _if_at(parsed, site.line)
    if node is None or node.orelse is not None:
        return []
    raise_ = _raises(node.body)
    if raise_ is None:
        return []
    torch = _torch(parsed)
    out: list[Candidate] = []
    test = node.test
    if isinstance(test, cst.Comparison):
        holds = negated(test)
        if holds is not None:
            left = holds.left
            # the tensor side becomes a Python number torch.export can reason with
            left = cst.Call(func=cst.Attribute(value=paren(left), attr=cst.Name("item")))
            holds = holds.with_changes(left=left, lpar=[], rpar=[])
            check = call(attr(torch, "_check"), holds)
            message = _message(raise_)
            if message is not None:
                check = check.with_changes(
                    args=[
                        *check.args,
                        cst.Arg(cst.Lambda(params=cst.Parameters(), body=message)),
                    ]
                )
            stmt = cst.SimpleStatementLine(body=[cst.Expr(check)])
            code = parsed.replace(node, stmt.with_changes(leading_lines=node.leading_lines))
            out.append(
                Candidate(
                    "check",
                    "State the check with torch._check",
                    {site.path: _finish(parsed, code)},
                )
            )
    exporting = call(attr(torch, "compiler", "is_exporting"))
    skipped = cst.BooleanOperation(
        left=cst.UnaryOperation(operator=cst.Not(), expression=exporting),
        operator=cst.And(),
        right=paren(test),
    )
    code = parsed.replace(node, node.with_changes(test=skipped))
    out.append(
        Candidate(
            "check",
            "Skip the check while exporting (torch.compiler.is_exporting())",
            {site.path: _finish(parsed, code)},
        )
    )
    return out


def _message(raise_: cst.Raise) -> cst.BaseExpression | None:
    exc = raise_.exc
    if isinstance(exc, cst.Call) and exc.args and exc.args[0].keyword is None:
        msg = exc.args[0].value
        if not has_kind(msg, (cst.Await, cst.Yield)):
            return msg
    return None


# ------------------------------------------------------------------ torch.where


_AUG: dict[type[cst.CSTNode], Any] = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
    cst.FloorDivideAssign: cst.FloorDivide,
    cst.ModuloAssign: cst.Modulo,
    cst.PowerAssign: cst.Power,
    cst.MatrixMultiplyAssign: cst.MatrixMultiply,
    cst.BitAndAssign: cst.BitAnd,
    cst.BitOrAssign: cst.BitOr,
    cst.BitXorAssign: cst.BitXor,
}


def _values(block: cst.BaseSuite | None, torch: str) -> dict[str, cst.BaseExpression] | None:
    """name -> the value a branch of only assignments leaves it with (in terms of the values
    before the `if`); None when the branch does anything else."""
    env: dict[str, cst.BaseExpression] = {}
    if block is None:
        return env
    stmts = statements_of(block) if not isinstance(block, cst.If) else [block]
    for st in stmts:
        if isinstance(st, cst.If):  # elif
            inner = _if_values(st, torch)
            if inner is None:
                return None
            for k, v in inner.items():
                env[k] = substitute(v, env)
            continue
        if not isinstance(st, cst.SimpleStatementLine):
            return None
        for small in st.body:
            if isinstance(small, cst.Pass):
                continue
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target = small.targets[0].target
                value = small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target, value = small.target, small.value
            elif isinstance(small, cst.AugAssign) and type(small.operator) in _AUG:
                target = small.target
                if not isinstance(target, cst.Name):
                    return None
                op = _AUG[type(small.operator)]()
                value = cst.BinaryOperation(left=target, operator=op, right=paren(small.value))
            else:
                return None
            if not isinstance(target, cst.Name) or has_inplace_call(value):
                return None
            if has_kind(value, (cst.Lambda, cst.ListComp, cst.GeneratorExp, cst.Yield)):
                return None
            env[target.value] = substitute(value, env)
    return env


def _if_values(node: cst.If, torch: str) -> dict[str, cst.BaseExpression] | None:
    then = _values(node.body, torch)
    orelse: cst.BaseSuite | cst.If | None
    orelse = node.orelse.body if isinstance(node.orelse, cst.Else) else node.orelse
    other = _values(orelse, torch)  # type: ignore[arg-type]
    if then is None or other is None or has_inplace_call(node.test):
        return None
    out: dict[str, cst.BaseExpression] = {}
    for name in names([*then, *other]):
        a = then.get(name, cst.Name(name))
        b = other.get(name, cst.Name(name))
        out[name] = _where(node.test, a, b, torch)
    return out


def _where(
    test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression, torch: str
) -> cst.Call:
    cond = tensor_condition(test, torch)
    return call(attr(torch, "where"), cond, _bare(a), _bare(b))


def _bare(e: cst.BaseExpression) -> cst.BaseExpression:
    return e.with_changes(lpar=[], rpar=[]) if e.lpar else e


def _returns(block: cst.BaseSuite) -> cst.BaseExpression | None:
    stmts = statements_of(block)
    if len(stmts) != 1 or not isinstance(stmts[0], cst.SimpleStatementLine):
        return None
    body = stmts[0].body
    if len(body) != 1 or not isinstance(body[0], cst.Return) or body[0].value is None:
        return None
    return body[0].value


def _where_value(
    test: cst.BaseExpression, a: cst.BaseExpression, b: cst.BaseExpression, torch: str
) -> cst.BaseExpression | None:
    """torch.where of two returned values (tuples element by element)."""
    if isinstance(a, cst.Tuple) or isinstance(b, cst.Tuple):
        if not (isinstance(a, cst.Tuple) and isinstance(b, cst.Tuple)):
            return None
        if len(a.elements) != len(b.elements):
            return None
        return cst.Tuple(
            elements=[
                cst.Element(_where(test, x.value, y.value, torch))
                for x, y in zip(a.elements, b.elements, strict=True)
            ],
            lpar=[],
            rpar=[],
        )
    return _where(test, a, b, torch)


def where_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    return _where_candidates(site, parsed, _torch(parsed))


def _where_candidates(site: Site, parsed: Parsed, torch: str) -> list[Candidate]:
    node = _if_at(parsed, site.line)
    title = "Rewrite with torch.where"
    if node is None:
        found = [e for e in parsed.at_line(site.line, cst.IfExp)]
        if not found:
            return []
        e = found[0]
        new = _where(e.test, e.body, e.orelse, torch)
        code = parsed.replace(e, paren(new) if e.lpar else new)
        return [Candidate("where", title, {site.path: _finish(parsed, code)})]
    # return-form: `if c: return a` / `else: return b` (or the `return b` right after)
    a = _returns(node.body)
    if a is not None:
        b = None
        following: cst.CSTNode | None = None
        if isinstance(node.orelse, cst.Else):
            b = _returns(node.orelse.body)
        elif node.orelse is None:
            block = parsed.parent(node)
            body = list(getattr(block, "body", ()))
            if node in body and body.index(node) + 1 < len(body):
                nxt = body[body.index(node) + 1]
                if isinstance(nxt, cst.SimpleStatementLine):
                    b = _returns(cst.IndentedBlock(body=[nxt]))
                    following = nxt
        if b is not None and not has_inplace_call(node.test):
            value = _where_value(node.test, a, b, torch)
            if value is None:
                return []
            stmt = cst.SimpleStatementLine(
                body=[cst.Return(value=value)], leading_lines=node.leading_lines
            )
            if following is not None:
                block = parsed.parent(node)
                assert block is not None
                body = list(getattr(block, "body", ()))
                i = body.index(node)
                body[i : i + 2] = [stmt]
                code = parsed.module.deep_replace(block, block.with_changes(body=body)).code  # type: ignore[attr-defined]
            else:
                code = parsed.replace(node, stmt)
            return [Candidate("where", title, {site.path: _finish(parsed, code)})]
        return []
    values = _if_values(node, torch)
    if not values:
        return []
    targets = list(values)
    if len(targets) == 1:
        assign = cst.Assign(
            targets=[cst.AssignTarget(cst.Name(targets[0]))], value=values[targets[0]]
        )
    else:  # all at once: each value reads the names as they were before the `if`
        assign = cst.Assign(
            targets=[
                cst.AssignTarget(
                    cst.Tuple([cst.Element(cst.Name(t)) for t in targets], lpar=[], rpar=[])
                )
            ],
            value=cst.Tuple([cst.Element(values[t]) for t in targets], lpar=[], rpar=[]),
        )
    stmt = cst.SimpleStatementLine(body=[assign], leading_lines=node.leading_lines)
    code = parsed.replace(node, stmt)
    return [Candidate("where", title, {site.path: _finish(parsed, code)})]


# ------------------------------------------------------------------ torch.cond


def _assigned(block: cst.CSTNode | None) -> list[str]:
    out: list[str] = []
    if block is None:
        return out

    class V(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            _targets(n.target, out)

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            _targets(n.target, out)

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            _targets(n.target, out)

        def visit_FunctionDef(self, n: cst.FunctionDef) -> bool:
            out.append(n.name.value)
            return False

    block.visit(V())
    return names(out)


def _targets(t: cst.BaseExpression, out: list[str]) -> None:
    if isinstance(t, cst.Name):
        out.append(t.value)
    elif isinstance(t, (cst.Tuple, cst.List)):
        for el in t.elements:
            _targets(el.value, out)


def cond_candidates(site: Site) -> list[Candidate]:
    parsed = site.sources.parsed(site.path)
    if parsed is None:
        return []
    node = _if_at(parsed, site.line)
    if node is None or parsed.enclosing(node, cst.FunctionDef) is None:
        return []
    if has_kind(node, (cst.Yield, cst.Await, cst.Global, cst.Nonlocal, cst.Break, cst.Continue)):
        return []
    torch = _torch(parsed)
    orelse = node.orelse
    if isinstance(orelse, cst.If):
        orelse_block: cst.BaseSuite | None = cst.IndentedBlock(body=[orelse])
    else:
        orelse_block = orelse.body if isinstance(orelse, cst.Else) else None
    then_ret = _ends_with_return(node.body)
    else_ret = orelse_block is not None and _ends_with_return(orelse_block)
    returns = has_kind(node, (cst.Return,))
    assigned = names([*_assigned(node.body), *_assigned(orelse_block)])
    read = loaded_names(node.body) | (loaded_names(orelse_block) if orelse_block else set())
    if returns and not (then_ret and else_ret):
        return []
    if not returns and not assigned:
        return []
    outs = [] if returns else assigned
    then_only = set(_assigned(node.body))
    else_only = set(_assigned(orelse_block))
    params = [
        n
        for n in assigned
        if n in read or (not returns and (n not in then_only or n not in else_only))
    ]
    taken: list[str] = []
    fn_true = fresh_name(parsed, "true_fn")
    taken.append(fn_true)
    fn_false = fresh_name(parsed, "false_fn", taken)

    def function(name: str, block: cst.BaseSuite | None) -> cst.FunctionDef:
        body = list(statements_of(block)) if block is not None else []
        if not returns:
            value: cst.BaseExpression = (
                cst.Name(outs[0])
                if len(outs) == 1
                else cst.Tuple([cst.Element(cst.Name(o)) for o in outs], lpar=[], rpar=[])
            )
            body.append(cst.SimpleStatementLine(body=[cst.Return(value=value)]))
        return cst.FunctionDef(
            name=cst.Name(name),
            params=cst.Parameters(params=[cst.Param(cst.Name(p)) for p in params]),
            body=cst.IndentedBlock(body=body),
        )

    cond_call = call(
        attr(torch, "cond"),
        tensor_condition(node.test, torch),
        cst.Name(fn_true),
        cst.Name(fn_false),
        cst.Tuple([cst.Element(cst.Name(p)) for p in params])
        if params
        else cst.Tuple([], lpar=[cst.LeftParen()], rpar=[cst.RightParen()]),
    )
    if returns:
        last: cst.BaseSmallStatement = cst.Return(value=cond_call)
    elif len(outs) == 1:
        last = cst.Assign(targets=[cst.AssignTarget(cst.Name(outs[0]))], value=cond_call)
    else:
        last = cst.Assign(
            targets=[
                cst.AssignTarget(
                    cst.Tuple([cst.Element(cst.Name(o)) for o in outs], lpar=[], rpar=[])
                )
            ],
            value=cond_call,
        )
    new = [
        function(fn_true, node.body).with_changes(leading_lines=node.leading_lines),
        function(fn_false, orelse_block),
        cst.SimpleStatementLine(body=[last]),
    ]
    code = parsed.replace(node, cst.FlattenSentinel(new))
    return [
        Candidate(
            "cond",
            "Rewrite with torch.cond (the branches as functions)",
            {site.path: _finish(parsed, code)},
        )
    ]


def _ends_with_return(block: cst.BaseSuite) -> bool:
    stmts = statements_of(block)
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], (cst.Return, cst.Raise))
    if isinstance(last, cst.If):
        inner_else = last.orelse
        if inner_else is None:
            return False
        block2 = (
            inner_else.body if isinstance(inner_else, cst.Else) else cst.IndentedBlock([inner_else])
        )
        return _ends_with_return(last.body) and _ends_with_return(block2)
    return False


REWRITERS = [
    Rewriter("check", "tensor `if` that raises -> torch._check", CODES, guard_candidates),
    Rewriter("where", "tensor `if` -> torch.where", CODES, where_candidates),
    Rewriter("cond", "tensor `if` -> torch.cond", CODES, cond_candidates),
]
