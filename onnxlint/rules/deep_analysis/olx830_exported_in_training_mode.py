"""OLX830: an export that succeeds with the model in training mode (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class ExportedInTrainingMode(Rule):
    """
    ## What it does
    Reports an export whose captured graph computes in training mode, once, at the model
    argument of the export call (or the factory's `return`): the BatchNorm layers that
    normalise with each batch's statistics and the dropouts that drop at random, counted
    from the graph torch.export really captures and only for modules in training mode (a
    BatchNorm without running statistics, which uses the batch's in eval mode too, is not
    counted). Not for a script's own `torch.export.export`, which a training flow
    (quantisation-aware training with PT2E) makes in training mode on purpose.

    ## Why is this bad?
    `torch.onnx.export` exports the model in the mode it is in, without a warning. In
    training mode the ONNX model's outputs depend on the rest of the batch and change from
    run to run; at batch size 1 BatchNorm normalises each image by itself. The export
    succeeds, and the model is silently wrong. The static OLX201 says the model may be in
    training mode at the export; this finding says that the graph computes so (and, where
    nothing in the graph depends on the mode, there is none).

    ## Example
    ```python
    model = build_model(cfg.model)
    model.load_state_dict(checkpoint["state_dict"])
    torch.onnx.export(model, x, "nanodet.onnx")
    ```

    ## Use instead
    ```python
    model = build_model(cfg.model)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    torch.onnx.export(model, x, "nanodet.onnx")
    ```

    ## Fix safety
    No fix of its own: the static OLX201's fix inserts the `.eval()` call
    (`--fix --unsafe-fixes`).

    ## References
    - https://docs.pytorch.org/docs/stable/generated/torch.nn.Module.html#torch.nn.Module.eval
    """

    code = "OLX830"
    name = "exported-in-training-mode"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
