"""What can never be part of an exported model's inference, whatever exports it.

Asked by `Context.in_forward` for code that no export of the project reaches (code an
export reaches is judged as exported, whatever it looks like):

- `never_exported(ctx, func)`: the function belongs to a loss or criterion (its class is
  named so, derives from a torch loss, takes targets in `forward`, or the file builds it
  as a criterion), to a runtime-side wrapper that hands NumPy arrays to an inference
  backend (onnxruntime, TensorRT, OpenVINO, ...), to a metric, or to the data pipeline: a
  random augmentation, an mmengine-style data preprocessor, a transform whose `forward`
  returns NumPy arrays or PIL images; or, for a module-level function, when only such
  modules of its file call it (a target assigner's helper);
- `in_dead_branch(ctx)`: the node being walked sits in a part of its function that an
  export never runs (onnxlint.semantic.branches): a training-only branch (`if self.training:`;
  exports run in eval mode), a branch taken only when targets are passed, or the code
  after an early return taken in export or deploy mode.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.semantic.branches import TARGET_PARAMS, dead_step
from onnxlint.semantic.frameworks import RUNTIME_BACKENDS
from onnxlint.semantic.index import FunctionInfo
from onnxlint.source.walker import branch_children, dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

_LOSS_NAME = re.compile(
    r"(Loss|Criterion|Criteria|Losses)(\d*|V\d+|Base|Mixin|Module)$"
    r"|(Assigner|Matcher|Sampler)(\d*|V\d+|Base)?$"  # training-target assignment for a loss
)
_CRITERION_NAMES = re.compile(r"^(criterion|criterions|loss_fn|loss_func|lossfn|\w*_loss|loss)$")


def never_exported(ctx: FileView, func: FunctionInfo) -> bool:
    if _returns_loss(func):
        return True
    cls = func.class_name
    if cls is None:
        return _only_for_never_exported(ctx, func)
    memo = ctx.semantic.memo
    key = ("never exported", cls)
    found = memo.get(key)
    if found is None:
        found = memo[key] = (
            _is_loss(ctx, cls)
            or _is_metric(ctx, cls)
            or _is_runtime_wrapper(ctx, cls)
            or _is_random_augmentation(ctx, cls)
            or _is_data_preprocessor(ctx, cls)
            or _is_host_transform(ctx, cls)
        )
    return bool(found)


def _only_for_never_exported(ctx: FileView, func: FunctionInfo) -> bool:
    """A module-level function that only never-exported modules of the file call (DETA's
    `sample_topk_per_gt`, called by its target assigners alone): the forwards of the
    other module classes of the file do not reach it. One the file's own modules do not
    reach at all is reached from another file's forward code (the project model adds
    those), and stays forward code."""
    model = ctx.semantic
    if not model.is_reachable(func):
        return False
    memo = model.memo
    found = memo.get("reached by the file's forwards")
    if not isinstance(found, tuple):
        every, exportable = [], []
        for c in model.module_classes():
            fwd = model.find_method(c.name, "forward")
            if fwd is not None:
                every.append(fwd)
                if not never_exported(ctx, fwd):
                    exportable.append(fwd)
        found = (model.reachable_from(every), model.reachable_from(exportable))
        memo["reached by the file's forwards"] = found
    in_file, by_exportable = found
    return func.key in in_file and func.key not in by_exportable


_LOSS_VALUE = re.compile(r"^(\w+_)?(loss|losses)$")


def _returns_loss(func: FunctionInfo) -> bool:
    """A training step: every `return` of a value leads with a loss (`return loss, stats`,
    `return dur_loss, prior_loss, diff_loss, attn`; MatchaTTS.forward, VITS's generator
    step). A layer that returns its output with an auxiliary loss (`return out, aux_loss`)
    leads with the output and stays model code."""
    found = func.memo.get("returns loss")
    if isinstance(found, bool):
        return found
    leads: list[bool] = []
    for node in _own_nodes(func.node.body):
        if type(node) is cst.Return and node.value is not None:
            value = node.value
            if isinstance(value, cst.Tuple) and value.elements:
                value = value.elements[0].value
            leads.append(isinstance(value, cst.Name) and bool(_LOSS_VALUE.match(value.value)))
    out = bool(leads) and all(leads)
    func.memo["returns loss"] = out
    return out


_SCOPES = frozenset({cst.FunctionDef, cst.Lambda, cst.ClassDef})


def _own_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The compound nodes under `node` outside nested functions and classes (their
    `return`s are theirs: HubertModel.compute_loss's inner `compute_correct` returns
    counts)."""
    stack = branch_children(node)[::-1]
    while stack:
        current = stack.pop()
        yield current
        if type(current) not in _SCOPES:
            stack.extend(branch_children(current)[::-1])


def _is_loss(ctx: FileView, cls: str) -> bool:
    info = ctx.semantic.classes.get(cls)
    if info is None:
        return False
    if _LOSS_NAME.search(cls):
        return True
    for base in info.bases:
        q = ctx.semantic.resolve(base) or base
        if _LOSS_NAME.search(q.rsplit(".", 1)[-1]) or q.startswith("torch.nn.modules.loss."):
            return True
    fwd = ctx.semantic.find_method(cls, "forward")
    if fwd is not None:
        # `forward(pred, target[, weight])`: a model that merely accepts labels among many
        # inputs (prompts, masks) is not a loss.
        params = fwd.params()
        if 2 <= len(params) <= 4 and TARGET_PARAMS.match(params[1].name.value):
            return True
    return cls in _criterion_classes(ctx)


_CRITERION_ASSIGN = re.compile(
    r"\b(?:self\.)?(?:criterion|criterions|loss_fn|loss_func|lossfn|\w*_loss|loss)\s*=\s*"
    r"([A-Z]\w*)\s*\("
)


def _criterion_classes(ctx: FileView) -> set[str]:
    """Local classes the file builds as a criterion (`criterion = FocalLoss()`,
    `self.loss_fn = Dice()`), found in the text (no tree walk: most files say "loss")."""
    memo = ctx.semantic.memo
    found = memo.get("criterion classes")
    if isinstance(found, set):
        return found
    out = _criterion_names(ctx.text) & set(ctx.semantic.classes)
    memo["criterion classes"] = out
    return out


_CRITERION_WORD = re.compile("loss|criterion")


def _criterion_names(text: str) -> set[str]:
    """The classes `_CRITERION_ASSIGN` finds in `text`, tried only at the start of each
    word holding "loss" or "criterion" (every name it matches does): the same set as
    `finditer` over the whole text (a match can only start at such a word, or at the
    `self.` before it, with the same class), 5x faster on model files."""
    out: set[str] = set()
    tried = -1
    for m in _CRITERION_WORD.finditer(text):
        start = m.start()
        while start and (text[start - 1].isalnum() or text[start - 1] == "_"):  # `\w`
            start -= 1
        if start == tried:
            continue
        tried = start
        found = _CRITERION_ASSIGN.match(text, start)
        if found is not None:
            out.add(found.group(1))
    return out


def _is_metric(ctx: FileView, cls: str) -> bool:
    """An evaluation metric (torchmetrics style: `update` and `compute`, or a `Metric`
    base): it runs in the evaluation loop, never inside an exported model."""
    info = ctx.semantic.classes.get(cls)
    if info is None:
        return False
    if {"update", "compute"} <= set(info.methods):
        return True
    return any(
        (ctx.semantic.resolve(b) or b).rsplit(".", 1)[-1].endswith(("Metric", "MetricCollection"))
        or (ctx.semantic.resolve(b) or "").startswith("torchmetrics.")
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


# The attribute an augmentation's random draw is compared with (`np.random.rand() > self.prob`).
_PROBABILITY = re.compile(r"^(p|prob|probability|\w+_prob|prob_\w+)$")


def _is_random_augmentation(ctx: FileView, cls: str) -> bool:
    """A module named as an augmentation (`RandomFlip`, `AddNoise`, `DropChunk`,
    `SpeedPerturb`) whose `forward` draws random numbers, or any module whose `forward`
    applies itself with a probability (`if np.random.rand() > self.prob: return inputs`,
    GridMask): a training-time augmentation, never part of an exported model's inference.
    Inference algorithms that sample (RANSAC) are not named so and test no probability;
    `Dropout` layers call `F.dropout`, not `torch.rand`."""
    if "Augment" in cls:
        return True  # `MixAugmentationBase`, `AdaptiveDiscriminatorAugmentation`
    named = bool(_AUGMENTATION_NAME.search(cls))
    if not named and "rand" not in ctx.text:
        return False
    fwd = ctx.semantic.find_method(cls, "forward")
    if fwd is None:
        return False
    methods = [fwd]
    info = ctx.semantic.classes.get(cls)
    if info is not None:
        methods += [info.methods[m] for m in fwd.self_calls if m in info.methods]
    for m in methods:
        for node in iter_descendants(m.node.body, leaves=False):
            if named and type(node) is cst.Call and _random_call(ctx, node):
                return True
            if type(node) is cst.If and _draw_against_probability(ctx, node.test):
                return True
    return False


def _random_call(ctx: FileView, node: cst.CSTNode) -> bool:
    if not isinstance(node, cst.Call):
        return False
    q = ctx.semantic.qualname(node.func)
    return q is not None and bool(_RANDOM_CALLS.match(q))


def _draw_against_probability(ctx: FileView, test: cst.BaseExpression) -> bool:
    """`np.random.rand() > self.prob`, `random.random() < self.p`."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return False
    sides = (test.left, test.comparisons[0].comparator)
    prob = any(
        isinstance(s, cst.Attribute)
        and dotted(s) == f"self.{s.attr.value}"
        and _PROBABILITY.match(s.attr.value)
        for s in sides
    )
    return prob and any(_random_call(ctx, s) for s in sides)


def _is_data_preprocessor(ctx: FileView, cls: str) -> bool:
    """An mmengine-style data preprocessor (`Det3DDataPreprocessor`, a subclass of
    `BaseDataPreprocessor`): it batches, normalises and voxelizes the data before the
    model; exports (mmdeploy's `create_input`) run it outside the exported graph."""
    info = ctx.semantic.classes.get(cls)
    if info is None:
        return False
    names = [cls, *((ctx.semantic.resolve(b) or b).rsplit(".", 1)[-1] for b in info.bases)]
    return any(n.endswith("DataPreprocessor") for n in names)


# Libraries whose values are host data, never tensors: NumPy arrays, PIL images, OpenCV.
_HOST_LIBRARIES = ("numpy.", "PIL.", "cv2.")


def _is_host_transform(ctx: FileView, cls: str) -> bool:
    """A data transform written as a module: every `return` of its `forward` is a NumPy
    array or a PIL image (`return Image.fromarray(np.array(pic)[:, :, ::-1])`, `tensor =
    np.array(pic, dtype=np.float32)` ... `return tensor`). An exported model returns
    tensors; this one runs on images in the data pipeline."""
    fwd = ctx.semantic.find_method(cls, "forward")
    if fwd is None or not any(lib.rstrip(".") in ctx.text for lib in ("np", "numpy", "PIL", "cv2")):
        return False
    assigned: dict[str, list[cst.BaseExpression]] = {}
    returns: list[cst.BaseExpression] = []
    for node in iter_descendants(fwd.node.body, leaves=False):
        if type(node) in _SCOPES:
            return False  # a nested scope: keep it simple
        if type(node) is cst.Assign:
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    assigned.setdefault(t.target.value, []).append(node.value)
        elif type(node) is cst.Return:
            if node.value is None:
                return False
            returns.append(node.value)
    if not returns:
        return False
    for value in returns:
        if _host_value(ctx, value):
            continue
        if not isinstance(value, cst.Name) or value.value not in assigned:
            return False
        values = assigned[value.value]
        empty = [v for v in values if isinstance(v, cst.List) and not v.elements]
        if len(empty) == len(values) or not all(
            _host_value(ctx, v) for v in values if not isinstance(v, cst.List) or v.elements
        ):
            return False
    return True


def _host_value(ctx: FileView, value: cst.BaseExpression) -> bool:
    """A call into NumPy, PIL or OpenCV (`np.array(pic)`, `Image.fromarray(a)`), or a list
    comprehension of one."""
    if isinstance(value, cst.ListComp):
        value = value.elt
    if not isinstance(value, cst.Call):
        return False
    q = ctx.semantic.qualname(value.func) or ""
    return q.startswith(_HOST_LIBRARIES)


def _is_runtime_wrapper(ctx: FileView, cls: str) -> bool:
    """A module whose methods convert tensors to NumPy and hand them on: in a file that
    imports an inference runtime or a host-side array library, or to a predictor object
    (`self.predictor.predict_from_npy(...)`). It feeds a backend; it is never traced."""
    info = ctx.semantic.classes.get(cls)
    if info is None:
        return False
    backend = any(
        full.split(".", 1)[0] in RUNTIME_BACKENDS for full in ctx.semantic.imports.values()
    )
    if not backend and not (".numpy()" in ctx.text and ".predict" in ctx.text):
        return _uses_runtime_handle(ctx, cls)  # the common case: ".numpy()" absent, no walk
    to_numpy = predictor = False
    for node in iter_descendants(info.node, leaves=False):
        if type(node) is cst.Call and type(node.func) is cst.Attribute:
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
    return _uses_runtime_handle(ctx, cls)


# Calls that hand arrays to an inference handle (`self.wrapper.invoke(img.numpy())`).
_RUN_VERBS = re.compile(r"^(invoke|handle|run|infer|inference|execute\w*|predict\w*|__call__)$")


def _uses_runtime_handle(ctx: FileView, cls: str) -> bool:
    """A class that calls an attribute (`self.wrapper(...)`, `self.wrapper.output_to_list`)
    which it, or a subclass in the same file, hands NumPy arrays to (`self.wrapper.invoke(
    img.cpu().numpy())`, `self.wrapper.handle(img_np, ...)`): the attribute is an inference
    runtime (a submodule would not take NumPy), so the class wraps a deployed backend
    (mmdeploy's End2EndModel and its SDK subclass) and is never exported itself."""
    if ".numpy()" not in ctx.text:
        return False
    memo = ctx.semantic.memo
    key = "runtime handles"
    fed = memo.get(key)
    if not isinstance(fed, dict):
        fed = memo[key] = {
            name: _numpy_fed_attrs(info.node) for name, info in ctx.semantic.classes.items()
        }
    info = ctx.semantic.classes.get(cls)
    if info is None:
        return False
    handles = set(fed.get(cls, ()))
    for name, other in ctx.semantic.classes.items():
        if name != cls and cls in {b.rsplit(".", 1)[-1] for b in other.bases}:
            handles |= fed.get(name, set())
    if not handles:
        return False
    for node in iter_descendants(info.node, leaves=False):
        if type(node) is cst.Call and _self_attr_call(node.func) in handles:
            return True
    return False


def _self_attr_call(func: cst.BaseExpression, *, verb: bool = False) -> str | None:
    """`A` for a call of `self.A(...)` or `self.A.m(...)`; with `verb`, only of
    `self.A.run(...)`-like calls (`_RUN_VERBS`)."""
    name = dotted(func) or ""
    parts = name.split(".")
    if parts[0] != "self" or len(parts) not in (2, 3):
        return None
    if verb and not (len(parts) == 3 and _RUN_VERBS.match(parts[2])):
        return None
    return parts[1]


def _numpy_fed_attrs(node: cst.ClassDef) -> set[str]:
    """Attributes the class's methods run on a NumPy array (`self.A.invoke(t.numpy())`,
    `self.A.handle(img_np, ...)` with `img_np = img.cpu().numpy()`): an argument that is
    the array itself, not an expression computed from one."""
    out: set[str] = set()
    for func in iter_descendants(node.body, leaves=False):
        if type(func) is not cst.FunctionDef:
            continue
        arrays: set[str] = set()
        for n in iter_descendants(func.body, leaves=False):
            if type(n) is cst.Assign and _is_array(n.value):
                arrays |= {t.target.value for t in n.targets if isinstance(t.target, cst.Name)}
            elif type(n) is cst.Call:
                attr = _self_attr_call(n.func, verb=True)
                if attr is not None and any(
                    _is_array(a.value)
                    or (isinstance(a.value, cst.Name) and a.value.value in arrays)
                    for a in n.args
                ):
                    out.add(attr)
    return out


def _is_array(expr: cst.BaseExpression) -> bool:
    """`t.cpu().numpy()`, or an item of one (`t.numpy()[0]`)."""
    while isinstance(expr, cst.Subscript):
        expr = expr.value
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "numpy"
        and not expr.args
    )


def in_dead_branch(ctx: FileView) -> bool:
    """Whether the node being walked (ctx.ancestors) never runs in an export."""
    func = ctx.function
    targets = func.live_targets() if func is not None else frozenset()
    chain = ctx.ancestors
    return any(dead_step(chain[i], chain[i + 1], targets) for i in range(len(chain) - 1))
