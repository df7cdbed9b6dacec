"""Branches on the torch version, evaluated for the configured `target-torch`.

`if torch.__version__ >= "2.1":`, `if version.parse(torch.__version__) < version.parse("1.11")`,
`if is_torch_less_than_1_11:`, `if is_torch_greater_or_equal("2.5"):`: the branch the target
torch takes is live, the other is dead for every rule (code written for another torch).
`evaluate` answers True/False for such a test, None for anything else.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import libcst as cst

from onnxlint.source.walker import dotted

Version = tuple[int, int]

_NAME_FLAG = re.compile(
    r"(?:is_)?(?:torch|pytorch)_(less|greater|greater_or_equal|lt|ge|gt|le)(?:_than)?_(\d+)_(\d+)$",
    re.I,
)
_FUNC_FLAG = re.compile(r"(?:is_)?(?:torch|pytorch)_(less|greater|greater_or_equal|after)", re.I)
_VERSION_LITERAL = re.compile(r"^['\"]?v?(\d+)\.(\d+)")
_OPS: dict[type[cst.BaseCompOp], Callable[[Version, Version], bool]] = {
    cst.GreaterThan: lambda a, b: a > b,
    cst.GreaterThanEqual: lambda a, b: a >= b,
    cst.LessThan: lambda a, b: a < b,
    cst.LessThanEqual: lambda a, b: a <= b,
    cst.Equal: lambda a, b: a == b,
    cst.NotEqual: lambda a, b: a != b,
}
_FLIP: dict[type[cst.BaseCompOp], type[cst.BaseCompOp]] = {
    cst.GreaterThan: cst.LessThan,
    cst.GreaterThanEqual: cst.LessThanEqual,
    cst.LessThan: cst.GreaterThan,
    cst.LessThanEqual: cst.GreaterThanEqual,
    cst.Equal: cst.Equal,
    cst.NotEqual: cst.NotEqual,
}


def evaluate(test: cst.BaseExpression, target: Version) -> bool | None:
    """The value of a torch-version test for `target`, None when it is not one."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        inner = evaluate(test.expression, target)
        return None if inner is None else not inner
    if isinstance(test, cst.BooleanOperation):
        left, right = evaluate(test.left, target), evaluate(test.right, target)
        if isinstance(test.operator, cst.And):
            if left is False or right is False:
                return False
            return True if left and right else None
        if left is True or right is True:
            return True
        return False if left is False and right is False else None
    name = dotted(test)
    if name is not None:
        m = _NAME_FLAG.search(name.rsplit(".", 1)[-1])
        if m is not None:
            return _compare_word(m.group(1), target, (int(m.group(2)), int(m.group(3))))
        return None
    if isinstance(test, cst.Call):
        callee = (dotted(test.func) or "").rsplit(".", 1)[-1]
        m = _FUNC_FLAG.match(callee)
        if m is not None and test.args:
            literal = _literal(test.args[-1].value)
            if literal is not None:
                word = "greater_or_equal" if m.group(1).lower() == "after" else m.group(1)
                return _compare_word(word, target, literal)
        return None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        op: type[cst.BaseCompOp] = type(test.comparisons[0].operator)
        if op not in _OPS:
            return None
        lhs, rhs = test.left, test.comparisons[0].comparator
        if _is_torch_version(lhs):
            literal = _literal(rhs)
        elif _is_torch_version(rhs):
            literal, op = _literal(lhs), _FLIP[op]
        else:
            return None
        if literal is None:
            return None
        return bool(_OPS[op](target, literal))
    return None


def dead_branch(ancestors: Sequence[cst.CSTNode], node: cst.CSTNode, target: Version) -> bool:
    """Whether `node` sits in the branch of a torch-version test that `target` does not take."""
    chain = [*ancestors, node]
    for i in range(len(chain) - 1):
        parent, child = chain[i], chain[i + 1]
        if isinstance(parent, (cst.If, cst.IfExp)) and child is not parent.test:
            value = evaluate(parent.test, target)
            if value is None:
                continue
            in_body = child is parent.body
            if value is not in_body:
                return True
    return False


def _compare_word(word: str, target: Version, literal: Version) -> bool:
    w = word.lower()
    if w in ("less", "lt"):
        return target < literal
    if w == "le":
        return target <= literal
    if w in ("greater_or_equal", "ge"):
        return target >= literal
    return target > literal  # greater, gt


def _is_torch_version(expr: cst.BaseExpression) -> bool:
    """`torch.__version__`, `version.parse(torch.__version__)`, `Version(torch.__version__)`,
    `TORCH_VERSION`, `torch_version`, `parse(torch.__version__).release`..."""
    code = cst.Module([]).code_for_node(expr).lower()
    return "torch" in code and ("version" in code) and not _VERSION_LITERAL.match(code)


def _literal(expr: cst.BaseExpression) -> Version | None:
    """`"2.1"`, `"2.1.0"`, `version.parse("2.1")`, `Version("1.11")`, `(2, 1)`."""
    if isinstance(expr, cst.Call) and expr.args:
        return _literal(expr.args[0].value)
    if isinstance(expr, cst.SimpleString):
        m = _VERSION_LITERAL.match(expr.value)
        return (int(m.group(1)), int(m.group(2))) if m else None
    if isinstance(expr, cst.Tuple) and len(expr.elements) >= 2:
        parts = [e.value for e in expr.elements[:2]]
        if all(isinstance(p, cst.Integer) for p in parts):
            return int(parts[0].value), int(parts[1].value)  # type: ignore[attr-defined]
    return None
