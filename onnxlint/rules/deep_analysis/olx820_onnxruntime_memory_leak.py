"""OLX820: ONNX Runtime memory that grows on a second pass over the same sizes (deep)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxruntimeMemoryLeak(Rule):
    """
    ## What it does
    With `verify = true` (or `--verify`), runs the exported model (real random weights) with
    ONNX Runtime over a sweep of sizes of every dynamic dim (8 sizes across the declared range,
    or from half the example size up to 8 times it), then over the same sizes again, in a
    fresh process for each of two `SessionOptions` sets (the defaults, and
    `enable_mem_pattern=False, enable_cpu_mem_arena=False`), recording the process's resident
    memory after every run. Reports, at the export call, memory that still grows on the second
    pass (above 16 MB and 5% of the first pass's growth), with the figures.

    ## Why is this bad?
    ONNX Runtime's CPU arena grows to the largest input size run and keeps that memory, so a
    healthy session is flat when the same sizes come again. Memory that keeps growing is never
    given back: a server running the model with varying input sizes eventually runs out.

    ## Example
    ```python
    torch.onnx.export(model, (x,), "m.onnx", dynamic_shapes=({2: "h", 3: "w"},))
    # a model with an op whose kernel keeps a buffer per input shape
    ```

    ## Use instead
    Find the op (run the model in a loop over the sizes, with ONNX Runtime's profiling),
    replace it in the model, or report it to ONNX Runtime with the model.

    ## Fix safety
    No fix.

    ## References
    - https://onnxruntime.ai/docs/api/python/api_summary.html#sessionoptions
    - https://onnxruntime.ai/docs/performance/tune-performance/memory.html
    """

    code = "OLX820"
    name = "onnxruntime-memory-leak"
    severity = Severity.ERROR
    since = "0.3.0"
    from_deep_analysis = True
