"""OLX830: an export that succeeds with the model in training mode (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class ExportedInTrainingMode(Rule):
    """
    ## What it does
    Reports an export whose file computes in training mode, once, at the model argument of
    the export call (or the factory's `return`): the dropouts that drop at random, counted
    from the graph torch.export really captures and only for modules in training mode (a
    dropout with `p=0` is not counted). BatchNorm is not counted: torch 2.13 writes it with
    its running statistics in either mode (onnxscript's torchlib sets `training = False`;
    measured: a Conv+BatchNorm model exported in training mode gives the eval model's ONNX
    Runtime outputs). Not for a script's own `torch.export.export`, which a training flow
    (quantisation-aware training with PT2E) makes in training mode on purpose.

    ## Why is this bad?
    `torch.onnx.export` exports the model in the mode it is in, without a warning. A
    dropout exported in training mode is a `Dropout` that drops in ONNX Runtime too: the
    outputs change from run to run. The export succeeds, and the model is silently wrong.
    The static OLX201 says the model may be in training mode at the export; this finding
    says that the file computes so (and, where nothing in the file depends on the mode,
    there is none).

    ## Example
    ```python
    model = build_model(cfg.model)  # a head with nn.Dropout(0.1)
    model.load_state_dict(checkpoint["state_dict"])
    torch.onnx.export(model, x, "model.onnx")
    ```

    ## Use instead
    ```python
    model = build_model(cfg.model)
    model.load_state_dict(checkpoint["state_dict"])
    model.eval()
    torch.onnx.export(model, x, "model.onnx")
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
