"""OLX826: `dynamic_axes` that the dynamo exporter gives to other inputs (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class DynamicAxesMoved(Rule):
    """
    ## What it does
    Reports an export call whose `dynamic_axes` the dynamo exporter (torch.onnx.export's
    default since torch 2.9) gives to other inputs than the ones they name, at the export
    call. The criterion: torch's own conversion of the call's `dynamic_axes` to
    `dynamic_shapes`, run on the call's arguments, puts an entry's axes on an input whose
    name in `input_names` is another.

    ## Why is this bad?
    The conversion does not match the axes to the inputs by name. It lists the
    `dynamic_axes` entries in the dict's order, then the other `input_names`, and gives them
    to the model's inputs by position. A dict written in another order than the inputs makes
    other dims dynamic than the ones asked for: the export fails where the model needs those
    dims static ("tracing inferred a static shape"), or succeeds with the wrong dims dynamic,
    and the ONNX model rejects the sizes it was meant to take.

    ## Example
    ```python
    # forward(self, image, points, labels)
    torch.onnx.export(
        model, (image, points, labels), "m.onnx",
        input_names=["image", "points", "labels"],
        dynamic_axes={"points": {1: "n"}, "labels": {1: "n"}},  # go to image and points
    )
    ```

    ## Use instead
    ```python
    n = torch.export.Dim("n")
    torch.onnx.export(
        model, (image, points, labels), "m.onnx",
        input_names=["image", "points", "labels"],
        dynamic_shapes={"points": {1: n}, "labels": {1: n}},
    )
    ```

    ## Fix safety
    No fix here; OLX304's fix rewrites `dynamic_axes` as `dynamic_shapes` keyed by the
    names of `forward`'s parameters.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    - https://github.com/pytorch/pytorch/issues/150940
    """

    code = "OLX826"
    name = "dynamic-axes-moved"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
