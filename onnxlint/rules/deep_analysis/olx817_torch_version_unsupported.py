"""OLX817: a torch version the analysis was not written for (deep analysis)."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Rule


class TorchVersionUnsupported(Rule):
    """
    ## What it does
    Reports that the worker's torch lacks an internal API a phase of the analysis needs, or is
    a version the analysis was not tested with. The phases that still work run; the others are
    skipped.

    ## Why is this bad?
    torch's exporter internals change every release; a silent partial analysis would look
    like a clean model.

    ## Example
    ```toml
    # the worker's interpreter has torch 2.6
    ```

    ## Use instead
    ```console
    pip install "onnxlint[deep]"   # torch==2.13.0
    ```

    ## Fix safety
    No fix.

    ## References
    - https://onnxlint.github.io/onnxlint/deep/
    """

    code = "OLX817"
    name = "torch-version-unsupported"
    severity = Severity.WARNING
    since = "0.1.0"
    from_deep_analysis = True
