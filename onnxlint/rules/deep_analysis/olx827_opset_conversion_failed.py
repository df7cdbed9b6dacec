"""OLX827: the requested opset that torch.onnx.export silently does not write (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OpsetConversionFailed(Rule):
    """
    ## What it does
    Reports an export call whose `opset_version` the dynamo exporter cannot write for this
    model, at the `opset_version=` argument. The criterion: the analysis translates the
    model at the exporter's own opset and converts it to the requested one, as
    `torch.onnx.export` does, and the conversion fails or leaves another opset.

    ## Why is this bad?
    The dynamo exporter (torch.onnx.export's default since torch 2.9) implements opset 18
    and above. For a lower `opset_version` it exports at 18 and converts the model down with
    onnxscript's converter, then ONNX's C API. When both fail (a `Split`, `Reduce*` or
    `Resize` whose axes or sizes are computed, not constant, in opsets that want them as
    attributes), torch logs "The model was not modified" and writes the file at opset 18.
    The export "succeeds"; a runtime or tool that needs the requested opset (an older
    TensorRT, an NPU compiler) refuses the file later.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=16)  # written at opset 18
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (x,), "m.onnx", opset_version=18)
    ```
    or keep the TorchScript exporter for the old opset (`dynamo=False`, deprecated), or
    convert the file with `onnx.version_converter` after making the computed sizes constant.

    ## Fix safety
    No fix: which opset the consumer of the file needs is the user's choice.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    - https://github.com/onnx/onnx/blob/main/docs/VersionConverter.md
    """

    code = "OLX827"
    name = "opset-conversion-failed"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
