"""Whether a module class behaves the same in train and eval mode. Imports modes.

`mode_insensitive(ctx, class_name)`: a local module class with no mode-dependent layer
(Dropout, BatchNorm, RNNs, ...) and no `self.training` anywhere in it, its local bases or
the submodules it builds; `class_mode_insensitive` for a class given by its definition
(one nested in a function). The model-mode rules (OLX2xx) do not report a model whose
mode cannot change what it exports. False whenever unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.modes import is_camel
from onnxlint.source.walker import dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

__all__ = ["class_mode_insensitive", "mode_insensitive"]


_MODE_WORDS = (
    "Dropout",
    "dropout",
    "BatchNorm",
    "batch_norm",
    "InstanceNorm",
    "instance_norm",
    "training",
    "RNN",
    "LSTM",
    "GRU",
    "drop_path",
    "DropPath",
    "StochasticDepth",
    "SyncBatchNorm",
)


def mode_insensitive(ctx: FileView, class_name: str) -> bool:
    """True when a local module class provably behaves the same in train and eval mode:
    no mode-dependent layer or `self.training` anywhere in it (or its local bases and
    submodule classes), and every submodule it builds is a `torch.nn` layer or such a
    local class. False whenever unsure (an imported block could hold a Dropout)."""
    key = ("mode_insensitive", class_name)
    memo = ctx.semantic.memo
    if key not in memo:
        memo[key] = False  # recursion guard: a cycle counts as unsure
        memo[key] = _mode_insensitive(ctx, class_name)
    return bool(memo[key])


def _mode_insensitive(ctx: FileView, class_name: str) -> bool:
    info = ctx.semantic.classes.get(class_name)
    if info is None:
        return False
    return class_mode_insensitive(ctx, class_name, info.node, info.bases)


def class_mode_insensitive(
    ctx: FileView, class_name: str, node_: cst.ClassDef, bases: Sequence[str]
) -> bool:
    """`mode_insensitive` for a class given by its definition (also one nested in a
    function, which the file model does not list)."""
    for base in bases:
        q = ctx.semantic.resolve(base)
        if base in ctx.semantic.classes:
            if not mode_insensitive(ctx, base):
                return False
        elif q not in ("torch.nn.Module", "torch.nn.modules.module.Module"):
            return False
    for node in iter_descendants(node_):
        if isinstance(node, cst.Name) and any(w in node.value for w in _MODE_WORDS):
            return False
        if isinstance(node, cst.Attribute) and any(w in node.attr.value for w in _MODE_WORDS):
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
        if d in ctx.semantic.classes:
            if d != class_name and not mode_insensitive(ctx, d):
                return False
            continue
        q = ctx.semantic.qualname(node.func) or ""
        if not q.startswith("torch.nn.") and q not in ("builtins.super",):
            return False
    return True
