"""Export the detector the way an older tutorial taught it."""

import io

import torch
import torch.onnx as tox

from vision.detector import DetectorHead


def build():
    model = DetectorHead()
    model.eval()
    return model


def export_legacy() -> None:
    model = build()
    images = torch.randn(1, 3, 32, 32)
    tox.export(
        model,
        (images,),
        "detector.onnx",
        dynamo=False,
        opset_version=13,
        do_constant_folding=True,
        input_names=["images", "images"],
        dynamic_axes={"images": {0: "batch", 4: "width"}},
    )


def export_with_dynamo_export() -> None:
    model = build()
    images = torch.randn(2, 3, 32, 32)
    program = torch.onnx.dynamo_export(model, images)
    program.save("detector_dynamo.onnx")


def export_to_memory() -> bytes:
    model = DetectorHead().eval()
    buffer = io.BytesIO()
    torch.onnx.export(
        model,
        (torch.randn(2, 3, 32, 32),),
        buffer,
        opset_version=13,
        dynamic_shapes={"x": {0: "batch"}},
        fallback=True,
    )
    return buffer.getvalue()


if __name__ == "__main__":
    export_legacy()
