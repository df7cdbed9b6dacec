"""What onnxlint knows, without reading them, about base classes outside the project.

A class is a PyTorch module only when its bases resolve to `torch.nn.Module`: directly,
through project classes, or through a known module class of torch or of a model library
(transformers, MONAI, timm, ...). `torch.autograd.Function` is not a module, and the
layer classes of other frameworks (PaddlePaddle, MXNet, OneFlow, MegEngine, ...) are not
PyTorch even though they have a `forward`.
"""

from __future__ import annotations

TORCH_MODULE_BASES = frozenset(
    {"torch.nn.Module", "torch.nn.modules.module.Module", "torch.jit.ScriptModule"}
)
# Packages whose CamelCase classes used as bases are torch modules (their models and layers).
TORCH_MODEL_LIBRARIES = (
    "torchvision.",
    "torchaudio.",
    "transformers.",
    "monai.",
    "timm.",
    "diffusers.",
    "mmcv.",
    "mmengine.model",
    "mmdet.",
    "mmseg.",
    "mmpose.",
    "detectron2.",
    "pytorch_lightning.",
    "lightning.",
    "kornia.",
    "segmentation_models_pytorch.",
    "ultralytics.nn.",
    "open_clip.",
    "speechbrain.nnet.",
    "speechbrain.lobes.",
    "torch_geometric.nn.",
)
# Top-level packages of other deep-learning frameworks: their classes are never PyTorch.
OTHER_FRAMEWORKS = frozenset(
    {
        "paddle",
        "mxnet",
        "oneflow",
        "megengine",
        "tensorflow",
        "keras",
        "tf_keras",
        "jax",
        "flax",
        "haiku",
        "mindspore",
        "jittor",
        "chainer",
    }
)
# Inference runtimes and host-side array libraries: a module whose `forward` hands NumPy
# arrays to one of these (a backend session, SciPy's Hungarian matching, OpenCV drawing)
# is a runtime-side wrapper or post-processor, never part of an exported graph.
RUNTIME_BACKENDS = frozenset(
    {
        *("onnxruntime", "tensorrt", "openvino", "ncnn", "mnn", "tvm", "tritonclient"),
        *("pycuda", "sklearn", "faiss", "coremltools", "tflite_runtime", "paddle_inference"),
        *("scipy", "cv2"),
        *(
            "pyppl",
            "acl",
            "rknn",
            "rknnlite",
            "vaststream",
            "vacl_stream",
        ),  # PPLNN, Ascend, RKNN, Vastai
    }
)
# Bases that look like modules (they have `forward`) but are not.
NOT_MODULE_BASES = frozenset(
    {
        "torch.autograd.Function",
        "torch.autograd.function.Function",
        "torch.autograd.function.InplaceFunction",
        "torch.autograd.function.once_differentiable",
    }
)
AUTOGRAD_FUNCTION_BASES = frozenset(q for q in NOT_MODULE_BASES if "Function" in q)


def base_verdict(qualname: str) -> bool | None:
    """True: a torch module base; False: certainly not one; None: unknown (not read)."""
    if qualname in TORCH_MODULE_BASES:
        return True
    if qualname in NOT_MODULE_BASES or qualname.startswith("torch.autograd."):
        return False
    head = qualname.split(".", 1)[0]
    if head in OTHER_FRAMEWORKS:
        return False
    last = qualname.rsplit(".", 1)[-1]
    if qualname.startswith("torch.nn.") and last[:1].isupper():
        return True
    if qualname.startswith(("builtins.", "typing.", "abc.", "enum.", "dataclasses.", "torch.")):
        return False
    if qualname.startswith(TORCH_MODEL_LIBRARIES) and last[:1].isupper():
        return True
    return None


def is_autograd_function(qualname: str) -> bool:
    return qualname in AUTOGRAD_FUNCTION_BASES


def imports_other_framework(imports: dict[str, str]) -> bool:
    """Whether a file imports another deep-learning framework (so an unknown base class
    with a `forward` is more likely that framework's layer than a torch module)."""
    return any(full.split(".", 1)[0] in OTHER_FRAMEWORKS for full in imports.values())
