"""OLX103: NumPy, `math` or `random` applied to a tensor, or `.numpy()`, in forward."""

from __future__ import annotations

import itertools
import re

import libcst as cst

from onnxlint.core.violation import Severity
from onnxlint.rules.base import Invalid, Rule, Valid, dedent
from onnxlint.rules.trace_hostile._common import kind_here, traced, under_export_guard
from onnxlint.semantic.kinds import Kind
from onnxlint.source.walker import dotted, iter_descendants

_MODULES = ("numpy.", "math.", "random.")
# Writing arrays to files: a function that does is a dump of values for debugging or for
# another tool (`np.savez(f"layer_{i}.npz", query=query.cpu().numpy())`), run when asked.
_DUMPS = frozenset({"numpy.save", "numpy.savez", "numpy.savez_compressed", "numpy.savetxt"})


# The option that selects a function's output type (`return_tensors="np"`, transformers).
_OPTION_NAMES = frozenset({"return_tensors", "tensor_type", "return_type", "output_type"})
_NUMPY_OPTIONS = frozenset({"np", "numpy"})
_TENSOR_OPTIONS = frozenset({"pt", "torch"})
# Host metadata of mmdet-style models (`img_metas`, `batch_input_metas`): dicts of Python
# values read from the data pipeline (`img_meta["delta_timestamp"]`), never tensors.
_METADATA = re.compile(r"(^|_)(img_)?metas?($|_)")


def _opens_for_writing(q: str | None, call: cst.Call) -> bool:
    """`open(path, "w")` (or "a", "wb", `mode="w"`)."""
    if q != "builtins.open":
        return False
    mode = next((a.value for a in call.args[1:2] if a.keyword is None), None)
    mode = next((a.value for a in call.args if a.keyword and a.keyword.value == "mode"), mode)
    return isinstance(mode, cst.SimpleString) and any(c in mode.value for c in "wa")


def _option_value(test: cst.BaseExpression) -> str | None:
    """ "np" for `return_tensors == "np"` (either side)."""
    if not isinstance(test, cst.Comparison) or len(test.comparisons) != 1:
        return None
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return None
    left, right = test.left, test.comparisons[0].comparator
    if isinstance(left, cst.SimpleString):
        left, right = right, left
    name = dotted(left) or ""
    if name.rsplit(".", 1)[-1] not in _OPTION_NAMES or not isinstance(right, cst.SimpleString):
        return None
    return right.value.strip("'\"")


def _metadata(expr: cst.BaseExpression) -> bool:
    """`img_meta["delta_timestamp"]`, `img_metas[0]["scale_factor"]`: a value of the
    host metadata (a string key of a `*meta*` name)."""
    if not isinstance(expr, cst.Subscript):
        return False
    keys = [e.slice for e in expr.slice if isinstance(e.slice, cst.Index)]
    if not any(isinstance(k.value, cst.SimpleString) for k in keys):
        return False
    inner: cst.BaseExpression = expr
    while isinstance(inner, cst.Subscript):
        inner = inner.value
    name = dotted(inner) or ""
    return bool(_METADATA.search(name.rsplit(".", 1)[-1]))


class NumpyOnTensor(Rule):
    """
    ## What it does
    Flags `t.numpy()` and calls into `numpy`, `math` or `random` with a tensor argument
    (`np.exp(x)`, `math.sqrt(x.sum())`) in code reachable from `forward`.

    ## Why is this bad?
    These leave PyTorch: the value is read out of the tensor. Under fake tensors (how
    `torch.export` and memory-light ONNX export run, and how `torch.compile` traces) this
    fails with `.numpy() is not supported for tensor subclasses`; under tracing the result
    is a constant of the example input. Scalars from shapes (`math.sqrt(x.size(-1))`) are
    fine and are not reported.

    ## Example
    ```python
    def forward(self, x):
        return torch.from_numpy(np.exp(x.numpy()))
    ```

    ## Use instead
    ```python
    def forward(self, x):
        return torch.exp(x)
    ```

    ## Fix safety
    No automatic fix: the torch equivalent is usually obvious but not always identical.

    ## References
    - https://github.com/pytorch/pytorch/issues/132559
    - https://docs.pytorch.org/docs/stable/export/programming_model.html
    """

    code = "OLX103"
    forward_only = True
    name = "numpy-on-tensor"
    severity = Severity.WARNING
    requires = ("numpy", "np.", "math", "random")

    VALID = [
        Valid(  # a dump of the layer's inputs to a file (a debugging aid, run when asked)
            dedent(
                """
                import numpy as np
                import torch
                class Layer(torch.nn.Module):
                    def dump(self, i: int, query: torch.Tensor):
                        np.savez(f"layer_{i}.npz", query=query.to("cpu").numpy())
                    def forward(self, query: torch.Tensor):
                        if self.dump_inputs:
                            self.dump(0, query)
                        return query * 2
                """
            )
        ),
        Valid(  # a helper that writes a tensor's values into a text file it opens
            dedent(
                """
                import torch
                def dump_tensor(name, x):
                    x_np = x.cpu().detach().numpy()
                    f = open(name, "w")
                    for v in x_np.flatten():
                        f.write(f"{v:.2f} ")
                    f.close()
                class Net(torch.nn.Module):
                    def forward(self, x):
                        if self.dump:
                            dump_tensor("x.txt", x)
                        return x * 2
                """
            )
        ),
        Valid(
            dedent(
                """
                import math
                import numpy as np
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        scale = math.sqrt(x.size(-1))
                        eps = np.finfo(np.float32).eps
                        return x / scale + eps
                """
            )
        ),
        Valid(  # outside forward: data preparation is fine
            dedent(
                """
                import numpy as np
                import torch
                def to_numpy(t: torch.Tensor):
                    return t.detach().cpu().numpy()
                """
            )
        ),
        Valid(  # a wrapper that hands NumPy to a predictor object: never traced itself
            dedent(
                """
                import torch
                class Wrapper(torch.nn.Module):
                    def forward(self, x):
                        image = x.cpu().numpy()[0]
                        out = self.predictor.predict_from_npy(image)
                        return torch.from_numpy(out)
                """
            )
        ),
        Valid(  # a runtime wrapper: its subclass hands NumPy to the same handle (End2EndModel)
            dedent(
                """
                import torch
                class End2EndModel(torch.nn.Module):
                    def __init__(self, backend_files):
                        super().__init__()
                        self.wrapper = build_wrapper(backend_files)
                    def forward(self, inputs):
                        outputs = self.wrapper({"input": inputs})
                        return self.pack(outputs)
                    def pack(self, outputs):
                        return [o.cpu().numpy() for o in outputs]
                class SDKEnd2EndModel(End2EndModel):
                    def forward(self, inputs):
                        image = inputs[0].contiguous().detach().cpu().numpy()
                        return self.wrapper.handle(image)
                """
            )
        ),
        Valid(  # a training forward: it returns the losses (MatchaTTS.forward)
            dedent(
                """
                import torch
                class TTS(torch.nn.Module):
                    def forward(self, x, x_lengths, y, y_lengths, spks=None):
                        offsets = y.shape[-1] - y_lengths.cpu().numpy()
                        dur_loss = (self.enc(x, x_lengths) - y).abs().mean()
                        prior_loss = self.prior(y, offsets)
                        return dur_loss, prior_loss
                """
            )
        ),
    ]
    INVALID = [
        Invalid(  # a layer that returns its output with an auxiliary loss stays model code
            dedent(
                """
                import numpy as np
                import torch
                class MoE(torch.nn.Module):
                    def forward(self, x):
                        out, aux_loss = self.experts(x)
                        return torch.from_numpy(np.exp(out.detach().numpy())), aux_loss
                """
            ),
            line=6,
            message="`.numpy()` leaves PyTorch",
        ),
        Invalid(  # NumPy handed to a helper object that is not a runtime call: still in forward
            dedent(
                """
                import torch
                class Captioner(torch.nn.Module):
                    def forward(self, x):
                        ids = self.head(x).argmax(-1)
                        return self.tokenizer.decode(ids.cpu().numpy())
                """
            ),
            line=5,
            message="`.numpy()` leaves PyTorch",
        ),
        Invalid(  # an unrelated class of the file feeds NumPy to its own `self.model`
            dedent(
                """
                import numpy as np
                import torch
                class Net(torch.nn.Module):
                    def forward(self, x):
                        y = self.model(x)
                        return torch.from_numpy(np.exp(y.detach().numpy()))
                class Predictor:
                    def __call__(self, image):
                        return self.model.predict(image.numpy())
                """
            ),
            line=6,
            message="`.numpy()` leaves PyTorch",
        ),
        Invalid(
            dedent(
                """
                import numpy as np
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        return torch.from_numpy(np.exp(x.detach().numpy()))
                """
            ),
            line=5,
            message="`.numpy()` leaves PyTorch",
            count=1,
        ),
        Invalid(
            dedent(
                """
                import math
                import torch
                class M(torch.nn.Module):
                    def forward(self, x):
                        y = x.mean()
                        y = math.exp(y)
                        return x * y
                """
            ),
            line=6,
            message="`math.exp` on a tensor",
        ),
    ]

    def _in_a_dump(self) -> bool:
        """The enclosing function writes arrays to files (`np.savez`, `np.save`, a file it
        opens to write: PointPillars' `dumpTensor(name, x)`), or the
        enclosing `if` block opens a file to write the values to (`if dump_feat:` ...
        `f = open("feat.txt", "w")`; a debugging dump, run when asked)."""
        func = self.ctx.function
        if func is None:
            return False
        memo = func.memo
        if "numpy-dump" not in memo:
            memo["numpy-dump"] = any(
                isinstance(n, cst.Call)
                and (
                    self.ctx.qualname(n.func) in _DUMPS
                    or _opens_for_writing(self.ctx.qualname(n.func), n)
                )
                for n in iter_descendants(func.node.body)
            )
        if memo["numpy-dump"]:
            return True
        block = next((a for a in reversed(self.ctx.ancestors) if isinstance(a, cst.If)), None)
        return block is not None and any(
            isinstance(n, cst.Call) and _opens_for_writing(self.ctx.qualname(n.func), n)
            for n in iter_descendants(block.body)
        )

    def _numpy_option(self) -> bool:
        """The call sits where a NumPy output was asked for: the body of `if return_tensors
        == "np":` or the `else` of `if return_tensors == "pt":` (an option of the function;
        an export takes the tensor path)."""
        chain = self.ctx.ancestors
        for a, child in itertools.pairwise(chain):
            if not isinstance(a, cst.If) or child is a.test:
                continue
            option = _option_value(a.test)
            if option in _NUMPY_OPTIONS and child is a.body:
                return True
            if option in _TENSOR_OPTIONS and child is a.orelse:
                return True
        return False

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "numpy" and not node.args:
            if self.ctx.kind(func.value) is not Kind.TENSOR or not self.ctx.in_forward:
                return
            what = "`.numpy()`"
        else:
            q = self.ctx.qualname(func)
            if q is None or not q.startswith(_MODULES) or not self.ctx.in_forward:
                return
            if not any(
                kind_here(self.ctx, a.value, node) is Kind.TENSOR and not _metadata(a.value)
                for a in node.args
            ):
                return
            what = f"`{q}` on a tensor"
        if under_export_guard(self.ctx, node) or self._in_a_dump() or self._numpy_option():
            return
        frozen = traced(self.ctx)
        self.report(
            node,
            f"{what} leaves PyTorch in forward: it fails under fake tensors "
            "(`torch.export`, `torch.compile`)"
            + (" and is frozen into a constant by tracing" if frozen else "")
            + "; use the `torch` equivalent",
        )
