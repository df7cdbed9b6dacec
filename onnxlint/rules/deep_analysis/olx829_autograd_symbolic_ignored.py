"""OLX829: an autograd Function's `symbolic` that the dynamo exporter ignores (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class AutogradSymbolicIgnored(Rule):
    """
    ## What it does
    Reports each `torch.autograd.Function` with a `symbolic` static method that the export's
    capture really applies, once per class, at the line of the model code that calls
    `.apply(...)`. The deep analysis records the Functions torch.export runs, so it also
    finds the ones the static OLX410 cannot tell: a class picked at run time (an
    end-to-end detection wrapper choosing its NMS by an argument), reached through another
    package, or through a plain helper function.

    ## Why is this bad?
    `symbolic` only feeds the legacy TorchScript exporter. `torch.onnx.export` (the dynamo
    exporter, the default since torch 2.9) ignores it and exports what `forward` computes.
    For an NMS or a TensorRT plugin, `forward` is a placeholder (YOLOv6's and yolov7's
    `ORT_NMS` return random indices): the export succeeds, and the ONNX model is silently
    wrong.

    ## Example
    ```python
    class ORT_NMS(torch.autograd.Function):
        @staticmethod
        def forward(ctx, boxes, scores):
            return torch.randint(0, 100, (10, 3))  # placeholder

        @staticmethod
        def symbolic(g, boxes, scores):
            return g.op("NonMaxSuppression", boxes, scores)

    torch.onnx.export(End2End(model, ort=True), images, "model.onnx")
    ```

    ## Use instead
    Export with `dynamo=False` (the TorchScript exporter uses `symbolic`), or define the op
    with `torch.library.custom_op`, give it a fake implementation, and its ONNX translation
    in `custom_translation_table=`; for NMS, `torchvision.ops.nms` has one.

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    - https://docs.pytorch.org/docs/stable/library.html#torch.library.custom_op
    """

    code = "OLX829"
    name = "autograd-symbolic-ignored"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
