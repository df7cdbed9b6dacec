"""libcst helpers the rewrites share: parenthesising, substituting names, tensor conditions,
the file's `torch` and an `import torch` where it has none."""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

ATOMIC = (
    cst.Name,
    cst.Attribute,
    cst.Call,
    cst.Subscript,
    cst.Integer,
    cst.Float,
    cst.SimpleString,
    cst.Tuple,
    cst.List,
)


def paren(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`expr` in parentheses unless it is atomic or already has them."""
    if isinstance(expr, ATOMIC) or expr.lpar:
        return expr
    return expr.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def attr(base: str, *names: str) -> cst.BaseExpression:
    expr: cst.BaseExpression = cst.Name(base)
    for n in names:
        expr = cst.Attribute(value=expr, attr=cst.Name(n))
    return expr


def call(func: cst.BaseExpression, *args: cst.BaseExpression) -> cst.Call:
    return cst.Call(func=func, args=[cst.Arg(a) for a in args])


class Substitute(cst.CSTTransformer):
    """Replace loaded names by expressions (parenthesised): `b * 2` with {b: a + 1} ->
    `(a + 1) * 2`. Attribute names and keywords are not names of values."""

    def __init__(self, env: dict[str, cst.BaseExpression]) -> None:
        self.env = env

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.BaseExpression:
        if original.value in self.env:
            return paren(self.env[original.value])
        return updated

    def leave_Attribute(self, original: cst.Attribute, updated: cst.Attribute) -> cst.Attribute:
        return updated.with_changes(attr=original.attr)

    def leave_Arg(self, original: cst.Arg, updated: cst.Arg) -> cst.Arg:
        return updated.with_changes(keyword=original.keyword)


def substitute(expr: cst.BaseExpression, env: dict[str, cst.BaseExpression]) -> cst.BaseExpression:
    if not env:
        return expr
    out = expr.visit(Substitute(env))
    assert isinstance(out, cst.BaseExpression)
    return out


def loaded_names(node: cst.CSTNode) -> set[str]:
    """Names read in `node` (not attribute names, keywords or assignment targets)."""
    found: set[str] = set()

    class V(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            found.add(n.value)

        def visit_Attribute(self, n: cst.Attribute) -> bool:
            n.value.visit(self)
            return False

        def visit_Arg(self, n: cst.Arg) -> bool:
            n.value.visit(self)
            return False

        def visit_Assign(self, n: cst.Assign) -> bool:
            n.value.visit(self)
            for t in n.targets:
                if not isinstance(t.target, cst.Name):
                    t.target.visit(self)
            return False

        def visit_AnnAssign(self, n: cst.AnnAssign) -> bool:
            if n.value is not None:
                n.value.visit(self)
            return False

    node.visit(V())
    return found


def has_inplace_call(node: cst.CSTNode) -> bool:
    """A call of an in-place method (`x.add_(1)`): evaluating it unconditionally changes
    what the code does."""
    found = False

    class V(cst.CSTVisitor):
        def visit_Call(self, n: cst.Call) -> None:
            nonlocal found
            f = n.func
            if isinstance(f, cst.Attribute):
                name = f.attr.value
                if name.endswith("_") and not name.endswith("__"):
                    found = True

    node.visit(V())
    return found


def has_kind(node: cst.CSTNode, kinds: tuple[type[cst.CSTNode], ...]) -> bool:
    found = False

    class V(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            nonlocal found
            if isinstance(n, kinds):
                found = True
            return not found

    node.visit(V())
    return found


class TensorCondition(cst.CSTTransformer):
    """A Python condition on tensor data as a boolean tensor: `.item()` and `bool()` are
    dropped, `and`/`or`/`not` become `torch.logical_and/or/not`, and a chained comparison
    (`0 < x < 1`) the `logical_and` of its links."""

    def __init__(self, torch: str) -> None:
        self.torch = torch

    def leave_Call(self, original: cst.Call, updated: cst.Call) -> cst.BaseExpression:
        f = updated.func
        if isinstance(f, cst.Attribute) and f.attr.value == "item" and not updated.args:
            return f.value
        if isinstance(f, cst.Name) and f.value == "bool" and len(updated.args) == 1:
            return updated.args[0].value
        return updated

    def leave_UnaryOperation(
        self, original: cst.UnaryOperation, updated: cst.UnaryOperation
    ) -> cst.BaseExpression:
        if isinstance(updated.operator, cst.Not):
            return call(attr(self.torch, "logical_not"), _bare(updated.expression))
        return updated

    def leave_BooleanOperation(
        self, original: cst.BooleanOperation, updated: cst.BooleanOperation
    ) -> cst.BaseExpression:
        name = "logical_and" if isinstance(updated.operator, cst.And) else "logical_or"
        return call(attr(self.torch, name), _bare(updated.left), _bare(updated.right))

    def leave_Comparison(
        self, original: cst.Comparison, updated: cst.Comparison
    ) -> cst.BaseExpression:
        if len(updated.comparisons) < 2:
            return updated
        links: list[cst.BaseExpression] = []
        left = updated.left
        for c in updated.comparisons:
            links.append(cst.Comparison(left=left, comparisons=[c]))
            left = c.comparator
        out = links[0]
        for link in links[1:]:
            out = call(attr(self.torch, "logical_and"), out, link)
        return out


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """Without its own parentheses (an argument needs none)."""
    if expr.lpar:
        return expr.with_changes(lpar=[], rpar=[])
    return expr


def tensor_condition(expr: cst.BaseExpression, torch: str) -> cst.BaseExpression:
    out = _bare(expr).visit(TensorCondition(torch))
    assert isinstance(out, cst.BaseExpression)
    return _bare(out)


def negated(comparison: cst.Comparison) -> cst.Comparison | None:
    """`a != b` -> `a == b`, `a > b` -> `a <= b`, ...: one link only."""
    if len(comparison.comparisons) != 1:
        return None
    op = comparison.comparisons[0].operator
    flip: dict[type[cst.CSTNode], type[cst.CSTNode]] = {
        cst.Equal: cst.NotEqual,
        cst.NotEqual: cst.Equal,
        cst.LessThan: cst.GreaterThanEqual,
        cst.GreaterThanEqual: cst.LessThan,
        cst.GreaterThan: cst.LessThanEqual,
        cst.LessThanEqual: cst.GreaterThan,
    }
    new = flip.get(type(op))
    if new is None:
        return None
    operator = new(  # type: ignore[call-arg]
        whitespace_before=op.whitespace_before,  # type: ignore[attr-defined]
        whitespace_after=op.whitespace_after,  # type: ignore[attr-defined]
    )
    return comparison.with_changes(
        comparisons=[comparison.comparisons[0].with_changes(operator=operator)]
    )


def ensure_import(module: cst.Module, name: str, statement: str) -> cst.Module:
    """`module` with `statement` (e.g. `import torch`) after its docstring and `__future__`
    imports, unless it already binds `name` at the top level."""
    for st in module.body:
        if isinstance(st, cst.SimpleStatementLine):
            for small in st.body:
                if isinstance(small, cst.Import) and any(
                    (
                        a.asname.name.value
                        if a.asname and isinstance(a.asname.name, cst.Name)
                        else cst.Module([]).code_for_node(a.name)
                    )
                    == name
                    for a in small.names
                ):
                    return module
    new = cst.parse_statement(statement + "\n")
    body = list(module.body)
    at = 0
    for i, st in enumerate(body):
        if isinstance(st, cst.SimpleStatementLine) and all(
            (isinstance(s, cst.Expr) and isinstance(s.value, cst.SimpleString))
            or (
                isinstance(s, cst.ImportFrom)
                and isinstance(s.module, cst.Name)
                and s.module.value == "__future__"
            )
            for s in st.body
        ):
            at = i + 1
            continue
        break
    body.insert(at, new)
    return module.with_changes(body=body)


def name_assignment(st: cst.BaseStatement) -> tuple[str, cst.BaseExpression] | None:
    """(name, value) of a line that is only `name = value`; None for anything else."""
    if not isinstance(st, cst.SimpleStatementLine) or len(st.body) != 1:
        return None
    a = st.body[0]
    if isinstance(a, cst.Assign) and len(a.targets) == 1:
        target = a.targets[0].target
        if isinstance(target, cst.Name):
            return target.value, a.value
    return None


def statements_of(block: cst.BaseSuite) -> list[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return list(block.body)
    small: list[cst.BaseSmallStatement] = [
        s for s in block.body if isinstance(s, cst.BaseSmallStatement)
    ]
    return [cst.SimpleStatementLine(body=small)]  # `if c: x = 1` on one line


def names(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
