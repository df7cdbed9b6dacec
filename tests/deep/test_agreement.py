"""The deep analysis tells the same story as torch 2.13 run for real (issue 25).

Each test builds a small model of a kind users struggle with and compares the analysis with
torch itself, run in this process on real tensors: `torch._dynamo.explain`'s breaks,
`torch.onnx.export`'s outcome, and, for exports that succeed, onnxruntime against eager
where the exported model is silently wrong.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]
torch = pytest.importorskip("torch")
onnx = pytest.importorskip("onnx")


def _module(root: Path, name: str, source: str) -> Path:
    path = root / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    return path


def _analyze(analyzer: Any, root: Path, factory: str, **kw: Any) -> Any:
    target = Target(name=factory, factory=factory, root=root, **kw)
    return analyzer.analyze(target, use_cache=False)


def _factory(root: Path, spec: str) -> Any:
    """The same factory, imported here: torch's own answer on real tensors."""
    mod, _, fn = spec.partition(":")
    sys.path.insert(0, str(root))
    try:
        importlib.invalidate_caches()
        sys.modules.pop(mod, None)
        return getattr(importlib.import_module(mod), fn)()
    finally:
        sys.path.remove(str(root))


def _torch_breaks(root: Path, spec: str, file: Path) -> list[int]:
    """The lines of `file` where torch._dynamo.explain, on real tensors, breaks (each
    break at its innermost frame outside torch)."""
    model, args, kwargs, _ = _factory(root, spec)
    torch._dynamo.reset()
    try:
        out = torch._dynamo.explain(model)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    lines = []
    for reason in out.break_reasons:
        user = [f for f in reason.user_stack if "/torch/" not in f.filename]
        if user and Path(user[-1].filename) == file:
            lines.append(user[-1].lineno)
    return sorted(set(lines))


def _torch_program(model: Any, args: Any, kwargs: Any = None, ds: Any = None) -> Any:
    """torch.onnx.export of a factory's model for real (it raises where torch does)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.onnx.export(model, args, kwargs=kwargs, dynamic_shapes=ds, dynamo=True)


def _torch_exports(root: Path, spec: str) -> bool:
    try:
        _torch_program(*_factory(root, spec))
    except Exception:
        return False
    return True


def _at(res: Any, code: str) -> list[int]:
    return sorted(v.line for v in res.violations if v.code == code)


DETECT = """
import onnx
import torch

from logs import log_shape


class Detect(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(8, 5)

    def forward(self, x):
        p = self.head(x)
        log_shape(p)
        scores = p[..., 4].sigmoid()
        keep = scores > 0.5
        boxes = p[keep]
        idx = torch.nonzero(keep)
        order = scores[keep].argsort(descending=True)
        print("kept", boxes.shape)
        return boxes[order], idx


def make():
    return Detect().eval(), (torch.randn(2, 16, 8),), {}, None
"""


def test_the_break_search_goes_on_past_data_dependent_ops_as_torch_does(
    analyzer: Any, tmp_path: Path
) -> None:
    logs = _module(tmp_path, "logs", 'def log_shape(x):\n    print("shape", x.shape)\n')
    det = _module(tmp_path, "detect", DETECT)
    res = _analyze(analyzer, tmp_path, "detect:make")
    assert "OLX816" not in {v.code for v in res.violations}, res.violations
    ours = {(Path(v.path), v.line) for v in res.violations if v.code == "OLX801"}
    # the break before the data-dependent ops (in another file), the ones at them, and after
    assert (logs, 2) in ours
    assert sorted(line for f, line in ours if f == det) == _torch_breaks(
        tmp_path, "detect:make", det
    )
    assert line_of(det, 'print("kept"') in _at(res, "OLX801")
    assert res.outcome == "ok" and _torch_exports(tmp_path, "detect:make")


MOE = """
import torch


class MoE(torch.nn.Module):
    def __init__(self, n=4, d=8):
        super().__init__()
        self.gate = torch.nn.Linear(d, n)
        self.experts = torch.nn.ModuleList(torch.nn.Linear(d, d) for _ in range(n))

    def forward(self, x):
        w, idx = self.gate(x).topk(2, dim=-1)
        out = torch.zeros_like(x)
        for e, expert in enumerate(self.experts):
            tok, slot = torch.where(idx == e)
            if tok.numel() == 0:
                continue
            out[tok] += expert(x[tok]) * w[tok, slot, None]
        return out


def make():
    return MoE().eval(), (torch.randn(6, 8),), {}, None
"""


def test_moe_routing_fails_where_torch_fails_and_is_no_stop(analyzer: Any, tmp_path: Path) -> None:
    moe = _module(tmp_path, "moe", MOE)
    res = _analyze(analyzer, tmp_path, "moe:make")
    assert "OLX816" not in {v.code for v in res.violations}, res.violations
    assert _at(res, "OLX801") == _torch_breaks(tmp_path, "moe:make", moe)
    assert _at(res, "OLX802") == [line_of(moe, "if tok.numel() == 0")]
    assert res.outcome == "fails at step 1/3 (torch.export)"
    assert not _torch_exports(tmp_path, "moe:make")


NUMPY = """
import numpy as np
import torch


class M(torch.nn.Module):
    def forward(self, x):
        y = x * 2
        return torch.from_numpy(np.exp(y.numpy()))


def make():
    return M(), (torch.randn(2, 3),), {}, None
"""


def test_an_export_only_the_strict_fallback_captures_is_ok(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "usesnumpy", NUMPY)
    res = _analyze(analyzer, tmp_path, "usesnumpy:make")
    assert _torch_exports(tmp_path, "usesnumpy:make")
    assert res.outcome == "ok", res.violations
    [v] = res.violations
    assert (v.code, v.line, v.severity.value) == ("OLX803", line_of(mod, "y.numpy()"), "info")
    assert "fallback (strict torch.export) succeeds" in v.message


GRAD = """
import torch


class GradNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.l = torch.nn.Linear(3, 1)

    def forward(self, x):
        x = x.requires_grad_(True)
        y = self.l(x).sum()
        (g,) = torch.autograd.grad(y, x, create_graph=True)
        return g


def make():
    return GradNet(), (torch.randn(2, 3),), {}, None
"""


def test_autograd_in_forward_fails_as_torch_export_does(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "gradnet", GRAD)
    res = _analyze(analyzer, tmp_path, "gradnet:make")
    assert not _torch_exports(tmp_path, "gradnet:make")
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    [v] = [v for v in res.violations if v.code == "OLX803"]
    assert v.line == line_of(mod, "torch.autograd.grad")
    assert "fake tensor in the exported program constant" in v.message


INT8 = """
import torch


def make():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    q = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return q, (torch.randn(2, 8),), {}, None
"""


def test_an_eager_int8_model_gets_torchs_own_verdict(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "int8", INT8)
    res = _analyze(analyzer, tmp_path, "int8:make")
    assert not _torch_exports(tmp_path, "int8:make")
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    [v] = res.violations
    assert v.code == "OLX803" and v.line == line_of(mod, "quantize_dynamic")
    assert "__obj_flatten__" in v.message  # torch's own error
    assert any("quantize" in n for n in v.notes)
    assert res.data["built_with_real_tensors"]


STATIC_INT8 = """
import torch


class QuantM(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.linear = torch.nn.Linear(4, 8)
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x):
        x = self.quant(x)
        return self.dequant(self.linear(x))


def make():
    model = QuantM().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    prepared = torch.ao.quantization.prepare(model)
    x = torch.randn(1, 1, 4)
    prepared(x)
    return torch.ao.quantization.convert(prepared), (x,), {}, None
"""


def test_a_static_int8_model_is_reported_where_its_int8_part_starts(
    analyzer: Any, tmp_path: Path
) -> None:
    """pytorch#137111: torch.export fails on the packed weights before running the model's
    code (its error has no line); the finding is at the forward's first quantized call."""
    mod = _module(tmp_path, "static8", STATIC_INT8)
    res = _analyze(analyzer, tmp_path, "static8:make")
    assert not _torch_exports(tmp_path, "static8:make")
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    [v] = res.violations
    assert (v.code, v.line) == ("OLX803", line_of(mod, "x = self.quant(x)")), v


QAT = """
import torch


class QAT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fq = torch.ao.quantization.FakeQuantize()
        self.l = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.l(self.fq(x))


def make():
    return QAT().train(), (torch.randn(2, 4),), {}, None
"""


def test_fake_quantize_observers_say_what_to_do(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "qat", QAT)
    res = _analyze(analyzer, tmp_path, "qat:make")
    assert not _torch_exports(tmp_path, "qat:make")
    assert res.outcome == "fails at step 1/3 (torch.export)"
    # one finding for the one cause (nothing from the graph traced past the observer's `if`)
    [v] = res.violations
    assert v.code == "OLX802" and v.line == line_of(mod, "self.fq(x)")
    assert any("prepare_qat_pt2e" in n and "observers on or off" in n for n in v.notes)


BARE_FQ = """
import torch


def make():
    fq = torch.ao.quantization.FakeQuantize().eval()
    fq.disable_observer()
    return fq, (torch.zeros(1, 1),), {}, None
"""


def test_a_fake_quantize_model_with_its_observer_off_fails_where_it_is_built(
    analyzer: Any, tmp_path: Path
) -> None:
    """pytorch#167063: FakeQuantize itself as the model, observer off: torch.export still
    fails (its forward branches on the flag buffers); all of that code is torch's, so the
    finding is at the user's line that built the module (not the factory's `return`), and
    does not advise turning the observers off."""
    mod = _module(tmp_path, "barefq", BARE_FQ)
    res = _analyze(analyzer, tmp_path, "barefq:make")
    assert not _torch_exports(tmp_path, "barefq:make")
    assert res.outcome == "fails at step 1/3 (torch.export)"
    [v] = res.violations
    assert v.code == "OLX802" and v.line == line_of(mod, "FakeQuantize()"), v
    assert any("inside torch's own `FakeQuantize`" in n for n in v.notes), v.notes
    assert not any("disable_observer" in n for n in v.notes), v.notes


ALIASED = """
import torch


class Add(torch.nn.Module):
    def forward(self, a, b):
        return a * 2 + b


def make():
    x = torch.randn(2, 3)
    return Add(), (x, x), {}, None
"""


def test_aliased_example_inputs_are_reported_and_measured(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "aliased", ALIASED)
    res = _analyze(analyzer, tmp_path, "aliased:make", verify=True)
    [v] = res.violations
    assert (v.code, v.line) == ("OLX822", line_of(mod, "return Add()"))
    assert "`a`, `b`" in v.message
    assert any(n.startswith("Measured: with the aliased inputs made distinct") for n in v.notes)
    assert res.outcome != "ok"
    # torch's own export and onnxruntime, with the inputs made distinct: wrong numbers
    model, (x, _), _, _ = _factory(tmp_path, "aliased:make")
    program = torch.onnx.export(model, (x, x), dynamo=True)
    b = torch.randn(2, 3)
    assert not torch.allclose(torch.as_tensor(program(x, b)[0]), model(x, b), atol=1e-4)


SCALARS = """
import torch


class Scale(torch.nn.Module):
    def forward(self, x, scale: float, flip: bool = False):
        return -x * scale if flip else x * scale


def make():
    return Scale(), (torch.randn(2, 3), 0.5), {"flip": False}, None
"""


def test_python_scalar_example_inputs_are_baked_in(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "scalars", SCALARS)
    res = _analyze(analyzer, tmp_path, "scalars:make")
    found = {(v.code, v.line, v.severity.value, v.message.split(":")[0]) for v in res.violations}
    line = line_of(mod, "return Scale()")
    assert found == {
        ("OLX823", line, "warning", "the example input `scale` is a Python float (0.5)"),
        ("OLX823", line, "info", "the example input `flip` is a Python bool (False)"),
    }
    model, args, kwargs, _ = _factory(tmp_path, "scalars:make")
    program = torch.onnx.export(model, args, kwargs=kwargs, dynamo=True)
    assert len(program.model.graph.inputs) == 1  # the float is gone: baked in


INT_DECLARED_DYNAMIC = """
import torch
from torch.export import Dim


class AddInt(torch.nn.Module):
    def forward(self, a: int, x):
        return a + torch.tensor(1) + x


def make():
    return AddInt(), (1, torch.ones(2)), {}, (Dim.DYNAMIC, {0: Dim.DYNAMIC})
"""


def test_an_int_declared_dynamic_is_not_said_to_be_baked_in(analyzer: Any, tmp_path: Path) -> None:
    """pytorch#157734: torch 2.13 keeps an int with a dynamic_shapes entry as an input."""
    _module(tmp_path, "intdyn", INT_DECLARED_DYNAMIC)
    res = _analyze(analyzer, tmp_path, "intdyn:make")
    assert [v for v in res.violations if v.code == "OLX823"] == []
    model, args, kwargs, spec = _factory(tmp_path, "intdyn:make")
    program = torch.onnx.export(model, args, kwargs=kwargs, dynamic_shapes=spec, dynamo=True)
    assert [i.name for i in program.model.graph.inputs] == ["a", "x"]


MEAN_ATTRIBUTE = """
import torch


class X(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, 3, padding=1)
        self.mean = torch.Tensor([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1, 1)

    def forward(self, v):
        return torch.relu(self.conv(v - self.mean)).mean(dim=(2, 3, 4))


def make():
    return X().eval(), (torch.randn(1, 3, 4, 8, 8),), {}, None
"""


def test_a_name_torchs_optimizer_renames_is_not_a_checker_failure(
    analyzer: Any, tmp_path: Path
) -> None:
    """pytorch#168211: an attribute `self.mean` and the exporter's `mean` give one name
    twice before the optimizer; torch.onnx.export (optimize=True) renames it."""
    _module(tmp_path, "meanattr", MEAN_ATTRIBUTE)
    res = _analyze(analyzer, tmp_path, "meanattr:make")
    assert [v.message for v in res.violations if v.code == "OLX809"] == []
    model, args, _kwargs, _ = _factory(tmp_path, "meanattr:make")
    onnx.checker.check_model(torch.onnx.export(model, args, dynamo=True).model_proto, True)
    unoptimized = torch.onnx.export(model, args, dynamo=True, optimize=False).model_proto
    with pytest.raises(onnx.checker.ValidationError, match="'mean'"):
        onnx.checker.check_model(unoptimized, full_check=True)


CONSISTENCY_CHECK = """
import torch


class MergeImageTokens(torch.nn.Module):
    def forward(self, input_ids, embeds, vision):
        mask = (input_ids == 7).reshape(-1)
        n = mask.sum()
        if n != vision.size(0):
            raise ValueError(f"{n} image tokens, {vision.size(0)} embeddings")
        flat = embeds.view(-1, embeds.size(-1))
        flat = flat.masked_scatter(mask.unsqueeze(-1).expand(-1, flat.size(-1)), vision)
        return flat.view(embeds.shape)


def make():
    ids = torch.tensor([[1, 7, 7, 7, 7, 2, 3, 4, 5, 6]])
    return MergeImageTokens(), (ids, torch.randn(1, 10, 16), torch.randn(4, 16)), {}, None
"""


def test_a_consistency_check_the_placeholder_fails_is_decided_as_real_data_does(
    analyzer: Any, tmp_path: Path
) -> None:
    """pytorch#150891 (Llama4's image-token merge): on placeholder sizes the `if n !=
    vision.size(0)` took the `raise`, and the search stopped (OLX816); real data passes
    the check, and explain finds one break and two graphs."""
    mod = _module(tmp_path, "merge", CONSISTENCY_CHECK)
    res = _analyze(analyzer, tmp_path, "merge:make")
    assert not _at(res, "OLX816"), res.violations
    assert _at(res, "OLX801") == _torch_breaks(tmp_path, "merge:make", mod)
    assert res.data["explain"]["graphs"] == 2


TWO = """
import torch


class Two(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return y + 1, y * 2
"""

NAMES_SCRIPT = """
import torch

from two import Two

torch.onnx.export(
    Two().eval(), (torch.randn(2, 3),), "two.onnx", input_names=["x"], output_names=["relu", "add"]
)
"""


def test_output_names_that_clash_with_the_graphs_names(analyzer: Any, tmp_path: Path) -> None:
    import onnxruntime as ort

    from onnxlint.deep.scripts import script_target

    _module(tmp_path, "two", TWO)
    script = _module(tmp_path, "export_two", NAMES_SCRIPT)
    call = line_of(script, "torch.onnx.export(")
    res = analyzer.analyze(script_target(script, call, tmp_path, ()), use_cache=False)
    [v] = [v for v in res.violations if v.code == "OLX824"]
    assert v.line == call and "output_names[0] 'relu'" in v.message
    assert res.outcome.startswith("exports, but onnxruntime refuses")
    # torch writes the file, and onnxruntime refuses it
    two = _factory(tmp_path, "two:Two")
    program = torch.onnx.export(
        two, (torch.randn(2, 3),), input_names=["x"], output_names=["relu", "add"], dynamo=True
    )
    with pytest.raises(Exception, match="Duplicate definition"):
        ort.InferenceSession(program.model_proto.SerializeToString())


UNET = """
import torch


class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 4, 3, stride=2, padding=1)
        self.up = torch.nn.ConvTranspose2d(4, 3, 2, stride=2)

    def forward(self, x):
        y = self.up(self.down(x))
        return torch.cat([x, y], 1)


def make():
    return UNet().eval(), (torch.randn(1, 3, 16, 16),), {}, {"x": {2: "h", 3: "w"}}
"""


def test_a_dim_the_model_needs_even_is_said_with_its_relation(
    analyzer: Any, tmp_path: Path
) -> None:
    mod = _module(tmp_path, "unet", UNET)
    res = _analyze(analyzer, tmp_path, "unet:make")
    [v] = res.violations
    assert (v.code, v.line) == ("OLX825", line_of(mod, "torch.cat"))
    assert "'h' and 'w' work only for even sizes" in v.message and "2*Dim(...)" in v.message
    assert res.outcome == "exports, but only some sizes of a dynamic dim work"
    # torch.onnx.export accepts it, and the ONNX model fails at an odd size
    model, args, _, ds = _factory(tmp_path, "unet:make")
    program = torch.onnx.export(model, args, dynamic_shapes=ds, dynamo=True)
    with pytest.raises(Exception, match="Concat"):
        program(torch.randn(1, 3, 17, 17))


ATTN = """
import torch
import torch.nn.functional as F


class Attn(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def make():
    q, k, v = (torch.randn(1, 2, 4, 8) for _ in range(3))
    mask = torch.ones(1, 1, 4, 4, dtype=torch.bool)
    mask[..., 0, :] = False
    return Attn(), (q, k, v, mask), {}, None


class Attn3(torch.nn.Module):
    def forward(self, q, k, v):
        return F.scaled_dot_product_attention(q, k, v, scale=0.5, enable_gqa=True)


def make3():
    return Attn3(), tuple(torch.randn(2, 4, 8) for _ in range(3)), {}, None
"""


def test_attention_with_a_fully_masked_row_is_explained_at_the_op(
    analyzer: Any, tmp_path: Path
) -> None:
    mod = _module(tmp_path, "attn", ATTN)
    res = _analyze(analyzer, tmp_path, "attn:make", verify=True)
    [v] = res.violations
    assert (v.code, v.line) == ("OLX810", line_of(mod, "scaled_dot_product_attention(q, k, v, a"))
    assert "fully masked: eager PyTorch gives zeros there" in v.message


def test_a_translation_failure_keeps_torchs_own_reason(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "attn3", ATTN)
    res = _analyze(analyzer, tmp_path, "attn3:make3")
    [v] = res.violations
    assert (v.code, v.line) == ("OLX808", line_of(mod, "scale=0.5"))
    assert "only 4D query, key, and value are supported" in v.message


LOOP = """
import torch


class Loop(torch.nn.Module):
    def forward(self, x):
        idx = torch.nonzero(x > 0).flatten()
        n = 0
        while len(idx) > 0:
            idx = idx[idx > idx[0]]
            n += 1
        return x * n


def make():
    return Loop(), (torch.randn(8),), {}, None
"""


def test_a_loop_that_waits_on_the_data_ends(analyzer: Any, tmp_path: Path) -> None:
    mod = _module(tmp_path, "loop", LOOP)
    res = _analyze(analyzer, tmp_path, "loop:make", timeout=90.0)
    # the search and the export trace as if the data ran out after a while (NMS-style loops)
    assert res.status == "ok", res.detail
    assert res.outcome == "fails at step 1/3 (torch.export)"
    assert not _torch_exports(tmp_path, "loop:make")
    assert line_of(mod, "while len(idx) > 0") in _at(res, "OLX802") + _at(res, "OLX803")


NMS = """
import torch


def nms(boxes, scores, iou: float):
    if boxes.numel() == 0:
        return torch.empty((0,), dtype=torch.int64)
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        rest = order[1:]
        lt = torch.maximum(boxes[i, :2], boxes[rest, :2])
        rb = torch.minimum(boxes[i, 2:], boxes[rest, 2:])
        inter = (rb - lt).clamp(min=0).prod(dim=1)
        area = (boxes[:, 2:] - boxes[:, :2]).prod(dim=1)
        order = rest[inter / (area[i] + area[rest] - inter) <= iou]
    return torch.stack(keep)


class Post(torch.nn.Module):
    def forward(self, boxes, scores):
        inds = torch.where(scores > 0.05)[0]
        boxes, scores = boxes[inds], scores[inds]
        keep = nms(boxes, scores, 0.5)
        return boxes[keep], scores[keep]


def make():
    torch.manual_seed(0)
    xy = torch.rand(20, 2) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(20, 2) * 20], dim=1)
    return Post(), (boxes, torch.rand(20)), {}, None
"""


def test_nms_post_processing_breaks_where_torch_breaks(analyzer: Any, tmp_path: Path) -> None:
    """pytorch#146152: after the break at `torch.where`, the code runs eagerly with real
    sizes on real tensors, so `if boxes.numel() == 0:` and the loop's `while` are no
    breaks there; the loop's indexing with `order[0]` is (twice)."""
    mod = _module(tmp_path, "post", NMS)
    res = _analyze(analyzer, tmp_path, "post:make", timeout=120.0)
    torch_lines = _torch_breaks(tmp_path, "post:make", mod)
    assert _at(res, "OLX801") == torch_lines, res.violations
    model, args, kwargs, _ = _factory(tmp_path, "post:make")
    torch._dynamo.reset()
    try:
        out = torch._dynamo.explain(model)(*args, **kwargs)
    finally:
        torch._dynamo.reset()
    assert res.data["explain"]["breaks"] == out.graph_break_count
    assert res.data["explain"]["graphs"] == out.graph_count


DRY_RUN_NETS = """
import torch


class Head(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 6, 3, padding=1)

    def forward(self, x):
        y = self.conv(x).flatten(1)
        if not torch.onnx.is_in_onnx_export():
            keep = y[0] > 0  # post-processing outside the export: boolean indexing
            return y[:, keep]
        return y
"""

DRY_RUN_SCRIPT = """
import torch

from dry_nets import Head

model = Head().eval()
im = torch.randn(1, 3, 8, 8)
for _ in range(2):
    y = model(im)  # a dry run before the export, as YOLO exporters make
torch.onnx.export(model, (im,), "head.onnx", dynamo=True)
"""


def test_a_scripts_dry_run_with_data_dependent_sizes_is_no_stop(
    analyzer: Any, tmp_path: Path
) -> None:
    from onnxlint.deep.scripts import script_target

    _module(tmp_path, "dry_nets", DRY_RUN_NETS)
    script = _module(tmp_path, "export_head", DRY_RUN_SCRIPT)
    call = line_of(script, "torch.onnx.export(")
    res = analyzer.analyze(script_target(script, call, tmp_path, ()), use_cache=False)
    assert "OLX816" not in {v.code for v in res.violations}, res.violations
    assert res.outcome == "ok"


SCALE_TENSOR = """
import torch
import torch.nn.functional as F


class Resize(torch.nn.Module):
    def forward(self, x, ratio):
        y = x * 2
        return F.interpolate(y, scale_factor=ratio, mode="bilinear", align_corners=False)


def make():
    return Resize().eval(), (torch.randn(1, 3, 8, 8), torch.tensor([0.5])), {}, None
"""


def test_an_argument_of_the_wrong_kind_is_the_models_error_not_a_fake_tensor_limit(
    analyzer: Any, tmp_path: Path
) -> None:
    # `F.interpolate(scale_factor=<tensor>)` raises a TypeError that names the argument
    # types it got ("got (FakeTensor, NoneType, bool, list)"); real tensors fail the same
    # way (RobustVideoMatting's `_interpolate`), so it is no OLX816 "cannot run on fake
    # tensors": torch's own explain raises there too.
    mod = _module(tmp_path, "scale_tensor", SCALE_TENSOR)
    model, args, _, _ = _factory(tmp_path, "scale_tensor:make")
    with pytest.raises(TypeError):
        model(*args)
    res = _analyze(analyzer, tmp_path, "scale_tensor:make")
    assert not _torch_exports(tmp_path, "scale_tensor:make")
    assert _at(res, "OLX816") == [], res.violations
    assert _at(res, "OLX803") == [line_of(mod, "F.interpolate(")], res.violations


DATA_IN_HEAD = """
import torch


class Detect(torch.nn.Module):
    # yolov7's Detect head, reduced: the grid made in forward, `anchor_grid[i].data`
    def __init__(self):
        super().__init__()
        self.grid = [torch.zeros(1)] * 2
        self.register_buffer("anchor_grid", torch.ones(2, 1, 1, 1, 1, 2))
        self.stride = torch.tensor([8.0, 16.0])

    def forward(self, xs):
        z = []
        for i in range(2):
            bs, _, ny, nx, _ = xs[i].shape
            if self.grid[i].shape[2:4] != xs[i].shape[2:4]:
                yv, xv = torch.meshgrid([torch.arange(ny), torch.arange(nx)], indexing="ij")
                self.grid[i] = torch.stack((xv, yv), 2).view((1, 1, ny, nx, 2)).float()
            xy, wh = xs[i].sigmoid().split((2, 2), 4)
            xy = xy * (2.0 * self.stride[i]) + (self.stride[i] * (self.grid[i] - 0.5))
            wh = wh**2 * (4 * self.anchor_grid[i].data)
            z.append(torch.cat((xy, wh), 4).view(bs, -1, 4))
        return torch.cat(z, 1)


def make():
    return Detect().eval(), ([torch.randn(1, 1, 4, 4, 4), torch.randn(1, 1, 2, 2, 4)],), {}, None
"""


def test_a_crash_of_torch_itself_says_in_which_step(analyzer: Any, tmp_path: Path) -> None:
    # torch 2.13 dies with SIGSEGV in the ONNX decompositions of this head; the analysis
    # dies there too (in its own process) and says so, not only "the process was killed".
    import subprocess

    _module(tmp_path, "data_head", DATA_IN_HEAD)
    code = (
        "import warnings; warnings.simplefilter('ignore'); import torch, data_head\n"
        "m, a, _, _ = data_head.make()\n"
        "torch.onnx.export(m, a, dynamo=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode < 0 and "Run decompositions" in proc.stdout + proc.stderr
    res = _analyze(analyzer, tmp_path, "data_head:make")
    [v] = [v for v in res.violations if v.code == "OLX813"]
    assert "SIGSEGV in the ONNX decompositions (step 2/3" in v.message, v.message
    assert "torch.onnx.export runs the same step" in " ".join(v.notes)


ITEM_AS_SIZE = """
import torch


class ItemSize(torch.nn.Module):
    def forward(self, x):
        n = int(x.abs().max().ceil())
        return torch.zeros(n) + x.sum()


def make():
    return ItemSize().eval(), (torch.randn(4) * 3,), {}, None
"""


def test_a_value_used_as_a_size_exports_through_the_strict_fallback(
    analyzer: Any, tmp_path: Path
) -> None:
    # torch 2.13's non-strict capture fails on `int(tensor)` ("Could not guard on
    # data-dependent expression"), and torch.onnx.export's strict fallback captures it: the
    # file is written. The analysis traced on past the guard with an assumed value, never
    # tried the strict capture, and said "fails at step 1/3".
    mod = _module(tmp_path, "itemsize", ITEM_AS_SIZE)
    assert _torch_exports(tmp_path, "itemsize:make")
    res = _analyze(analyzer, tmp_path, "itemsize:make")
    assert res.outcome == "ok", res.violations
    guard = [v for v in res.violations if v.code == "OLX802"]
    assert guard and all(v.severity.value == "info" for v in guard), res.violations
    assert guard[0].line == line_of(mod, "n = int(")


END_TO_END_NMS = """
import random

import torch
import torch.nn as nn


class ORT_NMS(torch.autograd.Function):
    @staticmethod
    def forward(ctx, boxes, scores):
        num_det = random.randint(0, 10)  # a placeholder, as YOLOv6's end2end.py has it
        return torch.randint(0, boxes.shape[1], (num_det, 3))

    @staticmethod
    def symbolic(g, boxes, scores):
        return g.op("NonMaxSuppression", boxes, scores)


class End2End(nn.Module):
    def __init__(self, nms):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)
        self.nms = nms  # picked at run time: the static OLX410 cannot tell the class

    def forward(self, x):
        y = self.conv(x).flatten(2)
        boxes, scores = y[:, :4].transpose(1, 2), y[:, 4:]
        return self.nms.apply(boxes, scores)


def make():
    return End2End(ORT_NMS).eval(), (torch.randn(1, 3, 8, 8),), {}, None
"""


def test_an_autograd_function_whose_symbolic_the_dynamo_exporter_ignores(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOv6's deploy/ONNX/export_onnx.py --end2end --ort: torch 2.13 exports without an
    # error, and the file holds ORT_NMS.forward's random placeholder, no NonMaxSuppression.
    mod = _module(tmp_path, "e2e", END_TO_END_NMS)
    program = _torch_program(*_factory(tmp_path, "e2e:make"))
    ops = {n.op_type for n in program.model_proto.graph.node}
    assert "NonMaxSuppression" not in ops, ops
    res = _analyze(analyzer, tmp_path, "e2e:make")
    assert res.outcome == "exports, but an autograd Function's `symbolic` is ignored"
    (v,) = [v for v in res.violations if v.code == "OLX829"]
    assert v.line == line_of(mod, "return self.nms.apply("), v
    assert "`ORT_NMS.apply(...)`" in v.message, v.message


FUSED_OUTSIDE_NO_GRAD = """
import torch
import torch.nn as nn


def fuse(conv, bn):
    fused = nn.Conv2d(conv.in_channels, conv.out_channels, 1, bias=True).requires_grad_(False)
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    fused.weight.copy_(conv.weight * scale.view(-1, 1, 1, 1))  # not under torch.no_grad()
    fused.bias.copy_(bn.bias - bn.running_mean * scale)
    return fused


def make():
    model = fuse(nn.Conv2d(3, 8, 1, bias=False), nn.BatchNorm2d(8).eval())
    return model.eval(), (torch.randn(1, 3, 8, 8),), {}, None
"""


def test_parameters_that_are_not_leaves_are_named_when_the_decomposition_fails(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOv6's fuse_conv_and_bn copies into the fused weight outside torch.no_grad(): torch
    # 2.13 fails at step 2/3 ("Cannot assign non-leaf Tensor to parameter 'weight'"), which
    # names no parameter and no line.
    _module(tmp_path, "fused", FUSED_OUTSIDE_NO_GRAD)
    assert not _torch_exports(tmp_path, "fused:make")
    res = _analyze(analyzer, tmp_path, "fused:make")
    assert res.outcome == "fails at step 2/3 (ONNX decompositions)", res.violations
    (v,) = [v for v in res.violations if v.code == "OLX808"]
    notes = " ".join(v.notes)
    assert "2 of the model's parameters are not leaves (`weight`, `bias`" in notes, v.notes
    assert "torch.no_grad()" in notes


TRAINING_MODE = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, track=True, p=0.3):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8, track_running_stats=track)
        self.drop = nn.Dropout(p)

    def forward(self, x):
        return self.drop(self.bn(self.conv(x)))


def trained():
    model = Net()
    model.bn.running_mean.fill_(0.5)  # running statistics that are not the batch's
    return model, (torch.randn(2, 3, 8, 8),), {}, None


def evaluated():
    model, args, kw, ds = trained()
    return model.eval(), args, kw, ds


def no_running_stats():  # BatchNorm without running statistics, in eval: the batch's anyway
    return Net(track=False, p=0.0).eval(), (torch.randn(2, 3, 8, 8),), {}, None


def no_dropout_in_training():
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Dropout(0.0))
    return model, (torch.randn(2, 3, 8, 8),), {}, None


def batch_norm_in_training():  # torch 2.13 writes it with the running statistics
    model = Net(p=0.0)
    model.bn.running_mean.fill_(0.5)
    return model, (torch.randn(2, 3, 8, 8),), {}, None
"""


def test_an_export_in_training_mode_is_silently_wrong_where_the_graph_depends_on_it(
    analyzer: Any, tmp_path: Path
) -> None:
    # A model exported without .eval(): torch 2.13 writes its dropout as a Dropout that
    # drops in ONNX Runtime too, and its BatchNorm with the running statistics (measured
    # here: the BatchNorm-only model's file is the eval model's). The analysis said
    # "exports" with no word of it; the static OLX201 only says "may be".
    import numpy as np
    import onnxruntime as ort

    mod = _module(tmp_path, "modes", TRAINING_MODE)
    model, args, kwargs, ds = _factory(tmp_path, "modes:trained")
    program = _torch_program(model, args, kwargs, ds)
    session = ort.InferenceSession(program.model_proto.SerializeToString())
    (out,) = session.run(None, {session.get_inputs()[0].name: args[0].numpy()})
    with torch.no_grad():
        eager = model.eval()(*args).numpy()
    assert not np.allclose(out, eager, atol=1e-3)  # torch's file is not the eval model's
    res = _analyze(analyzer, tmp_path, "modes:trained")
    assert res.outcome == "exports, but in training mode", res.violations
    (v,) = [v for v in res.violations if v.code == "OLX830"]
    assert "1 dropout that drops at random" in v.message and "BatchNorm" not in v.message, v.message
    assert v.line == line_of(mod, "return model, (torch.randn"), v
    model, args, kwargs, ds = _factory(tmp_path, "modes:batch_norm_in_training")
    program = _torch_program(model, args, kwargs, ds)
    session = ort.InferenceSession(program.model_proto.SerializeToString())
    (out,) = session.run(None, {session.get_inputs()[0].name: args[0].numpy()})
    with torch.no_grad():
        eager = model.eval()(*args).numpy()
    assert np.allclose(out, eager, atol=1e-4)  # the file is the eval model's
    clean_ones = ("evaluated", "no_running_stats", "no_dropout_in_training")
    for clean in (*clean_ones, "batch_norm_in_training"):
        res = _analyze(analyzer, tmp_path, f"modes:{clean}")
        assert "OLX830" not in {v.code for v in res.violations}, (clean, res.violations)
