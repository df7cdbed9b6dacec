"""The parts of a function that an export never runs, read from its syntax alone.

An export runs the model in eval mode, on inference inputs (no ground truth), with its
export/deploy switches on. So inside one function these never run in an export:

- the body of `if self.training:` (also a `training` flag passed in) and the `else` of
  `if not self.training:`; the right side of `not self.training or ...`;
- the body of `if labels is not None:` on a parameter that holds targets and defaults to
  None: named so (`labels`, `gt_boxes`, `y_true`) or documented so in the function's
  docstring (`mel_spectrograms: ... (used only for training)`, "ground truth", "teacher
  forcing");
- the code after an early return taken in eval, export or deploy mode (`if not
  self.training: return ...`, `if torch.onnx.is_in_onnx_export(): return ...`, `if
  self.deploy: return ...`).

`dead_step` answers for one step down the tree (the rules' `in_dead_branch` walks their
ancestors with it); `iter_live` walks a function without those parts, so that what a
function calls only there (`self._forward_aligner(...)` under `if mel_spectrograms is not
None:`) is not taken for forward code (`FunctionInfo.live`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

import libcst as cst

from onnxlint.source.walker import branch_children, dotted, iter_descendants

TARGET_PARAMS = re.compile(
    r"^(targets?|labels?|gts?|gt_\w+|\w+_targets?|\w+_labels?|y_true|ground_truth\w*)$"
)
# How a docstring says a parameter holds ground truth: "used only for training",
# "only used during training", "training only", "ground-truth durations", "teacher forcing".
_TRAINING_ROLE = re.compile(
    r"\b(?:(?:used\s+)?only\s+(?:used\s+)?(?:for|during|in|at|when)\s+training"
    r"|training[\s-]+only|ground[\s-]*truth|teacher[\s-]+forc\w*)",
    re.IGNORECASE,
)
# Calls that tell the code runs under export, compilation or tracing.
EXPORT_GUARDS = frozenset(
    {
        "is_in_onnx_export",
        "is_exporting",
        "is_tracing",
        "is_scripting",
        "is_torchdynamo_compiling",
        "is_compiling",
        "_get_tracing_state",
    }
)
# `self.<flag>` names that switch a model to its deploy/export form.
DEPLOY_FLAG = re.compile(r"(deploy|export|onnx|inference_mode|is_infer|fused|reparam)", re.I)
TRAINING_FLAGS = frozenset({"self.training", "training", "is_training", "self.is_training"})


def optional_targets(node: cst.FunctionDef, params: Sequence[cst.Param]) -> frozenset[str]:
    """The parameters that default to None and hold targets, by name or as documented."""
    optional = [p.name.value for p in params if p.default is not None and _is_none(p.default)]
    if not optional:
        return frozenset()
    out = {n for n in optional if TARGET_PARAMS.match(n)}
    rest = [n for n in optional if n not in out]
    if rest:
        doc = node.get_docstring(clean=True)
        if doc and _TRAINING_ROLE.search(doc):
            out.update(n for n in rest if _TRAINING_ROLE.search(param_doc(doc, n)))
    return frozenset(out)


def _is_none(expr: cst.BaseExpression) -> bool:
    return type(expr) is cst.Name and expr.value == "None"


def param_doc(doc: str, name: str) -> str:
    """What a docstring says about parameter `name`: numpydoc (`name : type` then indented
    lines), Google (`name (type): text`) or Sphinx (`:param name: text`)."""
    lines = doc.splitlines()
    head = re.compile(rf"^(\s*)(?::param\s+(?:[\w.]+\s+)?)?\*{{0,2}}{re.escape(name)}\s*(?:[:(]|$)")
    for i, line in enumerate(lines):
        m = head.match(line)
        if m is None:
            continue
        indent = len(m.group(1))
        text = [line[m.end() :]]
        for nxt in lines[i + 1 :]:
            if nxt.strip() and len(nxt) - len(nxt.lstrip()) <= indent:
                break
            text.append(nxt.strip())
        return " ".join(text)
    return ""


def dead_step(parent: cst.CSTNode, child: cst.CSTNode, targets: frozenset[str]) -> bool:
    """Whether `child`, a child of `parent`, is a part an export never runs (`targets`:
    the enclosing function's `optional_targets`)."""
    if isinstance(parent, cst.If):
        if child is parent.body and targets and _targets_given(parent.test, targets):
            return True  # `if labels is not None:`: validation/training with targets
        if child is parent.body or child is parent.orelse:
            polarity = training_test(parent.test)
            if polarity is not None:
                # `if self.training:` body, the else of `if not self.training:`
                return (child is parent.body) is polarity
        return False
    if isinstance(parent, cst.IndentedBlock):
        return _after_export_return(parent, child)
    return (
        isinstance(parent, cst.BooleanOperation)
        and child is parent.right
        and (skips_right_in_eval(parent) or half_precision_only(parent))
    )


def iter_live(node: cst.CSTNode, targets: frozenset[str]) -> Iterator[cst.CSTNode]:
    """`iter_descendants(node, leaves=False)` without the parts an export never runs."""
    stack = [(node, kid) for kid in reversed(branch_children(node))]
    while stack:
        parent, current = stack.pop()
        if dead_step(parent, current, targets):
            continue
        yield current
        kids = branch_children(current)
        for kid in reversed(kids):
            stack.append((current, kid))


def skips_right_in_eval(op: cst.BooleanOperation) -> bool:
    """`not self.training or p == 0 or x.any()`, `self.training and x.any()`: in eval
    mode (every export) the right side is never evaluated."""
    if isinstance(op.operator, cst.Or):
        return any(training_test(e) is False for e in _chain(op.left, cst.Or))
    return any(training_test(e) is True for e in _chain(op.left, cst.And))


_HALF_DTYPES = frozenset({"torch.float16", "torch.half", "torch.bfloat16"})


def half_precision_only(op: cst.BooleanOperation) -> bool:
    """`h.dtype == torch.float16 and (torch.isinf(h).any() or ...)`: the right side runs
    only for a half-precision tensor; the float32 export (every export made without
    `.half()`) short-circuits on the Python False of the dtype test (measured with torch
    2.13: the float32 dynamo export passes, a float16 one fails on the `.any()`)."""
    if not isinstance(op.operator, cst.And):
        return False
    for e in _chain(op.left, cst.And):
        if not (isinstance(e, cst.Comparison) and len(e.comparisons) == 1):
            continue
        target = e.comparisons[0]
        left = dotted(e.left) or ""
        if not left.endswith(".dtype"):
            continue
        if isinstance(target.operator, (cst.Equal, cst.Is)):
            if dotted(target.comparator) in _HALF_DTYPES:
                return True
        elif isinstance(target.operator, cst.In) and isinstance(
            target.comparator, (cst.Tuple, cst.List, cst.Set)
        ):
            names = {dotted(el.value) for el in target.comparator.elements}
            if names and names <= _HALF_DTYPES:
                return True
    return False


def _chain(expr: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    """The operands of `a or b or c` (left-nested in libcst) for one operator."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, op):
        return [*_chain(expr.left, op), *_chain(expr.right, op)]
    return [expr]


def _targets_given(test: cst.BaseExpression, targets: frozenset[str]) -> bool:
    """`labels is not None` (and-ed with anything) on one of `targets`: the branch runs
    only when ground truth is passed (training or validation), never in an inference
    export."""
    for e in _chain(test, cst.And):
        if (
            isinstance(e, cst.Comparison)
            and len(e.comparisons) == 1
            and isinstance(e.comparisons[0].operator, cst.IsNot)
            and _is_none(e.comparisons[0].comparator)
            and dotted(e.left) in targets
        ):
            return True
    return False


def training_test(test: cst.BaseExpression) -> bool | None:
    """True for `self.training` (alone or and-ed; also a `training` flag passed in),
    False for `not self.training`."""
    if dotted(test) in TRAINING_FLAGS:
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return False if dotted(test.expression) in TRAINING_FLAGS else None
    if (
        isinstance(test, cst.BooleanOperation)
        and isinstance(test.operator, cst.And)
        and not TRAINING_FLAGS.isdisjoint((dotted(test.left), dotted(test.right)))
    ):
        return True
    return None


def _after_export_return(block: cst.IndentedBlock, child: cst.CSTNode) -> bool:
    """Whether a statement before `child` in `block` is `if <export/deploy test>:` or
    `if not self.training:` whose body returns (so in an export, which runs in eval
    mode, the code after it never runs)."""
    for stmt in block.body:
        if stmt is child:
            return False
        if isinstance(stmt, cst.If) and stmt.orelse is None and _eval_or_export_test(stmt.test):
            body = stmt.body
            last = body.body[-1] if isinstance(body, cst.IndentedBlock) and body.body else None
            small = last.body[-1] if isinstance(last, cst.SimpleStatementLine) else None
            if isinstance(small, (cst.Return, cst.Raise)) or (
                isinstance(body, cst.SimpleStatementSuite) and isinstance(body.body[-1], cst.Return)
            ):
                return True
    return False


def _eval_or_export_test(test: cst.BaseExpression) -> bool:
    """`if not self.training`, `if not self.training or p == 0`, an export guard, or a
    deploy flag: true in an export."""
    if training_test(test) is False:
        return True
    if (
        isinstance(test, cst.BooleanOperation)
        and isinstance(test.operator, cst.Or)
        and (training_test(test.left) is False or training_test(test.right) is False)
    ):
        return True
    return _export_test(test)


def _export_test(test: cst.BaseExpression) -> bool:
    nodes = [test, *iter_descendants(test)]
    for node in nodes:
        if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
            return False  # `if not self.export:` returns in the eager path
        if isinstance(node, cst.Call):
            callee = dotted(node.func) or ""
            if callee.rsplit(".", 1)[-1] in EXPORT_GUARDS:
                return True
    flag = dotted(test)
    return flag is not None and flag.startswith("self.") and bool(DEPLOY_FLAG.search(flag[5:]))
