"""Whether a module class behaves the same in train and eval mode. Imports modes.

`mode_insensitive(ctx, class_name)`: a local module class with no mode-dependent layer
(Dropout, BatchNorm, stacked RNNs with dropout, ...) and no `self.training` anywhere in
it, its local bases or the submodules it builds; `class_mode_insensitive` for a class
given by its definition (one nested in a function). The model-mode rules (OLX2xx) do
not report a model whose mode cannot change what it exports. False whenever unsure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.layers import rnn_still
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
    "drop_path",
    "DropPath",
    "StochasticDepth",
    "SyncBatchNorm",
)
# Recurrent layers: mode-dependent only through `dropout` between stacked layers.
_RNN_WORDS = ("RNN", "LSTM", "GRU")
_RNN_CLASSES = frozenset(f"torch.nn.{n}" for n in _RNN_WORDS)


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
    judged: set[int] = set()  # the `dropout=` keyword of a recurrent layer that drops nothing
    for node in iter_descendants(node_):
        if isinstance(node, cst.Assign) and _stores_a_recurrent_layer(node):
            return False
        if isinstance(node, cst.Call) and ctx.semantic.qualname(node.func) in _RNN_CLASSES:
            if not _rnn_without_dropout(node):
                return False
            judged |= {id(a.keyword) for a in node.args if a.keyword is not None}
        if id(node) in judged:
            continue
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
