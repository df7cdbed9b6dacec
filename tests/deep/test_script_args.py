"""Which required command-line arguments a script run may fill (issue 18): where to write
and which checkpoint to load do not change what the export call exports; a config or a
model name does. Pure argparse, no torch."""

from __future__ import annotations

import argparse

import pytest

pytest.importorskip("torch")  # the worker package imports torch

from onnxlint.deep.worker.script_args import role_of


def _role(*names: str, **kwargs: object) -> str | None:
    return role_of(argparse.ArgumentParser().add_argument(*names, **kwargs))


@pytest.mark.parametrize(
    ("names", "kwargs", "role"),
    [
        # real scripts' arguments (piper, deepfilternet, mmdet, easyocr, yolov5)
        (("--output-file",), {"help": "Path to output file (.onnx)"}, "output"),
        (("export_dir",), {"help": "Directory for exporting the onnx model."}, "output"),
        (("-s", "--detector_onnx_save_path"), {}, "output"),
        (("base_dir",), {"help": "Directory to store logs, checkpoints, etc."}, "output"),
        (("--checkpoint",), {"help": "Path to model checkpoint (.ckpt)"}, "checkpoint"),
        (("--weights",), {"nargs": "+", "help": "model.pt path(s)"}, "checkpoint"),
        (("model_ckpt",), {"help": "Checkpint file (local or url)."}, "checkpoint"),
        (("--model-path",), {"help": "path to the .pth file"}, "checkpoint"),
        # values that matter: configs, names, inputs, choices, numbers
        (("config",), {"help": "test config file path"}, None),
        (("--model-name",), {"help": "name of the model to export"}, None),
        (("--model-path",), {"help": "path of the model to export"}, None),
        (("img_path",), {"help": "path to input image file"}, None),
        (("--data-dir",), {"help": "Path to the dataset directory"}, None),
        (("--output",), {"choices": ["onnx", "torchscript"]}, None),
        (("--out-size",), {"type": int}, None),
        (("--save",), {"action": "store_true"}, None),
    ],
)
def test_role_of_a_required_argument(
    names: tuple[str, ...], kwargs: dict[str, object], role: str | None
) -> None:
    assert _role(*names, **kwargs) == role
