"""OLX819: running the model once needs more memory than the budget (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class RunMemoryOverBudget(Rule):
    """
    ## What it does
    Reports a target whose predicted peak of tensor memory, when the model runs forward once
    at the example inputs with real weights under `torch.no_grad()`, is above the memory
    budget: the target's `memory-budget` (e.g. `"16GB"`), or the memory of the machine that
    runs the analysis. The peak is measured on fake tensors (shapes, no data), op by op, so
    nothing is allocated; `onnxlint analyze --format json` gives it as
    `data.memory.run_peak_bytes` with the op and line at the peak.

    It is an error on an export call that runs the model (`torch.onnx.export(...,
    dynamo=False)`, `torch.jit.trace`, `torch.jit.script` then export) and a warning on the
    target otherwise.

    ## Why is this bad?
    Tracing and the TorchScript exporter run the model with real weights to record it, so they
    need that memory and fail (or swap the machine) when it is not there. The dynamo exporter
    (`torch.onnx.export(..., dynamo=True)`, the default since torch 2.9) can capture the model
    under fake tensors and needs a fraction of it: MONAI's HighResNet at batch 30 needs about
    3 GB to export with the TorchScript exporter and under 0.5 GB with the dynamo exporter.

    The figure counts tensors only: kernel scratch space and the allocator come on top, and
    the TorchScript exporter needs more again to copy the weights into the ONNX file, so the
    real need is higher (`bench/README.md` has measured ratios): the figure is a lower bound,
    so a run over the budget will not fit, and one a little under it may not either.

    ## Example
    ```python
    torch.onnx.export(model, (torch.randn(30, 1, 48, 48, 48),), "net.onnx", dynamo=False)
    ```

    ## Use instead
    ```python
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(allow_non_fake_inputs=True):
        model = HighResNet(...).eval()
        args = (torch.randn(30, 1, 48, 48, 48),)
        ep = torch.export.export(model, args)
    program = torch.onnx.export(ep, dynamo=True, optimize=False)
    program.apply_weights(torch.load("weights.pt"))
    program.save("net.onnx")
    ```
    or, with a budget that is not the machine's:
    ```toml
    [[tool.onnxlint.targets]]
    name = "net"
    factory = "pkg.models:make"
    memory-budget = "16GB"
    ```

    ## Fix safety
    No fix.

    ## References
    - https://docs.pytorch.org/docs/stable/onnx_export.html
    - https://docs.pytorch.org/docs/stable/torch.compiler_fake_tensor.html
    """

    code = "OLX819"
    name = "run-memory-over-budget"
    severity = Severity.WARNING
    since = "0.3.0"
    from_deep_analysis = True
