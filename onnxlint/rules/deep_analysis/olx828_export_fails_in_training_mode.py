"""OLX828: an export that fails only because the model is in training mode (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class ExportFailsInTrainingMode(Rule):
    """
    ## What it does
    Reports an export whose capture fails because the model is in training mode, at the
    model argument of the export call (or the factory's `return`), with torch's error and
    its line as related information. The criterion: torch.export fails on the model as the
    export call gives it, some module is in training mode, and the same capture, with the
    same inputs and dynamic shapes, succeeds once the model is put in eval mode.

    ## Why is this bad?
    `torch.onnx.export` exports the model in the mode it is in. Many models take another
    path in training mode: a detection head returns its raw training outputs instead of
    boxes (YOLOv4's `Yolov4Head`), BatchNorm uses batch statistics, a branch builds losses.
    That path then fails in torch.export with an error deep in the training-only code
    (`AssertionError: 1 not in VR[2, int_oo]`, a `torch.cat` size mismatch) that does not
    say the mode is the cause. The static OLX201 warns that the model is in training mode;
    this finding says that it is why the export fails.

    ## Example
    ```python
    model = Yolov4(n_classes=80, inference=True)
    model.load_state_dict(torch.load(weights))
    torch.onnx.export(model, x, "yolov4.onnx")  # fails at step 1/3 in the head
    ```

    ## Use instead
    ```python
    model = Yolov4(n_classes=80, inference=True)
    model.load_state_dict(torch.load(weights))
    model.eval()
    torch.onnx.export(model, x, "yolov4.onnx")
    ```

    ## Fix safety
    No fix of its own: the static OLX201's fix inserts the `.eval()` call
    (`--fix --unsafe-fixes`).

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    - https://docs.pytorch.org/docs/stable/export.html
    """

    code = "OLX828"
    name = "export-fails-in-training-mode"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
