"""What can never be part of an exported model's inference, whatever exports it.

Asked by `Context.in_forward` for code that no export of the project reaches (code an
export reaches is judged as exported, whatever it looks like):

- `never_exported(ctx, func)`: the function belongs to a loss or criterion (its class is
  named so, derives from a torch loss, takes targets in `forward`, or the file builds it
  as a criterion), or to a runtime-side wrapper that hands NumPy arrays to an inference
  backend (onnxruntime, TensorRT, OpenVINO, ...);
- `in_dead_branch(ctx)`: the node being walked sits in a training-only branch (`if
  self.training:`; exports run in eval mode) or after an early return taken in export or
  deploy mode (`if torch.onnx.is_in_onnx_export(): return ...`, `if self.deploy: return`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.frameworks import RUNTIME_BACKENDS
from onnxlint.semantic import FunctionInfo, dotted
from onnxlint.walker import iter_descendants

if TYPE_CHECKING:
    from onnxlint.rule import Context

_LOSS_NAME = re.compile(
    r"(Loss|Criterion|Criteria|Losses)(\d*|V\d+|Base|Mixin|Module)$"
    r"|(Assigner|Matcher|Sampler)(\d*|V\d+|Base)?$"  # training-target assignment for a loss
)
_TARGET_PARAMS = re.compile(
    r"^(targets?|labels?|gts?|gt_\w+|\w+_targets?|\w+_labels?|y_true|ground_truth\w*)$"
)
_CRITERION_NAMES = re.compile(r"^(criterion|criterions|loss_fn|loss_func|lossfn|\w*_loss|loss)$")
# Calls that tell the code runs under export, compilation or tracing.
_EXPORT_GUARDS = frozenset(
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
_DEPLOY_FLAG = re.compile(r"(deploy|export|onnx|inference_mode|is_infer|fused|reparam)", re.I)


def never_exported(ctx: Context, func: FunctionInfo) -> bool:
    cls = func.class_name
    if cls is None:
        return False
    memo = ctx.model.memo
    key = ("never exported", cls)
    found = memo.get(key)
    if found is None:
        found = memo[key] = (
            _is_loss(ctx, cls)
            or _is_metric(ctx, cls)
            or _is_runtime_wrapper(ctx, cls)
            or _is_random_augmentation(ctx, cls)
        )
    return bool(found)


def _is_loss(ctx: Context, cls: str) -> bool:
    info = ctx.model.classes.get(cls)
    if info is None:
        return False
    if _LOSS_NAME.search(cls):
        return True
    for base in info.bases:
        q = ctx.model.resolve(base) or base
        if _LOSS_NAME.search(q.rsplit(".", 1)[-1]) or q.startswith("torch.nn.modules.loss."):
            return True
    fwd = ctx.model.find_method(cls, "forward")
    if fwd is not None:
        # `forward(pred, target[, weight])`: a model that merely accepts labels among many
        # inputs (prompts, masks) is not a loss.
        params = fwd.params()
        if 2 <= len(params) <= 4 and _TARGET_PARAMS.match(params[1].name.value):
            return True
    return cls in _criterion_classes(ctx)


_CRITERION_ASSIGN = re.compile(
    r"\b(?:self\.)?(?:criterion|criterions|loss_fn|loss_func|lossfn|\w*_loss|loss)\s*=\s*"
    r"([A-Z]\w*)\s*\("
)


def _criterion_classes(ctx: Context) -> set[str]:
    """Local classes the file builds as a criterion (`criterion = FocalLoss()`,
    `self.loss_fn = Dice()`), found in the text (no tree walk: most files say "loss")."""
    memo = ctx.model.memo
    found = memo.get("criterion classes")
    if isinstance(found, set):
        return found
    out = {m.group(1) for m in _CRITERION_ASSIGN.finditer(ctx.text)} & set(ctx.model.classes)
    memo["criterion classes"] = out
    return out


def _is_metric(ctx: Context, cls: str) -> bool:
    """An evaluation metric (torchmetrics style: `update` and `compute`, or a `Metric`
    base): it runs in the evaluation loop, never inside an exported model."""
    info = ctx.model.classes.get(cls)
    if info is None:
        return False
    if {"update", "compute"} <= set(info.methods):
        return True
    return any(
        (ctx.model.resolve(b) or b).rsplit(".", 1)[-1].endswith(("Metric", "MetricCollection"))
        or (ctx.model.resolve(b) or "").startswith("torchmetrics.")
        for b in info.bases
    )


# Random draws that make a module a training-time data augmentation.
_RANDOM_CALLS = re.compile(
    r"^(torch\.(rand|randn|randint|randperm|bernoulli|multinomial|empty\(.*\)\.uniform_)"
    r"|random\.\w+|numpy\.random\.\w+)$"
)


_AUGMENTATION_NAME = re.compile(
    r"(Random|Augment|Aug[A-Z]|Noise|Drop|Flip|Perturb|Mix|Cut|Jitter|Masking|Corrupt)"
)


def _is_random_augmentation(ctx: Context, cls: str) -> bool:
    """A module named as an augmentation (`RandomFlip`, `AddNoise`, `DropChunk`,
    `SpeedPerturb`) whose `forward` draws random numbers: a training-time augmentation,
    never part of an exported model's inference. Inference algorithms that sample
    (RANSAC) are not named so; `Dropout` layers call `F.dropout`, not `torch.rand`."""
    if "Augment" in cls:
        return True  # `MixAugmentationBase`, `AdaptiveDiscriminatorAugmentation`
    if not _AUGMENTATION_NAME.search(cls):
        return False
    fwd = ctx.model.find_method(cls, "forward")
    if fwd is None:
        return False
    methods = [fwd]
    info = ctx.model.classes.get(cls)
    if info is not None:
        methods += [info.methods[m] for m in fwd.self_calls if m in info.methods]
    for m in methods:
        for node in iter_descendants(m.node.body):
            if isinstance(node, cst.Call):
                q = ctx.model.qualname(node.func)
                if q is not None and _RANDOM_CALLS.match(q):
                    return True
    return False


def _is_runtime_wrapper(ctx: Context, cls: str) -> bool:
    """A module whose methods convert tensors to NumPy and hand them on: in a file that
    imports an inference runtime or a host-side array library, or to a predictor object
    (`self.predictor.predict_from_npy(...)`). It feeds a backend; it is never traced."""
    info = ctx.model.classes.get(cls)
    if info is None:
        return False
    backend = any(full.split(".", 1)[0] in RUNTIME_BACKENDS for full in ctx.model.imports.values())
    if not backend and not (".numpy()" in ctx.text and ".predict" in ctx.text):
        return False  # the common case, without walking the class
    to_numpy = predictor = False
    for node in iter_descendants(info.node):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            attr = node.func.attr.value
            if backend and attr in ("numpy", "run", "execute_v2", "infer"):
                return True
            to_numpy = to_numpy or attr == "numpy"
            owner = dotted(node.func.value) or ""
            predictor = predictor or (
                attr.startswith("predict") and owner.startswith("self.") and owner.count(".") == 1
            )
            if to_numpy and predictor:
                return True
    return False


def in_dead_branch(ctx: Context) -> bool:
    """Whether the node being walked (ctx.ancestors) never runs in an export."""
    chain = ctx.ancestors
    for i in range(len(chain) - 1):
        parent, child = chain[i], chain[i + 1]
        if isinstance(parent, cst.If):
            if child is parent.body and _targets_given(ctx, parent.test):
                return True  # `if labels is not None:`: validation/training with targets
            polarity = _training_test(parent.test)
            if polarity is not None:
                if child is parent.body and polarity:
                    return True  # `if self.training:` body
                if child is parent.orelse and not polarity:
                    return True  # the else of `if not self.training:`
        elif (isinstance(parent, cst.IndentedBlock) and _after_export_return(parent, child)) or (
            isinstance(parent, cst.BooleanOperation)
            and child is parent.right
            and skips_right_in_eval(parent)
        ):
            return True
    return False


def skips_right_in_eval(op: cst.BooleanOperation) -> bool:
    """`not self.training or p == 0 or x.any()`, `self.training and x.any()`: in eval
    mode (every export) the right side is never evaluated."""
    if isinstance(op.operator, cst.Or):
        return any(_training_test(e) is False for e in _chain(op.left, cst.Or))
    return any(_training_test(e) is True for e in _chain(op.left, cst.And))


def _chain(expr: cst.BaseExpression, op: type) -> list[cst.BaseExpression]:
    """The operands of `a or b or c` (left-nested in libcst) for one operator."""
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, op):
        return [*_chain(expr.left, op), *_chain(expr.right, op)]
    return [expr]


def _targets_given(ctx: Context, test: cst.BaseExpression) -> bool:
    """`labels is not None` (and-ed with anything) on a parameter of the function that
    holds targets and defaults to None: the branch runs only when ground truth is passed
    (training or validation), never in an inference export."""
    func = ctx.function
    if func is None:
        return False
    optional = {
        p.name.value
        for p in func.params()
        if p.default is not None
        and dotted(p.default) == "None"
        and _TARGET_PARAMS.match(p.name.value)
    }
    if not optional:
        return False
    for e in _chain(test, cst.And):
        if (
            isinstance(e, cst.Comparison)
            and len(e.comparisons) == 1
            and isinstance(e.comparisons[0].operator, cst.IsNot)
            and dotted(e.comparisons[0].comparator) == "None"
            and dotted(e.left) in optional
        ):
            return True
    return False


_TRAINING_FLAGS = frozenset({"self.training", "training", "is_training", "self.is_training"})


def _training_test(test: cst.BaseExpression) -> bool | None:
    """True for `self.training` (alone or and-ed; also a `training` flag passed in),
    False for `not self.training`."""
    if dotted(test) in _TRAINING_FLAGS:
        return True
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return False if dotted(test.expression) in _TRAINING_FLAGS else None
    if (
        isinstance(test, cst.BooleanOperation)
        and isinstance(test.operator, cst.And)
        and not _TRAINING_FLAGS.isdisjoint((dotted(test.left), dotted(test.right)))
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
    if _training_test(test) is False:
        return True
    if (
        isinstance(test, cst.BooleanOperation)
        and isinstance(test.operator, cst.Or)
        and (_training_test(test.left) is False or _training_test(test.right) is False)
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
            if callee.rsplit(".", 1)[-1] in _EXPORT_GUARDS:
                return True
    flag = dotted(test)
    return flag is not None and flag.startswith("self.") and bool(_DEPLOY_FLAG.search(flag[5:]))
