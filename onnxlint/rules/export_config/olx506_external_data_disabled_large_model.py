"""OLX506: `external_data=False` on a model too large for one protobuf."""

from __future__ import annotations

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.core.violation import FixSafety, Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent, make_fix
from onnxlint.rules.export_config._size import (
    Estimate,
    class_estimate,
    config_estimate,
    name_estimate,
)
from onnxlint.rules.exporter_api.api_table import onnx_export_on_dynamo, single_value
from onnxlint.semantic.calls import ExportCall, literal_bool


def _human(n: int) -> str:
    if n >= 10**9:
        return f"{n / 10**9:.1f}B"
    return f"{n / 10**6:.0f}M"


class ExternalDataDisabledLargeModel(Rule):
    """
    ## What it does
    Flags `external_data=False` on a `torch.onnx.export` call (dynamo exporter) when the
    model is large: warning when this file shows it has at least `large-model-parameters`
    parameters (default 500M, about 2 GB in fp32); nothing when its size cannot be read here
    (every such finding judged on real repositories was a small model exported to one file on
    purpose: LightGlue-ONNX, edgeai-tensorlab).

    The size is a static lower bound from literals: a local model class's `nn.Linear` /
    `nn.Embedding` / `nn.ConvNd` / `nn.Parameter` sizes (with `range(N)` repetitions), an
    inline transformers-style config (`LlamaConfig(hidden_size=4096, ...)`), or a size in a
    checkpoint name (`from_pretrained("...-7b-hf")`). A model known to be small is quiet.

    ## Why is this bad?
    `external_data=False` asks for the weights inside the `.onnx` file, one protobuf, which
    cannot exceed 2 GB: saving a large model fails after the whole export has run. The
    default (`external_data=True`) writes the weights to a side file when needed.

    ## Example
    ```python
    model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf")
    torch.onnx.export(model, (ids,), "llama.onnx", external_data=False)
    ```

    ## Use instead
    ```python
    torch.onnx.export(model, (ids,), "llama.onnx")  # weights in llama.onnx.data
    ```

    ## Fix safety
    Unsafe: removing the keyword changes the files written (weights move to a side file
    for models above 2 GB), which code that ships a single `.onnx` file may not expect.

    ## References
    - `ONNXProgram.save(..., external_data=None)` (torch 2.13): automatic above 2 GB
    - https://github.com/pytorch/pytorch/issues/147259 ("larger than the 2GiB limit")
    """

    code = "OLX506"
    name = "external-data-disabled-large-model"
    severity = Severity.WARNING
    fix_safety = FixSafety.UNSAFE
    requires = ("external_data",)
    file_scope = True  # reads the model's class and where it was built

    VALID = [
        Valid(
            dedent(
                """
                import torch
                from torch import nn

                class Small(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(128, 10)

                    def forward(self, x):
                        return self.fc(x)

                torch.onnx.export(Small().eval(), (x,), "s.onnx", external_data=False)
                """
            )
        ),
        Valid("import torch\ntorch.onnx.export(m, (x,), 'm.onnx', external_data=True)\n"),
        # a size this file does not show: most who write it export small models on purpose
        Valid("import torch\ntorch.onnx.export(model, (x,), 'm.onnx', external_data=False)\n"),
    ]
    INVALID = [
        Invalid(
            dedent(
                """
                import torch
                from torch import nn

                HIDDEN = 4096

                class Layer(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.up = nn.Linear(HIDDEN, 11008)
                        self.down = nn.Linear(11008, HIDDEN)

                    def forward(self, x):
                        return self.down(self.up(x))

                class Big(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.layers = nn.ModuleList([Layer() for _ in range(32)])

                    def forward(self, x):
                        for layer in self.layers:
                            x = layer(x)
                        return x

                model = Big().eval()
                torch.onnx.export(model, (x,), "big.onnx", external_data=False)
                """
            ),
            line=26,
            message="2.9B parameters",
            severity=Severity.WARNING,
            fixed=None,
        ),
        Invalid(
            dedent(
                """
                import torch
                from transformers import AutoModelForCausalLM
                model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").eval()
                torch.onnx.export(model, (ids,), "llama.onnx", external_data=False)
                """
            ),
            line=4,
            message="7.0B",
            fixed=dedent(
                """
                import torch
                from transformers import AutoModelForCausalLM
                model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-2-7b-hf").eval()
                torch.onnx.export(model, (ids,), "llama.onnx")
                """
            ),
        ),
        Invalid(
            dedent(
                """
                import torch
                from transformers import LlamaConfig, LlamaForCausalLM
                config = LlamaConfig(hidden_size=4096, intermediate_size=11008,
                                     num_hidden_layers=32, vocab_size=32000)
                model = LlamaForCausalLM(config).eval()
                torch.onnx.export(model, (ids,), "llama.onnx", external_data=False)
                """
            ),
            line=6,
            message="LlamaConfig",
        ),
    ]

    def visit_Call(self, node: cst.Call) -> None:
        call = onnx_export_on_dynamo(self.ctx, node)
        if call is None:
            return
        arg = call.arg("external_data")
        if arg is None or literal_bool(arg.value) is not False:
            return
        est = self._estimate(call)
        limit = self.ctx.config.large_model_parameters
        fix = make_fix(
            "Remove `external_data=False`", self.ctx.remove_arg(node, arg), safety=FixSafety.UNSAFE
        )
        if est is not None and est.params >= limit:
            gb = est.params * 4 / 2**30
            self.report(
                arg,
                f"`external_data=False` on a model of about {_human(est.params)} parameters "
                f"(from {est.source}; ~{gb:.0f} GB in fp32): a single ONNX protobuf cannot "
                "exceed 2 GB, so saving fails; drop it to write the weights to a side file",
                fix=fix,
            )

    def _estimate(self, call: ExportCall) -> Estimate | None:
        ref = exported_model(self.ctx, call)
        if ref is None:
            return None
        model = self.ctx.semantic
        if ref.class_info is not None:
            return class_estimate(model, ref.class_info.name)
        values: list[cst.BaseExpression] = [
            a.value
            for a in ref.assignments
            if isinstance(a, (cst.Assign, cst.AnnAssign)) and a.value is not None
        ]
        if not values and isinstance(ref.expr, cst.Call):
            values = [ref.expr]
        for value in values:
            est = self._from_value(value)
            if est is not None:
                return est
        return None

    def _from_value(self, value: cst.BaseExpression) -> Estimate | None:
        # Unwrap `.eval()`, `.to(...)` and friends down to the constructing call.
        while (
            isinstance(value, cst.Call)
            and isinstance(value.func, cst.Attribute)
            and value.func.attr.value in ("eval", "train", "to", "cuda", "cpu", "half", "float")
        ):
            value = value.func.value
        if not isinstance(value, cst.Call):
            return None
        func = value.func
        if isinstance(func, cst.Attribute) and func.attr.value in ("from_pretrained",):
            for a in value.args:
                if isinstance(a.value, cst.SimpleString):
                    s = a.value.evaluated_value
                    if isinstance(s, str):
                        return name_estimate(s)
            return None
        for a in value.args:  # `LlamaForCausalLM(config)` / `from_config(config)`
            inner = single_value(self.ctx, a.value)
            if isinstance(inner, cst.Call):
                est = config_estimate(self.ctx.semantic, inner)
                if est is not None:
                    return est
        return None
