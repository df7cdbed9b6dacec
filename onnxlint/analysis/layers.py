"""Library layers whose training mode changes nothing, judged from their constructor call.

`still_layer(qualname, call)`: whether a module built by a library constructor (a `torch.nn`
layer, a torchvision model) behaves the same in train and eval mode, or would if one of a
few conditions on the builder's parameters held (`nn.LSTM(num_layers=m.num_layers, ...)`:
one layer, or no dropout, settled where the builder is called). `rnn_still(call)` is the
part for `nn.LSTM`/`nn.GRU`/`nn.RNN`; `still_class(qualname)` a library class that is
mode-free with any arguments (also as a base class). `batchnorm_only(qualname, call)` and
`batchnorm_class(qualname)`: a layer whose only mode-dependent part is BatchNorm with
running statistics, which torch 2.13's ONNX exporter writes in inference mode whatever the
model's mode (onnxscript's torchlib sets `training = False` for BatchNormalization).
Imports nothing of onnxlint; False whenever unsure.
"""

from __future__ import annotations

import libcst as cst

__all__ = [
    "Condition",
    "batchnorm_class",
    "batchnorm_only",
    "literal_number",
    "rnn_still",
    "still_class",
    "still_layer",
]

# (a parameter of the function building the layer, the attribute of it the constructor
# reads, the value that makes the layer mode-free): `(scaled_lstm, "num_layers", 1)`.
Condition = tuple[str, str, float]

RNN_NAMES = frozenset({"RNN", "LSTM", "GRU"})

# torch.nn layers with no mode-dependent part (no Dropout, no batch statistics, no random
# slope as RReLU's), whatever their arguments; the recurrent ones are judged by `rnn_still`.
_STILL_TORCH = frozenset(
    {
        "Identity", "Linear", "Bilinear", "LazyLinear", "Embedding", "EmbeddingBag",
        "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
        "LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm",
        "ReLU", "ReLU6", "GELU", "SiLU", "Mish", "ELU", "SELU", "CELU", "LeakyReLU", "PReLU",
        "Sigmoid", "Tanh", "Softplus", "Softsign", "Hardswish", "Hardsigmoid", "Hardtanh",
        "Softmax", "LogSoftmax", "GLU",
        "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d", "AvgPool3d",
        "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d", "AdaptiveMaxPool2d", "AdaptiveMaxPool3d",
        "Upsample", "PixelShuffle", "PixelUnshuffle", "Flatten", "Unflatten",
        "ZeroPad2d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d",
        "ReflectionPad1d", "ReflectionPad2d", "ReplicationPad1d", "ReplicationPad2d",
        "RNNCell", "LSTMCell", "GRUCell",
    }
)  # fmt: skip

# Library layers of other packages with no mode-dependent part, whatever their arguments:
# torchvision's deformable convolution (weights and a `deform_conv2d` call, no batch
# statistics, no dropout, no `self.training`).
_STILL_OTHER = frozenset(
    {"torchvision.ops.DeformConv2d", "torchvision.ops.deform_conv.DeformConv2d"}
)

# torch.nn's BatchNorm layers: in training mode they normalise with the batch's statistics
# under tracing and `torch.export`, but torch 2.13's `torch.onnx.export` (dynamo) writes
# each as an inference BatchNormalization with the running statistics (a training-mode
# Conv+BatchNorm exports to the same ONNX Runtime outputs as in eval mode; with
# `track_running_stats=False` both modes use the batch's).
_BATCHNORM = frozenset({"BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"})
# torchvision's ResNet builders: convolutions, BatchNorm, ReLU, pooling, one Linear; no
# Dropout. The keywords that keep it so (`norm_layer` would replace the BatchNorm).
_RESNET = frozenset(
    {
        "resnet18", "resnet34", "resnet50", "resnet101", "resnet152",
        "resnext50_32x4d", "resnext101_32x8d", "resnext101_64x4d",
        "wide_resnet50_2", "wide_resnet101_2",
    }
)  # fmt: skip
_RESNET_KEYWORDS = frozenset(
    {
        "weights", "pretrained", "progress", "num_classes", "zero_init_residual",
        "groups", "width_per_group", "replace_stride_with_dilation",
    }
)  # fmt: skip

# torchvision's ViT builders: LayerNorm, no BatchNorm; `dropout` and `attention_dropout` are
# 0.0 unless given. The keywords that keep it so (`conv_stem_configs` adds BatchNorm).
_VIT = frozenset({"vit_b_16", "vit_b_32", "vit_l_16", "vit_l_32", "vit_h_14"})
_VIT_KEYWORDS = frozenset(
    {"weights", "progress", "num_classes", "image_size", "representation_size"}
)
_VIT_DROPOUTS = frozenset({"dropout", "attention_dropout"})


def literal_number(expr: cst.BaseExpression | None) -> float | None:
    """The value of an int or float literal (`1`, `0.0`), else None."""
    if isinstance(expr, (cst.Integer, cst.Float)):
        try:
            return float(expr.evaluated_value)
        except (ValueError, TypeError):
            return None
    return None


def _param_attr(expr: cst.BaseExpression | None) -> tuple[str, str] | None:
    """`m.num_layers` -> ("m", "num_layers")."""
    if (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value != "self"
    ):
        return expr.value.value, expr.attr.value
    return None


def rnn_still(call: cst.Call) -> tuple[bool, tuple[Condition, ...]]:
    """`nn.LSTM(...)` (GRU, RNN) that drops nothing in training mode: one layer (the
    dropout acts only between stacked layers; the default is 1) or no dropout (a literal 0,
    the default). Positional arguments past the sizes: unsure. A `num_layers=` or
    `dropout=` read from an attribute of a parameter (`m.num_layers`) gives conditions."""
    if len([a for a in call.args if a.keyword is None]) > 2:
        return False, ()
    kw = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    layers, dropout = kw.get("num_layers"), kw.get("dropout")
    if layers is None or literal_number(layers) == 1:
        return True, ()
    if dropout is None or literal_number(dropout) == 0:
        return True, ()
    conditions: list[Condition] = []
    for value, wanted in ((layers, 1.0), (dropout, 0.0)):
        found = _param_attr(value)
        if found is not None:
            conditions.append((found[0], found[1], wanted))
    return False, tuple(conditions)


def still_class(qualname: str) -> bool:
    """A library module class that behaves the same in train and eval mode whatever its
    arguments (`torch.nn.Conv2d`, `torchvision.ops.DeformConv2d`): as a submodule or as
    the base of a class whose own body is judged apart. The recurrent layers are not."""
    parts = qualname.split(".")
    if parts[0] == "torch" and len(parts) > 2 and parts[1] == "nn":
        return parts[-1] in _STILL_TORCH
    return qualname in _STILL_OTHER


def batchnorm_class(qualname: str) -> bool:
    """`torch.nn.BatchNorm2d` (1d, 3d, SyncBatchNorm)."""
    parts = qualname.split(".")
    return parts[0] == "torch" and len(parts) > 2 and parts[1] == "nn" and parts[-1] in _BATCHNORM


def batchnorm_only(qualname: str, call: cst.Call) -> bool:
    """Whether the module `call` builds changes with the mode only through BatchNorm with
    running statistics: a torch.nn BatchNorm layer, a torchvision ResNet built with the
    usual keywords (`resnet50(weights="DEFAULT")`). False whenever unsure."""
    if batchnorm_class(qualname):
        return True
    parts = qualname.split(".")
    if parts[:2] != ["torchvision", "models"] or parts[-1] not in _RESNET:
        return False
    return all(
        a.star == "" and (a.keyword is None or a.keyword.value in _RESNET_KEYWORDS)
        for a in call.args
    )


def still_layer(qualname: str, call: cst.Call) -> tuple[bool, tuple[Condition, ...]]:
    """Whether the module `call` (of the library constructor `qualname`) builds behaves the
    same in train and eval mode; else the conditions that would make it so."""
    parts = qualname.split(".")
    last = parts[-1]
    if parts[0] == "torch" and len(parts) > 2 and parts[1] == "nn":
        if last in RNN_NAMES:
            return rnn_still(call)
        return last in _STILL_TORCH, ()
    if parts[:2] == ["torchvision", "models"] and last in _VIT:
        if any(a.keyword is None for a in call.args):
            return False, ()
        for arg in call.args:
            key = arg.keyword.value if arg.keyword is not None else ""
            if key in _VIT_DROPOUTS:
                if literal_number(arg.value) != 0:
                    return False, ()
            elif key not in _VIT_KEYWORDS:
                return False, ()
        return True, ()
    return False, ()
