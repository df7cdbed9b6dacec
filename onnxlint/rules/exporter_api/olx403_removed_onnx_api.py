"""OLX403: removed or deprecated `torch.onnx` names (imports and attribute uses)."""

from __future__ import annotations

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.exporter_api.api_table import (
    API_FACTS,
    ApiFact,
    Version,
    fmt_version,
    in_version_branch,
)
from onnxlint.semantic.calls import keyword_arg
from onnxlint.source.walker import dotted

_ONNXRT_REMOVED: Version = (2, 9)  # torch.compile(backend="onnxrt"), PR #158258


def _message(fact: ApiFact, what: str, severity: Severity) -> str:
    name = fact.qualname
    if severity is Severity.ERROR:
        assert fact.removed is not None
        text = f"`{name}` was removed in torch {fmt_version(fact.removed)} ({what})"
    else:
        when = f" (removed in torch {fmt_version(fact.removed)})" if fact.removed else ""
        text = f"`{name}` is deprecated{when}"
    if fact.replacement:
        text += f"; use {fact.replacement}"
    return text


class RemovedOnnxApi(Rule):
    """
    ## What it does
    Flags imports and uses of `torch.onnx` names that were removed or deprecated:
    `ExportOptions`, `enable_fake_mode`, `OnnxRegistry`, `DiagnosticOptions`,
    `ONNXRuntimeOptions`, `is_onnxrt_backend_supported`, the old `torch.onnx.verification`
    helpers (`find_mismatch`, `verify`, `VerificationOptions`, ...), the logging helpers,
    `ExportTypes`, `export_to_pretty_string`, `select_model_mode_for_export`, and
    `torch.compile(backend="onnxrt")`. Names are matched through the file's imports.

    Code inside an `if`/`else` that tests a torch version is left alone (written for
    another torch on purpose).

    ## Why is this bad?
    A removed name raises `AttributeError` (or `ImportError` for `from torch.onnx import X`)
    on the target torch, so the script stops before exporting anything. Rated for
    `target-torch`: error when removed there, info when deprecated but still present,
    nothing before it was deprecated. Calls of `torch.onnx.dynamo_export` are OLX402.

    ## Example
    ```python
    from torch.onnx.verification import find_mismatch
    options = torch.onnx.ExportOptions(dynamic_shapes=True)
    ```

    ## Use instead
    ```python
    from torch.onnx.verification import verify_onnx_program
    onnx_program = torch.onnx.export(model, (x,), dynamic_shapes=({0: "batch"},))
    ```

    ## Fix safety
    No fix: each replacement takes different arguments.

    ## References
    - field-and-peers.md section 3.3 (diffs of `torch/onnx/__init__.py` 2.4-2.13)
    - https://github.com/pytorch/pytorch/pull/158130, #149745, #161222, #161323, #158258
    """

    code = "OLX403"
    name = "removed-onnx-api"
    severity = Severity.ERROR
    deprecated_api = True
    # Aliased imports (`import torch.onnx as tox; tox.OnnxRegistry`) leave only the last
    # name in a block: look for those too (not "log": it is in every other word).
    requires = tuple(
        sorted(
            {"onnx", "Onnx", "ONNX", "onnxrt"} | {q.rsplit(".", 1)[1] for q in API_FACTS} - {"log"}
        )
    )

    VALID = [
        Valid("import torch\nprog = torch.onnx.export(model, (x,))\n"),
        Valid("from torch.onnx.verification import verify_onnx_program\n"),
        Valid("from torch.onnx import symbolic_opset12\n"),
        Valid("import torch\nc = torch.compile(model, backend='inductor')\n"),
        Valid("class ExportOptions: pass\nopts = ExportOptions()\n"),
        Valid("import torch\nopts = torch.onnx.ExportOptions()\n", config={"target-torch": "2.6"}),
        # A call of dynamo_export is OLX402's.
        Valid("import torch\nprog = torch.onnx.dynamo_export(model, x)\n"),
    ]
    INVALID = [
        Invalid(
            "import torch\nopts = torch.onnx.ExportOptions(dynamic_shapes=True)\n",
            line=2,
            message="removed in torch 2.9 (AttributeError)",
        ),
        Invalid(
            "from torch.onnx.verification import find_mismatch, verify_onnx_program\n",
            line=1,
            message="verify_onnx_program",
        ),
        Invalid(
            dedent(
                """
                from torch.onnx import enable_fake_mode as efm
                with efm():
                    pass
                """
            ),
            line=1,
            message="ImportError",
            count=1,
        ),
        Invalid(
            "import torch.onnx as tox\nreg = tox.OnnxRegistry()\n",
            line=2,
            message="removed in torch 2.8",
        ),
        Invalid(
            "import torch\nopts = torch.onnx.ExportOptions()\n",
            line=2,
            message="deprecated",
            severity=Severity.INFO,
            config={"target-torch": "2.7"},
        ),
        Invalid(
            "import torch\nwith torch.onnx.select_model_mode_for_export(m, mode):\n    pass\n",
            line=2,
            message="model.eval()",
            severity=Severity.INFO,
        ),
        Invalid(
            "import torch\nfast = torch.compile(model, backend='onnxrt')\n",
            line=2,
            message="onnxrt",
        ),
        Invalid(
            "import torch\nfn = torch.onnx.dynamo_export\n",
            line=2,
            message="dynamo_export",
        ),
    ]

    def _fact(self, qualname: str | None) -> tuple[ApiFact, Severity] | None:
        if qualname is None:
            return None
        fact = API_FACTS.get(qualname)
        if fact is None:
            return None
        severity = fact.severity(self.ctx.config.torch_version)
        return None if severity is None else (fact, severity)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        found = self._fact(self.ctx.qualname(node))
        if found is None or in_version_branch(self.ctx):
            return
        fact, severity = found
        parent = self.ctx.parent
        if (
            fact.qualname == "torch.onnx.dynamo_export"
            and isinstance(parent, cst.Call)
            and parent.func is node
        ):
            return  # OLX402
        self.report(node, _message(fact, "AttributeError", severity), severity=severity)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if node.relative or node.module is None or isinstance(node.names, cst.ImportStar):
            return
        if in_version_branch(self.ctx):
            return
        module = dotted(node.module)
        if module is None or not module.startswith("torch.onnx"):
            return
        found = self._fact(module)
        if found is not None:  # from torch.onnx.symbolic_caffe2 import ...
            fact, severity = found
            self.report(node.module, _message(fact, "ImportError", severity), severity=severity)
            return
        for alias in node.names:
            name = dotted(alias.name)
            found = self._fact(f"{module}.{name}")
            if found is not None:
                fact, severity = found
                self.report(alias.name, _message(fact, "ImportError", severity), severity=severity)

    def visit_Import(self, node: cst.Import) -> None:
        if in_version_branch(self.ctx):
            return
        for alias in node.names:
            found = self._fact(dotted(alias.name))
            if found is not None:
                fact, severity = found
                self.report(alias.name, _message(fact, "ImportError", severity), severity=severity)

    def visit_Call(self, node: cst.Call) -> None:
        if self.ctx.config.torch_version < _ONNXRT_REMOVED:
            return
        if self.ctx.qualname(node.func) != "torch.compile" or in_version_branch(self.ctx):
            return
        backend = keyword_arg(node, "backend")
        if (
            backend is not None
            and isinstance(backend.value, cst.SimpleString)
            and backend.value.evaluated_value == "onnxrt"
        ):
            self.report(
                backend,
                'torch.compile(backend="onnxrt") was removed in torch 2.9; export with '
                "`torch.onnx.export` and run the model with onnxruntime",
            )
