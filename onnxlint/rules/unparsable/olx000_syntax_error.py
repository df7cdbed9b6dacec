"""OLX000: the file (or one top-level statement of it) cannot be parsed or read."""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid


class SyntaxError_(Rule):
    """
    ## What it does
    Reports a file, or a top-level statement of it, that cannot be parsed as Python, and
    files that cannot be read as source text (not UTF-8, NUL bytes, unreadable). A Jupyter
    notebook that is not valid JSON or not nbformat 4 gets one such line (at the JSON
    error's line); in a readable notebook, a cell that does not parse is reported in it.

    ## Why is this bad?
    Nothing in an unparsable statement can be checked. onnxlint still checks the rest of
    the file: each top-level statement is parsed on its own, so one typo does not hide
    every other finding while you type.

    ## Example
    ```python
    def forward(self, x)
        return x
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return x
    ```

    ## Fix safety
    No automatic fix.

    ## References
    - https://docs.python.org/3/reference/grammar.html
    """

    code = "OLX000"
    name = "unparsable-file"
    severity = Severity.ERROR

    VALID = [Valid("import torch\nx = torch.zeros(1)\n")]
    INVALID = [
        Invalid(
            "import torch\ndef forward(self, x)\n    return x\ny = 1\n",
            line=2,
            message="cannot parse",
        )
    ]
