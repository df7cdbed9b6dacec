"""Whether a module class behaves the same in train and eval mode. Imports modes.

`mode_insensitive(ctx, class_name)`: a local module class with no mode-dependent layer
(Dropout, BatchNorm, stacked RNNs with dropout, ...) and no `self.training` anywhere in
it, its bases or the submodules it builds (classes of this file, or of other project
modules judged in their files; an attribute the class asserts to be one of some classes,
`assert self.model.__class__ in (EDSR, MDSR)`, is judged by those classes);
`class_mode_insensitive` for a class given by its definition (one nested in a function);
`made_class_mode_insensitive` for a class a factory function of the file makes with
`type(name, bases, {})`. The model-mode
rules (OLX2xx) do not report a model whose mode cannot change what it exports. With
`batchnorm=False` BatchNorm does not count: torch 2.13's ONNX exporter writes it in
inference mode, with the running statistics, whatever the mode (`layers.batchnorm_only`).
False whenever unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.layers import batchnorm_class, rnn_still, still_class
from onnxlint.analysis.modes import is_camel
from onnxlint.source.walker import dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

__all__ = ["class_mode_insensitive", "made_class_mode_insensitive", "mode_insensitive"]


_MODE_WORDS = (
    "Dropout",
    "dropout",
    "BatchNorm",
    "batch_norm",
    "InstanceNorm",
    "instance_norm",
    "training",
    "drop_path",
    "DropPath",
    "StochasticDepth",
    "SyncBatchNorm",
)
_BATCHNORM_WORDS = ("BatchNorm", "batch_norm")
_NOT_BATCHNORM_WORDS = tuple(w for w in _MODE_WORDS if not w.endswith(_BATCHNORM_WORDS))
# Recurrent layers: mode-dependent only through `dropout` between stacked layers.
_RNN_WORDS = ("RNN", "LSTM", "GRU")
_RNN_CLASSES = frozenset(f"torch.nn.{n}" for n in _RNN_WORDS)


def mode_insensitive(ctx: FileView, class_name: str, *, batchnorm: bool = True) -> bool:
    """True when a local module class provably behaves the same in train and eval mode:
    no mode-dependent layer or `self.training` anywhere in it (or its local bases and
    submodule classes), and every submodule it builds is a `torch.nn` layer or such a
    local class. False whenever unsure (an imported block could hold a Dropout). With
    `batchnorm=False`, BatchNorm layers are not mode-dependent (an ONNX export)."""
    key = ("mode_insensitive", class_name, batchnorm)
    memo = ctx.semantic.memo
    if key not in memo:
        memo[key] = False  # recursion guard: a cycle counts as unsure
        memo[key] = _mode_insensitive(ctx, class_name, batchnorm)
    return bool(memo[key])


def _mode_insensitive(ctx: FileView, class_name: str, batchnorm: bool) -> bool:
    info = ctx.semantic.classes.get(class_name)
    if info is None:
        return False
    return class_mode_insensitive(ctx, class_name, info.node, info.bases, batchnorm=batchnorm)


def class_mode_insensitive(
    ctx: FileView,
    class_name: str,
    node_: cst.ClassDef,
    bases: Sequence[str],
    *,
    batchnorm: bool = True,
) -> bool:
    """`mode_insensitive` for a class given by its definition (also one nested in a
    function, which the file model does not list)."""
    words = _MODE_WORDS if batchnorm else _NOT_BATCHNORM_WORDS
    for base in bases:
        q = ctx.semantic.resolve(base)
        if base in ctx.semantic.classes:
            if not mode_insensitive(ctx, base, batchnorm=batchnorm):
                return False
        elif q in _CONTAINERS and not _takes_star_args(node_):
            continue  # its layers are the ones its own `__init__` builds, judged below
        elif q not in ("torch.nn.Module", "torch.nn.modules.module.Module") and not (
            q is not None
            and (
                still_class(q)
                or (not batchnorm and batchnorm_class(q))
                or _project_class_insensitive(ctx, q, batchnorm)
            )
        ):
            return False
    narrowed = _narrowed_attributes(node_)
    for names in narrowed.values():
        for name in names:
            if not _class_insensitive(ctx, class_name, name, batchnorm):
                return False
    skipped = {id(value) for attr, value in _attribute_assignments(node_) if attr in narrowed}
    judged: set[int] = set()  # the `dropout=` keyword of a recurrent layer that drops nothing
    for node in _descendants_but(node_, skipped):
        if isinstance(node, cst.Assign) and _stores_a_recurrent_layer(node):
            return False
        if isinstance(node, cst.Call) and ctx.semantic.qualname(node.func) in _RNN_CLASSES:
            if not _rnn_without_dropout(node):
                return False
            judged |= {id(a.keyword) for a in node.args if a.keyword is not None}
        if id(node) in judged:
            continue
        if isinstance(node, cst.Name) and any(w in node.value for w in words):
            return False
        if isinstance(node, cst.Attribute) and any(w in node.attr.value for w in words):
            return False
        if isinstance(node, cst.SimpleString) and "drop" in node.value.lower():
            return False
        if not isinstance(node, cst.Call):
            continue
        d = dotted(node.func)
        if d is None:
            continue
        last = d.rsplit(".", 1)[-1]
        if not is_camel(last):
            continue
        if not _class_insensitive(ctx, class_name, d, batchnorm):
            return False
    return True


# Containers whose layers are what the subclass's own `__init__` passes them.
_CONTAINERS = frozenset(
    {"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"}
    | {"torch.nn.modules.container.Sequential", "torch.nn.modules.container.ModuleList"}
)


def _class_insensitive(ctx: FileView, class_name: str, d: str, batchnorm: bool) -> bool:
    """A class (called `d` in this file) that a module class builds: a class of the file,
    a `torch.nn` layer, a builtin (an exception raised), a mode-free library layer, or a
    class of another project module judged in its file."""
    if d in ctx.semantic.classes:
        return d == class_name or mode_insensitive(ctx, d, batchnorm=batchnorm)
    q = ctx.semantic.resolve(d) or ""
    if q.startswith(("torch.nn.", "builtins.")) or still_class(q) or _tensor_type(q):
        return True
    return _project_class_insensitive(ctx, q, batchnorm)


def _tensor_type(qualname: str) -> bool:
    """`torch.Tensor(...)`, `torch.FloatTensor(...)`, `torch.Size(...)`: values, no modules."""
    parts = qualname.split(".")
    return (
        len(parts) == 2
        and parts[0] == "torch"
        and (parts[1].endswith("Tensor") or parts[1] == "Size")
    )


def _project_class_insensitive(ctx: FileView, qualname: str, batchnorm: bool) -> bool:
    """A class imported from another module of the project, or else from an installed
    library (`ProjectLookup.library_class_at`), judged in its own file."""
    if ctx.project is None or "." not in qualname:
        return False
    key = ("project_mode_insensitive", qualname, batchnorm)
    memo = ctx.semantic.memo
    if key not in memo:
        memo[key] = False  # recursion guard
        found = ctx.project.class_at(ctx.path, qualname) or ctx.project.library_class_at(
            ctx.path, qualname
        )
        memo[key] = found is not None and mode_insensitive(
            found[0], found[1].name, batchnorm=batchnorm
        )
    return bool(memo[key])


def _takes_star_args(cls: cst.ClassDef) -> bool:
    """The class's `__init__` takes `*args` (its container layers come from the caller)."""
    for stmt in cls.body.body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == "__init__":
            return isinstance(stmt.params.star_arg, cst.Param)
    return False


def _narrowed_attributes(cls: cst.ClassDef) -> dict[str, list[str]]:
    """`assert self.model.__class__ in (EDSR, MDSR)` (or `type(self.model) in (...)`,
    `isinstance(self.model, (EDSR, MDSR))`) in the class: `model` -> the class names the
    attribute is asserted to be (what it is built by is then judged by those classes)."""
    found: dict[str, list[str]] = {}
    for node in iter_descendants(cls):
        if not isinstance(node, cst.Assert):
            continue
        test = node.test
        subject: cst.BaseExpression | None = None
        classes: cst.BaseExpression | None = None
        if (
            isinstance(test, cst.Comparison)
            and len(test.comparisons) == 1
            and isinstance(test.comparisons[0].operator, cst.In)
        ):
            left = test.left
            if isinstance(left, cst.Attribute) and left.attr.value == "__class__":
                subject = left.value
            elif isinstance(left, cst.Call) and dotted(left.func) == "type" and len(left.args) == 1:
                subject = left.args[0].value
            classes = test.comparisons[0].comparator
        elif (
            isinstance(test, cst.Call) and dotted(test.func) == "isinstance" and len(test.args) == 2
        ):
            subject, classes = test.args[0].value, test.args[1].value
        attr = dotted(subject) if subject is not None else None
        if attr is None or not attr.startswith("self.") or attr.count(".") != 1:
            continue
        if isinstance(classes, (cst.Tuple, cst.List, cst.Set)):
            names = [dotted(e.value) for e in classes.elements]
        else:
            names = [dotted(classes)] if classes is not None else [None]
        if names and all(n is not None for n in names):
            found[attr.split(".", 1)[1]] = [n for n in names if n is not None]
    return found


def _attribute_assignments(cls: cst.ClassDef) -> list[tuple[str, cst.BaseExpression]]:
    """`self.x = value` anywhere in the class: (x, value)."""
    out: list[tuple[str, cst.BaseExpression]] = []
    for node in iter_descendants(cls):
        if isinstance(node, cst.Assign) and len(node.targets) == 1:
            target = dotted(node.targets[0].target)
            if target is not None and target.startswith("self.") and target.count(".") == 1:
                out.append((target.split(".", 1)[1], node.value))
    return out


def _descendants_but(node: cst.CSTNode, skipped: set[int]) -> list[cst.CSTNode]:
    """`iter_descendants(node)` without the subtrees whose root is in `skipped`."""
    out: list[cst.CSTNode] = []
    stack = list(reversed(list(node.children)))
    while stack:
        current = stack.pop()
        if id(current) in skipped:
            continue
        out.append(current)
        stack.extend(reversed(list(current.children)))
    return out


def made_class_mode_insensitive(ctx: FileView, name: str, *, batchnorm: bool = True) -> bool:
    """A class bound at module level to what a factory function of this file makes with
    `type(...)`: `DCNv2 = make_dcn_type(DeformConvGS, "DCNv2")`, whose every `return` is
    `type(cls_name, (_Factory, base_class), {})` (no body of its own), is mode-free when
    each of its bases is: a class nested in the factory (judged with the factory's
    parameters bound to the call's arguments), a class of the file, or a library layer.
    False whenever unsure (a factory of another file, a non-empty namespace, a base that
    is an expression)."""
    key = ("made_class_mode_insensitive", name, batchnorm)
    memo = ctx.semantic.memo
    if key not in memo:
        memo[key] = False
        memo[key] = _made_class_mode_insensitive(ctx, name, batchnorm)
    return bool(memo[key])


def _made_class_mode_insensitive(ctx: FileView, name: str, batchnorm: bool) -> bool:
    values = [
        stmt.value
        for line in ctx.semantic.module_body
        if isinstance(line, cst.SimpleStatementLine)
        for stmt in line.body
        if isinstance(stmt, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in stmt.targets)
    ]
    if len(values) != 1 or not isinstance(values[0], cst.Call):
        return False
    call = values[0]
    factory_name = call.func.value if isinstance(call.func, cst.Name) else None
    factory = ctx.semantic.functions.get(factory_name or "")
    if factory is None or factory.class_name is not None:
        return False
    bound = _bind(factory.node, call)
    if bound is None:
        return False
    nested = {
        n.name.value: n for n in iter_descendants(factory.node) if isinstance(n, cst.ClassDef)
    }
    returns = list(_own_returns(factory.node))
    if not returns:
        return False
    for ret in returns:
        bases = _type_call_bases(ctx, ret.value)
        if bases is None:
            return False
        for base in bases:
            if not _base_mode_insensitive(ctx, base, bound, nested, batchnorm):
                return False
    return True


def _bind(func: cst.FunctionDef, call: cst.Call) -> dict[str, str | None] | None:
    """The factory's parameters -> the dotted name the call passes (None: not a name)."""
    p = func.params
    if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
        return None
    names = [x.name.value for x in (*p.posonly_params, *p.params)]
    out: dict[str, str | None] = {}
    positional = [a for a in call.args if a.keyword is None]
    if any(a.star for a in call.args) or len(positional) > len(names):
        return None
    for pname, arg in zip(names, positional, strict=False):
        out[pname] = dotted(arg.value)
    for arg in call.args:
        if arg.keyword is not None:
            out[arg.keyword.value] = dotted(arg.value)
    for x in (*p.posonly_params, *p.params, *p.kwonly_params):
        if x.name.value not in out:
            out[x.name.value] = dotted(x.default) if x.default is not None else None
    return out


def _own_returns(func: cst.FunctionDef) -> list[cst.Return]:
    """The `return`s of `func` itself (not of the functions and classes nested in it)."""
    found: list[cst.Return] = []
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            found.append(node)
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(node.children)
    return found


def _type_call_bases(
    ctx: FileView, value: cst.BaseExpression | None
) -> list[cst.BaseExpression] | None:
    """`type(name, (A, B), {})` -> [A, B]; None for anything else."""
    if not isinstance(value, cst.Call) or ctx.semantic.qualname(value.func) != "builtins.type":
        return None
    args = value.args
    if len(args) != 3 or any(a.keyword is not None or a.star for a in args):
        return None
    bases, namespace = args[1].value, args[2].value
    if not isinstance(bases, cst.Tuple) or not isinstance(namespace, cst.Dict):
        return None
    if namespace.elements or any(isinstance(e, cst.StarredElement) for e in bases.elements):
        return None
    return [e.value for e in bases.elements]


def _base_mode_insensitive(
    ctx: FileView,
    base: cst.BaseExpression,
    bound: dict[str, str | None],
    nested: dict[str, cst.ClassDef],
    batchnorm: bool,
) -> bool:
    """One base of a made class: a factory parameter stands for the call's argument."""
    name = dotted(base)
    if name is None:
        return False
    if name in bound:
        name = bound[name]
        if name is None:
            return False
    if name in nested:
        node = nested[name]
        bases: list[str] = []
        for b in node.bases:
            d = dotted(b.value)
            d = bound.get(d, d) if d is not None else None
            if d is None:
                return False
            bases.append(d)
        return class_mode_insensitive(ctx, name, node, bases, batchnorm=batchnorm)
    if name in ctx.semantic.classes:
        return mode_insensitive(ctx, name, batchnorm=batchnorm)
    q = ctx.semantic.resolve(name)
    return q is not None and (still_class(q) or (not batchnorm and batchnorm_class(q)))


def _rnn_without_dropout(call: cst.Call) -> bool:
    """`nn.LSTM(...)` (GRU, RNN) that drops nothing in training mode (`layers.rnn_still`)."""
    return rnn_still(call)[0]


def _stores_a_recurrent_layer(node: cst.Assign) -> bool:
    """`self.lstm = lstm`, `self.rnn = encoder.rnn`: a recurrent layer from elsewhere,
    whose dropout is unknown (a constructor call is judged by `_rnn_without_dropout`)."""
    value = node.value
    last = value.value if isinstance(value, cst.Name) else None
    if isinstance(value, cst.Attribute):
        last = value.attr.value
    return last is not None and any(w.lower() in last.lower() for w in _RNN_WORDS)
