"""OLX821: ONNX Runtime session options that lower the memory high-water mark (deep)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class OnnxruntimeMemoryOptions(Rule):
    """
    ## What it does
    With `verify = true` (or `--verify`), in the same sweep as OLX820, reports at the export
    call a process high-water mark with ONNX Runtime's default `SessionOptions` that
    `enable_mem_pattern=False` and `enable_cpu_mem_arena=False` lower by at least 32 MB and
    10%, with both figures.

    ## Why is this bad?
    With dynamic axes the CPU arena grows to the largest size run and keeps it, and the memory
    pattern is planned per shape: a process serving many sizes holds more memory than it
    needs. Turning both off costs a little speed and gives the memory back.

    ## Example
    ```python
    session = onnxruntime.InferenceSession("m.onnx")
    ```

    ## Use instead
    ```python
    so = onnxruntime.SessionOptions()
    so.enable_mem_pattern = False
    so.enable_cpu_mem_arena = False
    session = onnxruntime.InferenceSession("m.onnx", so)
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxruntime.ai/docs/api/python/api_summary.html#sessionoptions
    - https://onnxruntime.ai/docs/performance/tune-performance/memory.html
    """

    code = "OLX821"
    name = "onnxruntime-memory-options"
    severity = Severity.INFO
    since = "0.3.0"
    from_deep_analysis = True
