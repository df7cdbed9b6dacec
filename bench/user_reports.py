"""Real users' reports (2024-2026): does the deep analysis tell torch's story, at the line?

    nice python bench/user_reports.py [--only NAME,...] [--verify] [--json out.json]

Each entry of REPORTS is a small reproduction of one issue thread (pytorch/pytorch,
microsoft/onnxscript, microsoft/onnxruntime, huggingface/optimum, and a few from the
projects users filed them in), either a factory in bench/user_reports_models.py (the
target form: `(model, args, kwargs, dynamic_shapes)`) or, where the report is about the
export call itself, a script in bench/user_reports_scripts/. The lines where the
reported problem is carry a `# @tag` marker; each expected problem names its tags.

Ground truth, torch 2.13 run for real in a separate process per report (`--truth NAME`):

- `torch._dynamo.explain` with real tensors: break count, reasons, innermost user line;
- `torch.export.export(strict=False)` with the requested dynamic shapes (the
  "Constraints violated" that torch.onnx.export does not raise);
- `torch.onnx.export(..., dynamo=True)`: ok, or the step and line it fails at; a script
  is run whole (its export calls recorded), so a removed API fails where it really does;
- for an export that succeeds, onnxruntime against eager on the real weights: at the
  example inputs, with aliased example inputs made distinct, with each Python scalar
  argument changed, and at two other sizes of each dynamic dim (2x and +1); and the
  ONNX graph's input dims (static where a dynamic one was asked) and names.

Each expected problem counts only when torch's run confirms it (its `confirm` key); a
problem torch 2.13 no longer has is listed as "not on torch 2.13". Then onnxlint's deep
analysis runs on the same factory or script (the worker API, as `onnxlint analyze`), and
the report is *caught at the line* when every confirmed problem has a deep finding at one
of its lines (OLX801 for a graph break; any other OLX8xx but OLX816/OLX817 for the
rest). A deep finding that is neither at an expected line nor at a line torch itself
names (a break explain lists, the line an export fails at) is a false finding; OLX816
("could not go on") is counted apart as a stop. `onnxlint check` (static rules) is run on
the same files and its hits on the expected lines printed beside.

Prints one block per report and the summary: caught at the line N/M, same export outcome
as torch K/M, same graph breaks, false findings. `--json` writes everything, to compare
commits.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import inspect
import json
import os
import re
import runpy
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SCRIPTS = HERE / "user_reports_scripts"
MODELS = HERE / "user_reports_models.py"
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from zoo import _agrees  # noqa: E402  (the zoo's reading of an export outcome)

NOT_CATCHING = {"OLX801", "OLX816", "OLX817"}
TAG_RE = re.compile(r"#.*?@([A-Za-z0-9][\w-]*)")


@dataclass(frozen=True)
class Problem:
    """One reported problem: where it is (marker tags), what confirms it in torch's run."""

    kind: str  # break | export | removed | silent | dim | op | unanalysable
    tags: tuple[str, ...]
    confirm: str  # a key of CONFIRM
    what: str


@dataclass(frozen=True)
class Report:
    name: str
    url: str
    title: str
    date: str
    problems: tuple[Problem, ...]
    factory: str | None = None  # in user_reports_models
    script: str | None = None  # in user_reports_scripts
    opset: int | None = None
    note: str = ""


def P(kind: str, tags: str, confirm: str, what: str) -> Problem:
    return Problem(kind, tuple(tags.split()), confirm, what)


GH = "https://github.com/"
REPORTS = [
    # ---- data-dependent ops
    Report(
        "unique_tolist",
        GH + "pytorch/pytorch/issues/126685",
        "Dynamo fails to export data-dependent `Tensor.tolist`",
        "2024-05-20",
        (P("export", "unique-tolist", "export-fails", "unique().tolist(): data-dependent"),),
        factory="unique_tolist",
    ),
    Report(
        "where_single_arg",
        GH + "pytorch/pytorch/issues/140710",
        "torch.where(condition) resolves to torch.where(condition, input, other) during export",
        "2024-11-14",
        (
            P("break", "where-cond", "explain-break", "torch.where(cond): dynamic-shape break"),
            P("export", "where-cond", "export-fails", "torch.where(cond) with a dynamic batch"),
        ),
        factory="where_single_arg",
    ),
    Report(
        "bool_mask_assign",
        GH + "pytorch/pytorch/issues/126856",
        "TorchDynamo ONNX Export does not work as expected with masking (ScatterElements)",
        "2024-05-22",
        (P("silent", "mask-assign", "ort-fails", "x[mask] = 0: onnxruntime fails to run it"),),
        factory="bool_mask_assign",
    ),
    Report(
        "masked_scatter",
        GH + "pytorch/pytorch/issues/186146",
        "torch.onnx.export(dynamo=True) produces numerically wrong ONNX for masked_scatter",
        "2026-06-03",
        (P("silent", "masked-scatter", "example-mismatch", "masked_scatter: wrong numbers"),),
        factory="masked_scatter",
    ),
    Report(
        "moe_routing",
        GH + "huggingface/transformers/issues/38518",
        "Failed to export PyTorch traced graph of Mixtral-8x7B-Instruct-v0.1 due to the PR #32429",
        "2025-06-02",
        (
            P("break", "moe-hit", "explain-break", "nonzero(): dynamic-shape break"),
            P("export", "moe-loop moe-where moe-index", "export-fails", "loop over nonzero()"),
        ),
        factory="moe_routing",
        note="transformers' thread (not one of the four repositories); the block is the "
        "thread's code path in plain torch",
    ),
    Report(
        "nms_postprocess",
        GH + "pytorch/pytorch/issues/146152",
        "[torch.export] Cannot export TorchVision fasterrcnn_mobilenet_v3_large_fpn",
        "2025-01-31",
        (
            P("break", "nms-thresh", "explain-break", "boolean filtering: dynamic shape"),
            P("break", "nms-index", "explain-break", "indexing with a 0-d tensor in the loop"),
            P("export", "nms-numel nms-while", "export-fails", "data-dependent NMS loop"),
        ),
        factory="nms_postprocess",
        note="torchvision's postprocess_detections + batched NMS in plain torch",
    ),
    Report(
        "repeat_interleave_tensor",
        GH + "pytorch/pytorch/issues/156873",
        "Torch.onnx.export decomp error.",
        "2025-06-25",
        (P("op", "repeat-interleave", "export-fails", "aten.repeat_interleave.Tensor"),),
        factory="repeat_interleave_tensor",
    ),
    Report(
        "interpolate_size_tolist",
        GH + "pytorch/pytorch/issues/149826",
        "Cannot handle dynamic output size with torch.onnx.export (through dynamo)",
        "2025-03-23",
        (
            P("export", "interp-tolist", "export-fails", "size.tolist() as interpolate's size"),
            P("silent", "interp-tolist", "example-mismatch", "Resize differs from eager"),
        ),
        factory="interpolate_size_tolist",
    ),
    Report(
        "item_index_loop",
        GH + "pytorch/pytorch/issues/131911",
        "Guard failing with `.item()` indexing",
        "2024-07-26",
        (P("export", "item-idx item-index", "export-fails", "b[i].item() as an index"),),
        factory="item_index_loop",
    ),
    Report(
        "llama4_image_merge",
        GH + "pytorch/pytorch/issues/150891",
        "`torch.onnx.export` fails for Llama4 export",
        "2025-04-08",
        (
            P("break", "llama4-if", "explain-break", "if on a tensor: a graph break"),
            P("export", "llama4-if", "export-fails", "if on a count of image tokens"),
        ),
        factory="llama4_image_merge",
        note="transformers' Llama4 merge of image embeddings, in plain torch",
    ),
    Report(
        "scan_item_index",
        GH + "pytorch/pytorch/issues/153705",
        "Unable to export a model using scan with inplace modification",
        "2025-05-16",
        (P("export", "scan-item scan-index scan-call", "export-fails", "iv.item() as an index"),),
        factory="scan_item_index",
    ),
    Report(
        "item_select",
        GH + "pytorch/pytorch/issues/150057",
        "[export] Export fails with multiple dimension indexing",
        "2025-03-26",
        (P("export", "item-select", "export-fails", "y[0, b] with b = x.item()"),),
        factory="item_select",
    ),
    # ---- removed APIs
    Report(
        "yolox_private_export",
        GH + "Megvii-BaseDetection/YOLOX/issues/1907",
        "`tools/export_onnx.py` breaks on current PyTorch: `torch.onnx` has no attribute `_export`",
        "2026-08-29",
        (P("removed", "yolox-private-export", "script-fails", "torch.onnx._export"),),
        script="yolox_private_export.py",
        note="YOLOX's thread (torch 2.13.0 named in it)",
    ),
    Report(
        "dynamo_export_unique",
        GH + "pytorch/pytorch/issues/113118",
        "RuntimeError on `torch.unqiue_consecutive` with torch.compile( fullgraph = true)",
        "2024-05-10",
        (P("removed", "dynamo-export-unique", "script-fails", "torch.onnx.dynamo_export"),),
        script="dynamo_export_unique.py",
        note="the comment of 2024-05-10 (torch.unique through dynamo_export)",
    ),
    Report(
        "dynamo_export_docs",
        GH + "pytorch/pytorch/issues/140241",
        "[export] dynamo fails on Windows",
        "2024-11-11",
        (P("removed", "dynamo-export-docs", "script-fails", "torch.onnx.dynamo_export"),),
        script="dynamo_export_docs.py",
    ),
    Report(
        "multiply_opset17",
        GH + "pytorch/pytorch/issues/171417",
        "ONNX export fails with certain aliased operators",
        "2025-12-28",
        (P("op", "multiply", "export-fails", "aten::multiply at opset 17"),),
        script="multiply_opset17.py",
    ),
    # ---- silent wrong results
    Report(
        "alias_listadd",
        GH + "pytorch/pytorch/issues/139646",
        "Aliasing is not being prevented in onnx.export(dynamo=True) - potentially wrong graph",
        "2024-11-04",
        (
            P("silent", "listadd-args", "alias-mismatch", "one tensor for five inputs"),
            P("silent", "listadd-args listadd-bs", "scalar-mismatch", "float bs baked in"),
        ),
        factory="alias_listadd",
    ),
    Report(
        "alias_float_bias",
        GH + "pytorch/pytorch/issues/136179",
        "[ONNX] Inputs generated by onnx.export() with dynamo=False are not consistent with "
        "dynamo=True",
        "2024-09-17",
        (
            P("silent", "addfour-args", "alias-mismatch", "z = y in the example"),
            P("silent", "addfour-args addfour-bias", "scalar-mismatch", "float bias baked in"),
        ),
        factory="alias_float_bias",
    ),
    Report(
        "output_name_softmax",
        GH + "pytorch/pytorch/issues/158094",
        "Exporting ONNX Model with Operator Name as Output Name Produces Invalid Model When "
        "dynamo=True",
        "2025-07-11",
        (P("silent", "softmax-export softmax-names", "ort-refuses", "output named 'softmax'"),),
        script="output_name_softmax.py",
    ),
    Report(
        "initializer_name_mean",
        GH + "pytorch/pytorch/issues/168211",
        "PyTorch Dynamo ONNX Export: name conflict results in incorrect ONNX model",
        "2025-11-20",
        (P("silent", "mean-attr mean-export", "ort-wrong", "initializer 'mean' vs ReduceMean"),),
        script="initializer_name_mean.py",
    ),
    Report(
        "identity_io_names",
        GH + "pytorch/pytorch/issues/173076",
        "Dynamo ONNX export of trivial model produces incorrect input name",
        "2026-01-22",
        (P("silent", "identity-export identity-names", "io-names", "input named output_samples"),),
        script="identity_io_names.py",
    ),
    Report(
        "input_to_output",
        GH + "pytorch/pytorch/issues/167848",
        "[ONNX] Insert Identity node when input is directly copied to an output",
        "2025-11-14",
        (P("silent", "passthrough-return passthrough-export", "ort-wrong", "input is output"),),
        script="input_to_output.py",
    ),
    Report(
        "sdpa_masked_row",
        GH + "microsoft/onnxscript/pull/2479",
        "Make onnx export SDPA match aten behavior",
        "2025-08-06",
        (
            P("silent", "sdpa-nan", "example-mismatch", "fully masked row: eager vs ORT"),
            P("silent", "sdpa-qkv sdpa-args", "alias-mismatch", "query = key = value"),
        ),
        factory="sdpa_masked_row",
        note="also pytorch/pytorch#159973; the thread's example passes one tensor as query, "
        "key and value, a second (unreported) silent problem",
    ),
    Report(
        "resnet_dynamic_height",
        GH + "pytorch/pytorch/issues/124507",
        "torch.export of ResNet with dynamic height fails due to constraint violation",
        "2024-04-19",
        (
            P("dim", "resnet-add resnet-height", "constraint", "the height must be even"),
            P("silent", "resnet-add resnet-height", "size-mismatch", "wrong at other heights"),
        ),
        factory="resnet_dynamic_height",
        note="torchvision's resnet34 as a one-block-a-stage plain-torch ResNet",
    ),
    Report(
        "int_argument",
        GH + "pytorch/pytorch/pull/157734",
        "[ONNX] Support symbolic arguments in onnx exporter",
        "2025-07-07",
        (P("silent", "symint-args symint-add", "scalar-mismatch", "int argument baked in"),),
        factory="int_argument",
    ),
    # ---- dims pinned
    Report(
        "resnet_batch_one",
        GH + "pytorch/pytorch/issues/157621",
        "ResNet Onnx export dynamic batch size exported as fixed batch size",
        "2025-07-07",
        (P("dim", "resnet-batch1", "pinned", "batch-1 example pins the batch"),),
        factory="resnet_batch_one",
    ),
    Report(
        "view_size1",
        GH + "pytorch/pytorch/issues/126607",
        "[ONNX] export() with dynamic shapes fails where dynamo_export(dynamic_shapes=True) "
        "succeeds",
        "2024-05-18",
        (P("dim", "view-size1", "export-fails", "view(x.size(1), -1) with a dynamic batch"),),
        factory="view_size1",
    ),
    Report(
        "spectrogram_batch",
        GH + "pytorch/pytorch/issues/148687",
        "torch.onnx.export with torchaudio Spectrogram doesn't support dynamic batch size",
        "2025-03-06",
        (P("dim", "spec-stft spec-packed", "size-mismatch", "runs at the example batch only"),),
        factory="spectrogram_batch",
        note="torchaudio's Spectrogram + AmplitudeToDB code path in plain torch",
    ),
    Report(
        "interpolate_scale",
        GH + "pytorch/pytorch/issues/124884",
        "ONNX dynamic sized model export with torch.onnx.dynamo_export fails when "
        "torch.nn.functional.interpolate is used",
        "2024-04-24",
        (P("dim", "interp-scale", "size-mismatch", "interpolate with dynamic sizes"),),
        factory="interpolate_scale",
    ),
    # ---- SDPA decomposition
    Report(
        "sdpa_3d_embedding",
        GH + "pytorch/pytorch/issues/152018",
        "[ONNX] Exporting with `dynamo=True` and `Dim.DYNAMIC` in `dynamic_shapes` passes for "
        "`scaled_dot_product_attention`, but doesn't do anything",
        "2025-04-23",
        (P("op", "sdpa-3d-emb", "export-fails", "SDPA on 3-D inputs"),),
        factory="sdpa_3d_embedding",
    ),
    Report(
        "sdpa_3d_linear",
        GH + "pytorch/pytorch/issues/135615",
        "`torch.nn.functional.scaled_dot_product_attention` fails to export to onnx",
        "2024-09-10",
        (P("op", "sdpa-3d-lin", "export-fails", "SDPA on 3-D inputs"),),
        factory="sdpa_3d_linear",
    ),
    # ---- models that cannot be analysed
    Report(
        "quantized_eager",
        GH + "pytorch/pytorch/issues/137111",
        "[export] Fails to export a quantized model",
        "2024-10-01",
        (P("unanalysable", "quant-stub quant-linear", "export-fails", "eager int8 modules"),),
        factory="quantized_eager",
    ),
    Report(
        "fake_quantize",
        GH + "pytorch/pytorch/issues/167063",
        "`torch.onnx.export` with `dynamo` breaks `FakeQuantize` exporting",
        "2025-11-05",
        (P("unanalysable", "fq-module", "export-fails", "FakeQuantize"),),
        factory="fake_quantize",
    ),
    Report(
        "autograd_grad",
        GH + "pytorch/pytorch/issues/125984",
        "`torch.export` code that includes `torch.autograd.grad`",
        "2024-05-11",
        (
            P("break", "autograd-grad", "explain-break", "autograd.grad: a graph break"),
            P("unanalysable", "autograd-grad", "export-fails", "autograd.grad in forward"),
        ),
        factory="autograd_grad",
    ),
    # ---- ops without a translation
    Report(
        "istft_head",
        GH + "pytorch/pytorch/issues/138830",
        "ONNX Convert Error",
        "2024-10-25",
        (P("op", "istft-complex istft", "export-fails", "complex spectrogram and istft"),),
        factory="istft_head",
        note="vocos's ISTFT head",
    ),
    Report(
        "cumprod_export",
        GH + "pytorch/pytorch/issues/102948",
        "[onnx] aten::cumprod cannot be exported to ONNX",
        "2023-06-05",
        (P("op", "cumprod", "export-fails", "aten.cumprod: no real-valued translation"),),
        script="cumprod_export.py",
        note="the thread's script as written (torch 2.13 exports with dynamo=True by default)",
    ),
]
BY_NAME = {r.name: r for r in REPORTS}


# --------------------------------------------------------------------------- where things are


def source_of(r: Report) -> Path:
    return (SCRIPTS / r.script) if r.script else MODELS


def tag_lines(path: Path) -> dict[str, int]:
    out: dict[str, int] = {}
    for i, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        for m in TAG_RE.finditer(text):
            out[m.group(1)] = i
    return out


def problem_lines(r: Report, p: Problem) -> list[tuple[str, int]]:
    path = source_of(r)
    lines = tag_lines(path)
    missing = [t for t in p.tags if t not in lines]
    if missing:
        raise SystemExit(f"{r.name}: no marker for {missing} in {path}")
    return [(str(path), lines[t]) for t in p.tags]


def _where(stack: Any) -> tuple[str, int] | None:
    """The innermost user frame of a stack (not torch, not this harness)."""
    from onnxlint.deep.worker import frames

    me = str(Path(__file__).resolve())
    vis = [f for f in frames.visible(stack) if f["file"] != me]
    return (vis[-1]["file"], vis[-1]["line"]) if vis else None


ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _first(text: str, n: int = 240) -> str:
    lines = [ln for ln in ANSI.sub("", str(text)).splitlines() if ln.strip()]
    return (lines[0] if lines else "")[:n]


def _exc(e: BaseException) -> str:
    return f"{type(e).__name__}: {_first(str(e))}"


def _cause(e: BaseException) -> str:
    """The innermost cause of an exporter error (torch wraps the real one)."""
    while e.__cause__ is not None:
        e = e.__cause__
    return _exc(e)


# --------------------------------------------------------------------------- ground truth


def _explain(model: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    import torch

    out: dict[str, Any] = {}
    try:
        torch._dynamo.reset()
        ex = torch._dynamo.explain(model)(*args, **kwargs)
        out["graphs"] = ex.graph_count
        out["breaks"] = ex.graph_break_count
        out["reasons"] = []
        for r in ex.break_reasons:
            loc = _where(r.user_stack)
            out["reasons"].append(
                {
                    "what": _first(str(r.reason), 200),
                    "file": loc[0] if loc else None,
                    "line": loc[1] if loc else None,
                }
            )
    except Exception as e:
        out["error"] = _exc(e)
        loc = _where(_stack(e))
        out["error_at"] = list(loc) if loc else None
    finally:
        torch._dynamo.reset()
    return out


def _stack(e: BaseException) -> list[Any]:
    from onnxlint.deep.worker import frames

    return frames.exception_stack(e)


def _failure_line(e: BaseException) -> tuple[str, int] | None:
    from onnxlint.deep.worker import decompose, frames

    at = frames.raised_at(e)
    if at:
        return at["file"], at["line"]
    loc = _where(frames.exception_stack(e))
    if loc is None:
        loc = _where(decompose.failing_node_stack(None, e))
    return loc


def _onnx_export(model: Any, args: Any, kwargs: Any, ds: Any, opset: int | None) -> Any:
    import torch

    extra = {"opset_version": opset} if opset else {}
    return torch.onnx.export(
        model,
        tuple(args),
        kwargs=kwargs or None,
        dynamic_shapes=ds,
        dynamo=True,
        verbose=False,
        **extra,
    )


def _detach(obj: Any) -> Any:
    import torch

    return obj.detach() if isinstance(obj, torch.Tensor) else obj


def _tensor_leaves(obj: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [x for x in tree_flatten(obj)[0] if isinstance(x, torch.Tensor)]


def _feed(sess: Any, args: Any, kwargs: Any) -> dict[str, Any] | str:
    """The ONNX inputs from the arguments: the tensor leaves, in order; or, when the ONNX
    model takes more inputs, the tensors and the Python numbers (a symbolic int input)."""
    import numpy as np
    import torch
    from torch.utils._pytree import tree_flatten

    leaves = [x for x in tree_flatten((args, kwargs))[0] if x is not None]
    tensors = [x for x in leaves if isinstance(x, torch.Tensor)]
    inputs = sess.get_inputs()
    if len(inputs) == len(tensors):
        return {i.name: t.detach().cpu().numpy() for i, t in zip(inputs, tensors, strict=True)}
    values = [x for x in leaves if isinstance(x, (torch.Tensor, int, float, bool))]
    if len(inputs) == len(values):
        feed = {}
        for i, v in zip(inputs, values, strict=True):
            if isinstance(v, torch.Tensor):
                feed[i.name] = v.detach().cpu().numpy()
            else:
                kind = "int64" if "int64" in i.type else "float32"
                feed[i.name] = np.array(v, dtype=kind)
        return feed
    return f"the ONNX model takes {len(inputs)} inputs, the model {len(tensors)} tensors"


def _compare(sess: Any, model: Any, args: Any, kwargs: Any) -> dict[str, Any]:
    """onnxruntime against eager on these inputs."""
    import numpy as np
    import torch

    feed = _feed(sess, args, kwargs)
    if isinstance(feed, str):
        return {"status": "inputs differ", "detail": feed}
    try:
        with torch.no_grad():
            eager = model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
    except Exception as e:
        try:  # autograd in forward
            eager = model(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        except Exception:
            return {"status": "eager fails", "detail": _exc(e)}
    try:
        got = sess.run(None, feed)
    except Exception as e:
        return {"status": "ort fails", "detail": _exc(e)}
    want = [t.detach() for t in _tensor_leaves(eager)]
    if len(want) != len(got):
        return {"status": "mismatch", "detail": f"{len(got)} outputs, eager {len(want)}"}
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        w = w.to(torch.float64).numpy() if w.is_floating_point() else w.numpy()
        g = np.asarray(g)
        if tuple(w.shape) != tuple(g.shape):
            return {"status": "mismatch", "detail": f"output {i}: shape {g.shape}, eager {w.shape}"}
        if w.dtype.kind in "fc" or g.dtype.kind in "fc":
            wn, gn = np.isnan(w), np.isnan(g.astype(np.float64))
            if (wn != gn).any():
                where = "eager" if wn.sum() > gn.sum() else "onnxruntime"
                return {
                    "status": "mismatch",
                    "detail": f"output {i}: NaN in {where} only ({int(wn.sum())} in eager, "
                    f"{int(gn.sum())} in onnxruntime)",
                }
            ok = ~wn
            diff = np.abs(w[ok] - g.astype(np.float64)[ok])
            scale = float(np.abs(w[ok]).max()) if ok.any() else 0.0
            if diff.size and float(diff.max()) > 1e-4 + 1e-3 * scale:
                return {
                    "status": "mismatch",
                    "detail": f"output {i}: max |diff| {float(diff.max()):.3g} (max |eager| "
                    f"{scale:.3g})",
                }
        elif not np.array_equal(w, g):
            return {"status": "mismatch", "detail": f"output {i}: values differ"}
    return {"status": "match", "detail": ""}


def _dyn_groups(model: Any, args: Any, kwargs: Any, ds: Any) -> dict[str, list[tuple[int, int]]]:
    """Dynamic dims as {group name: [(tensor-leaf index, dim), ...]}; a named dim (string
    or Dim) is one group wherever it appears, an unnamed Dim.DYNAMIC/AUTO its own."""
    import torch

    if ds is None:
        return {}
    leaves = _tensor_leaves((args, kwargs))
    index = {id(t): i for i, t in reversed(list(enumerate(leaves)))}
    pairs: list[tuple[Any, Any]] = []
    if isinstance(ds, dict):
        try:
            bound = inspect.signature(model.forward).bind(*args, **kwargs).arguments
        except (TypeError, ValueError):
            bound = {}
        pairs = [(bound.get(k), v) for k, v in ds.items()]
    else:
        pairs = list(zip(list(args) + list((kwargs or {}).values()), ds, strict=False))
    groups: dict[str, list[tuple[int, int]]] = {}
    for value, spec in pairs:
        if not isinstance(value, torch.Tensor) or spec is None:
            continue
        items = spec.items() if isinstance(spec, dict) else enumerate(spec)
        for dim, d in items:
            if d is None or isinstance(d, int):
                continue
            name = d if isinstance(d, str) else getattr(d, "__name__", None)
            if not name or name in ("DYNAMIC", "AUTO", "STATIC"):
                name = f"arg{index[id(value)]}.dim{dim}"
            groups.setdefault(str(name), []).append((index[id(value)], int(dim)))
    return groups


def _resized(t: Any, dim: int, n: int) -> Any:
    import torch

    reps = -(-n // t.shape[dim])
    return torch.cat([t] * reps, dim=dim).narrow(dim, 0, n).contiguous()


def _replace_leaves(args: Any, kwargs: Any, new: dict[int, Any]) -> tuple[Any, Any]:
    """(args, kwargs) with the tensor leaves at these indices replaced."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_unflatten

    leaves, spec = tree_flatten((args, kwargs))
    k = 0
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            out.append(new.get(k, leaf))
            k += 1
        else:
            out.append(leaf)
    a, kw = tree_unflatten(out, spec)
    return a, kw


def _distinct(t: Any) -> Any:
    import torch

    g = torch.Generator().manual_seed(1)
    base = t.detach()
    if base.dtype == torch.bool:
        out = base ^ (torch.rand(base.shape, generator=g) < 0.3)
    elif base.is_floating_point():
        out = base + torch.randn(base.shape, generator=g, dtype=base.dtype)
    else:
        flipped = base.flip(-1) if base.dim() else base
        out = base + 1 if torch.equal(flipped, base) else flipped
    return out.requires_grad_(True) if t.requires_grad else out


def _session(program: Any) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.log_severity_level = 3
    return ort.InferenceSession(
        program.model_proto.SerializeToString(), so, providers=["CPUExecutionProvider"]
    )


def _same_outputs(a: list[Any], b: list[Any]) -> str:
    """'' when two runs' outputs agree (NaN where the other has NaN), else what differs."""
    import numpy as np

    if len(a) != len(b):
        return f"{len(a)} outputs against {len(b)}"
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        x, y = np.asarray(x), np.asarray(y)
        if x.shape != y.shape:
            return f"output {i}: shape {x.shape} against {y.shape}"
        if x.dtype.kind in "fc":
            if not np.allclose(x, y, rtol=1e-3, atol=1e-4, equal_nan=True):
                return f"output {i}: max |diff| {float(np.nanmax(np.abs(x - y))):.3g}"
        elif not np.array_equal(x, y):
            return f"output {i}: values differ"
    return ""


def _ort_checks(
    program: Any, model: Any, args: Any, kwargs: Any, ds: Any, reexport: Any = None
) -> dict[str, Any]:
    """onnxruntime against eager; `reexport(args, kwargs)` exports the model again (for the
    aliasing check: the ONNX model of the aliased example against one of distinct inputs)."""
    import onnxruntime as ort
    import torch
    from torch.utils._pytree import tree_flatten, tree_unflatten

    out: dict[str, Any] = {}
    proto = program.model_proto
    out["graph_inputs"] = [
        {
            "name": i.name,
            "shape": [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim],
        }
        for i in proto.graph.input
    ]
    out["graph_outputs"] = [o.name for o in proto.graph.output]
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 3
        sess = ort.InferenceSession(
            proto.SerializeToString(), so, providers=["CPUExecutionProvider"]
        )
    except Exception as e:
        out["session"] = f"refuses the file: {_exc(e)}"
        return out
    out["session"] = "ok"
    out["example"] = _compare(sess, model, args, kwargs)
    # one tensor object (or storage) passed for several inputs
    leaves = _tensor_leaves((args, kwargs))
    seen: dict[Any, int] = {}
    dup: dict[int, Any] = {}
    for i, t in enumerate(leaves):
        key = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape))
        if key in seen:
            dup[i] = _distinct(t)
        else:
            seen[key] = i
    base_ok = out["example"].get("status") == "match"
    if dup:
        a, kw = _replace_leaves(args, kwargs, dup)
        out["distinct"] = {"aliased": sorted(dup), **_compare(sess, model, a, kw)}
        if not base_ok:
            out["distinct"]["note"] = "the example inputs already differ"
        if reexport is not None:
            # what aliasing alone does: the same distinct inputs through the model exported
            # from the aliased example and through one exported from distinct inputs
            try:
                clean = _session(reexport(*copy.deepcopy((a, kw))))
                feed_a, feed_c = _feed(sess, a, kw), _feed(clean, a, kw)
                if isinstance(feed_a, str) or isinstance(feed_c, str):
                    diff = f"inputs differ: {feed_a if isinstance(feed_a, str) else feed_c}"
                else:
                    diff = _same_outputs(sess.run(None, feed_a), clean.run(None, feed_c))
                out["distinct"]["against_clean_export"] = diff or "same"
            except Exception as e:
                out["distinct"]["against_clean_export"] = f"not measured: {_exc(e)}"
    # other data, same shapes (what a model specialised on its example data gets wrong)
    other = {i: _distinct(t) for i, t in enumerate(leaves)}
    a, kw = _replace_leaves(args, kwargs, other)
    out["other_data"] = _compare(sess, model, a, kw)
    # Python scalars among the arguments
    flat, spec = tree_flatten((args, kwargs))
    changed = []
    for i, v in enumerate(flat):
        if isinstance(v, bool):
            flat[i] = not v
        elif isinstance(v, int):
            flat[i] = v + 1
        elif isinstance(v, float):
            flat[i] = v * 1.5 + 0.5
        else:
            continue
        changed.append(f"{v!r}->{flat[i]!r}")
    if changed:
        a, kw = tree_unflatten(flat, spec)
        out["scalars"] = {"changed": changed, **_compare(sess, model, a, kw)}
        if not base_ok:
            out["scalars"]["note"] = "the example inputs already differ"
    # other sizes of each dynamic dim
    sizes = {}
    for name, where in _dyn_groups(model, args, kwargs, ds).items():
        s = leaves[where[0][0]].shape[where[0][1]]
        for n in sorted({2 * s, s + 1}):
            new = {}
            for li, dim in where:
                base = new.get(li, leaves[li])
                new[li] = _resized(base, dim, n)
            a, kw = _replace_leaves(args, kwargs, new)
            sizes[f"{name}={n}"] = _compare(sess, model, a, kw)
        graph = out["graph_inputs"]
        shift = len(graph) - len(leaves)  # symbolic Python numbers come first
        pinned = [
            f"{graph[li + shift]['name']} dim {dim} = {graph[li + shift]['shape'][dim]}"
            for li, dim in where
            if shift >= 0
            and dim < len(graph[li + shift]["shape"])
            and isinstance(graph[li + shift]["shape"][dim], int)
        ]
        if pinned:
            out.setdefault("pinned", []).extend(f"{name}: {p}" for p in pinned)
    if sizes:
        out["sizes"] = sizes
    del torch
    return out


def _constraint(model: Any, args: Any, kwargs: Any, ds: Any) -> str:
    """torch.export.export(strict=False) with the dims as asked (named Dims stay)."""
    import torch

    from onnxlint.deep.worker import torch_internals

    try:
        torch.export.export(
            model,
            tuple(args),
            kwargs=kwargs or None,
            dynamic_shapes=torch_internals.to_export_dims(ds),
            strict=False,
        )
        return "ok"
    except Exception as e:
        return _exc(e)


def truth_factory(r: Report) -> dict[str, Any]:
    import torch
    import user_reports_models as m

    torch.manual_seed(0)
    model, args, kwargs, ds = m.FACTORIES[r.factory or ""]()
    kwargs = kwargs or {}
    pristine = copy.deepcopy((model, args, kwargs))

    def fresh() -> tuple[Any, Any, Any]:
        return copy.deepcopy(pristine)

    out: dict[str, Any] = {"explain": _explain(*fresh())}
    if ds is not None:
        out["torch_export"] = _constraint(*fresh(), ds)
    mdl, a, kw = fresh()
    try:
        program = _onnx_export(mdl, a, kw, ds, r.opset)
        out["onnx_export"] = "ok"
    except Exception as e:
        program = None
        out["onnx_export"] = _exc(e)
        out["onnx_export_cause"] = _cause(e)
        loc = _failure_line(e)
        out["onnx_export_at"] = list(loc) if loc else None
    if program is not None:
        try:
            pristine_model = fresh()[0]

            def reexport(a: Any, kw: Any) -> Any:
                return _onnx_export(copy.deepcopy(pristine_model), a, kw, ds, r.opset)

            out["ort"] = _ort_checks(program, *fresh(), ds, reexport)
        except Exception as e:
            out["ort"] = {"error": _exc(e)}
    return out


def truth_script(r: Report) -> dict[str, Any]:
    """Run the script whole, as its user did; record every torch.onnx.export it makes."""
    import torch

    path = SCRIPTS / (r.script or "")
    calls: list[dict[str, Any]] = []
    real = torch.onnx.export

    def recorder(model: Any, args: Any = (), f: Any = None, **kw: Any) -> Any:
        caller = _where(__import__("traceback").extract_stack()[:-1])
        call: dict[str, Any] = {"at": list(caller) if caller else None}
        calls.append(call)
        exported = model
        mod = model.module() if isinstance(model, torch.export.ExportedProgram) else model
        a = tuple(args) if isinstance(args, (tuple, list)) else (args,)
        call["_inputs"] = copy.deepcopy((mod, a, kw.get("kwargs") or {}))
        try:
            result = real(exported, args, f, **kw)
        except Exception as e:
            call["outcome"] = _exc(e)
            call["cause"] = _cause(e)
            loc = _failure_line(e)
            call["failed_at"] = list(loc) if loc else None
            raise
        call["outcome"] = "ok"
        call["_program"] = result
        call["names"] = {k: kw.get(k) for k in ("input_names", "output_names") if kw.get(k)}
        return result

    out: dict[str, Any] = {}
    cwd = os.getcwd()
    argv = sys.argv
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        sys.argv = [str(path)]
        torch.onnx.export = recorder  # type: ignore[assignment]
        try:
            with contextlib.redirect_stdout(sys.stderr):
                runpy.run_path(str(path), run_name="__main__")
            out["script"] = "ok"
        except SystemExit as e:
            out["script"] = f"exit {e.code}"
        except BaseException as e:
            out["script"] = _exc(e)
            loc = _where(_stack(e))
            out["script_at"] = list(loc) if loc else None
        finally:
            torch.onnx.export = real  # type: ignore[assignment]
            sys.argv = argv
            os.chdir(cwd)
    for call in calls:
        mod, a, kw = call.pop("_inputs")
        call["explain"] = _explain(*copy.deepcopy((mod, a, kw)))
        program = call.pop("_program", None)
        if program is not None:
            try:
                call["ort"] = _ort_checks(program, mod, a, kw, None)
            except Exception as e:
                call["ort"] = {"error": _exc(e)}
    out["calls"] = calls
    if calls:
        out["explain"] = calls[0]["explain"]
        out["onnx_export"] = calls[0]["outcome"]
        if calls[0].get("cause"):
            out["onnx_export_cause"] = calls[0]["cause"]
        if calls[0].get("failed_at"):
            out["onnx_export_at"] = calls[0]["failed_at"]
        if "ort" in calls[0]:
            out["ort"] = calls[0]["ort"]
    else:
        out["onnx_export"] = f"not reached: {out['script']}"
    return out


def truth(name: str) -> dict[str, Any]:
    r = BY_NAME[name]
    import warnings

    warnings.filterwarnings("ignore")
    t = time.perf_counter()
    out = truth_script(r) if r.script else truth_factory(r)
    out["truth_s"] = round(time.perf_counter() - t, 1)
    return out


# --------------------------------------------------------------------------- confirming


def _sizes_bad(ort: dict[str, Any]) -> list[str]:
    bad = []
    for k, v in (ort.get("sizes") or {}).items():
        if v.get("status") in ("mismatch", "ort fails", "inputs differ"):
            bad.append(f"{k}: {v['status']} ({v.get('detail', '')})")
    return bad


def confirm(r: Report, p: Problem, gt: dict[str, Any]) -> str | None:
    """What in torch's run shows this problem (None: torch 2.13 does not have it)."""
    ort = gt.get("ort") or {}
    c = p.confirm
    if c == "export-fails":
        e = gt.get("onnx_export", "")
        if e == "ok" or not e:
            return None
        step = re.search(r"step \d/3", e)
        cause = gt.get("onnx_export_cause") or e
        return f"torch.onnx.export fails{' at ' + step.group(0) if step else ''}: {cause}"
    if c == "script-fails":
        s = gt.get("script", "ok")
        at = gt.get("script_at")
        lines = {ln for _, ln in problem_lines(r, p)}
        if s != "ok" and at and at[1] in lines:
            return f"the script stops at line {at[1]}: {s}"
        return None
    if c == "explain-break":
        lines = {(Path(f).resolve(), ln) for f, ln in problem_lines(r, p)}
        for rr in (gt.get("explain") or {}).get("reasons") or []:
            if rr["file"] and (Path(rr["file"]).resolve(), rr["line"]) in lines:
                return f"explain: {rr['what']}"
        return None
    if c == "ort-refuses":
        s = ort.get("session", "")
        return s if s.startswith("refuses") else None
    if c == "ort-fails":
        ex = ort.get("example") or {}
        if ort.get("session", "").startswith("refuses"):
            return ort["session"]
        return f"{ex['status']}: {ex['detail']}" if ex.get("status") == "ort fails" else None
    if c in ("example-mismatch", "ort-wrong"):
        ex = ort.get("example") or {}
        if ort.get("session", "").startswith("refuses"):
            return ort["session"]
        if ex.get("status") in ("mismatch", "ort fails"):
            return f"at the example inputs: {ex['status']}: {ex.get('detail', '')}"
        return None
    if c == "alias-mismatch":
        d = ort.get("distinct") or {}
        clean = d.get("against_clean_export", "")
        if clean == "same":
            return None  # aliasing changes nothing (a mismatch has another cause)
        if clean and not clean.startswith("not measured"):
            return f"inputs made distinct: the aliased export differs from a clean one: {clean}"
        if d.get("status") in ("mismatch", "ort fails", "inputs differ"):
            return f"inputs made distinct: {d['status']}: {d.get('detail', '')}"
        return None
    if c == "scalar-mismatch":
        d = ort.get("scalars") or {}
        if d.get("status") in ("mismatch", "ort fails", "inputs differ"):
            return f"scalar {', '.join(d['changed'])}: {d['status']}: {d.get('detail', '')}"
        return None
    if c == "data-mismatch":
        d = ort.get("other_data") or {}
        if d.get("status") in ("mismatch", "ort fails"):
            return f"other input data, same shapes: {d['status']}: {d.get('detail', '')}"
        return None
    if c == "size-mismatch":
        bad = _sizes_bad(ort)
        return "; ".join(bad) if bad else None
    if c == "constraint":
        te = gt.get("torch_export", "ok")
        return f"torch.export.export: {te}" if "Constraints violated" in te else None
    if c == "pinned":
        return "; ".join(ort["pinned"]) if ort.get("pinned") else None
    if c == "io-names":
        for call in gt.get("calls") or []:
            names = call.get("names") or {}
            o = call.get("ort") or {}
            got_in = [i["name"] for i in o.get("graph_inputs") or []]
            got_out = o.get("graph_outputs") or []
            want_in = names.get("input_names") or []
            want_out = names.get("output_names") or []
            if (want_in and got_in[: len(want_in)] != want_in) or (
                want_out and got_out[: len(want_out)] != want_out
            ):
                return f"graph inputs {got_in}, outputs {got_out} (asked {want_in}, {want_out})"
        return None
    raise ValueError(c)


# --------------------------------------------------------------------------- onnlint


def ours(r: Report, analyzer: Any, verify: bool) -> dict[str, Any]:
    from onnxlint.deep.scripts import script_targets
    from onnxlint.deep.targets import Target

    if r.script:
        targets = script_targets(SCRIPTS / r.script, SCRIPTS)
    else:
        targets = [
            Target(
                name=r.name,
                factory=f"user_reports_models:{r.factory}",
                root=HERE,
                opset=r.opset,
                verify=verify,
                timeout=600.0,
            )
        ]
    out: dict[str, Any] = {"targets": []}
    for t in targets:
        if r.script and verify:
            t = Target(**{**t.__dict__, "verify": True})
        res = analyzer.analyze(t, use_cache=False)
        out["targets"].append(
            {
                "target": t.name,
                "status": res.outcome,
                "wall_s": round(res.wall, 1),
                "peak_mb": round((res.peak_rss or 0) / 2**20),
                "findings": [
                    {
                        **{k: v.to_json()[k] for k in ("code", "path", "line", "message")},
                        "severity": str(v.severity.value),
                        "notes": list(v.notes),
                    }
                    for v in res.violations
                ],
                "explain": (res.data or {}).get("explain"),
            }
        )
    first = out["targets"][0] if out["targets"] else {"status": "no target", "findings": []}
    out["status"] = first["status"]
    out["findings"] = [f for t in out["targets"] for f in t["findings"]]
    return out


def static_hits(paths: list[Path]) -> dict[tuple[str, int], list[str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "onnxlint", "check", "--no-cache", "--format", "json"]
        + [str(p) for p in paths],
        capture_output=True,
        text=True,
        cwd=HERE.parent,
    )
    hits: dict[tuple[str, int], list[str]] = {}
    try:
        for v in json.loads(proc.stdout or "[]"):
            key = (str((HERE.parent / v["path"]).resolve()), int(v["line"]))
            hits.setdefault(key, []).append(f"{v['code']} {_first(v['message'], 120)}")
    except json.JSONDecodeError:
        pass
    return hits


# --------------------------------------------------------------------------- scoring


@dataclass
class Row:
    name: str
    url: str
    problems: list[dict[str, Any]] = field(default_factory=list)
    caught: bool | None = None  # None: torch 2.13 confirms none of the problems
    same_outcome: bool = False
    same_breaks: bool = False
    cause: str = ""  # torch's own cause of a failure (the innermost exception)
    cause_kept: bool | None = None  # a deep finding says it
    torch_outcome: str = ""
    our_outcome: str = ""
    torch_breaks: list[str] = field(default_factory=list)
    our_breaks: list[str] = field(default_factory=list)
    false_findings: list[str] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)  # at the target's declaration
    stops: list[str] = field(default_factory=list)
    findings: list[str] = field(default_factory=list)
    truth: dict[str, Any] = field(default_factory=dict)
    ours: dict[str, Any] = field(default_factory=dict)


# What a finding must be to report a silent problem torch's run confirms this way (the
# verify codes report any of them once onnxruntime disagrees with PyTorch).
SILENT_CODES = {
    "alias-mismatch": {"OLX822", "OLX810", "OLX811"},
    "scalar-mismatch": {"OLX823", "OLX810", "OLX811"},
    "ort-refuses": {"OLX824", "OLX809", "OLX811"},
    "io-names": {"OLX824", "OLX810", "OLX811"},
    "ort-fails": {"OLX811", "OLX810"},
    "example-mismatch": {"OLX810", "OLX811"},
    "ort-wrong": {"OLX810", "OLX811", "OLX824"},
    "data-mismatch": {"OLX810", "OLX811"},
    "size-mismatch": {"OLX825", "OLX804", "OLX818", "OLX810", "OLX811"},
    "constraint": {"OLX825", "OLX804", "OLX818"},
    "pinned": {"OLX804", "OLX818", "OLX825"},
}
REMOVED_WORDS = ("removed", "does not exist", "no attribute", "attributeerror", "not exist")


def _says(p: Problem, f: dict[str, Any]) -> bool:
    """Whether a finding at the problem's line reports that problem: a graph break for a
    break; for the rest any deep finding but a break, a stop or onnxlint's own failure, and
    for a removed API one that says it is gone."""
    if p.kind == "break":
        return bool(f["code"] == "OLX801")
    if f["code"] in NOT_CATCHING or f["message"].startswith("onnxlint's"):
        return False
    if p.kind == "removed":
        return any(w in f["message"].lower() for w in REMOVED_WORDS)
    if p.confirm in SILENT_CODES:
        return f["code"] in SILENT_CODES[p.confirm]
    return True


def _cause_kept(cause: str, said: str) -> bool:
    """Whether what onnxlint said keeps torch's cause: one of the cause's sentences (its
    first 50 characters), or for a missing attribute, AttributeError and the name."""
    kind, _, text = cause.partition(": ")
    missing = re.search(r"has no attribute '([^']+)'", text)
    if kind == "AttributeError" and missing:
        return "AttributeError" in said and missing.group(1) in said
    parts = re.split(r"\. |Failure message: ", text)
    return any(_norm(p[:50]) in _norm(said) for p in parts if len(p.strip()) >= 20)


def _norm(text: str) -> str:
    return re.sub(r"[\s`'\"]+", " ", text).strip().lower()


def _key(path: str, line: int) -> tuple[str, int]:
    return (str(Path(path).resolve()), int(line))


def _break_count(message: str) -> int:
    m = re.search(r"\((\d+) breaks here\)", message)
    return int(m.group(1)) if m else 1


def score(r: Report, gt: dict[str, Any], us: dict[str, Any], static: Any) -> Row:
    row = Row(r.name, r.url, truth=gt, ours=us)
    findings = us.get("findings") or []
    row.findings = [
        f"{f['code']} {Path(f['path']).name}:{f['line']} {_first(f['message'], 300)}"
        for f in findings
    ]
    expected_keys: set[tuple[str, int]] = set()
    all_caught: list[bool] = []
    for p in r.problems:
        lines = problem_lines(r, p) if p.tags else []
        keys = {_key(f, ln) for f, ln in lines}
        how = confirm(r, p, gt)
        hits = [f for f in findings if _key(f["path"], f["line"]) in keys and _says(p, f)]
        caught = bool(hits) if how else None
        if how:
            all_caught.append(caught)
            expected_keys |= keys
        row.problems.append(
            {
                "kind": p.kind,
                "what": p.what,
                "lines": [f"{Path(f).name}:{ln}" for f, ln in lines],
                "torch": how or "not on torch 2.13",
                "caught": caught,
                "by": [f"{f['code']} {_first(f['message'], 160)}" for f in hits],
                "static": [s for k in keys for s in static.get(k, [])],
            }
        )
    row.caught = all(all_caught) if all_caught else None
    # export outcome
    te = gt.get("onnx_export", "")
    row.torch_outcome = (
        te
        if not gt.get("onnx_export_at")
        else (f"{te} (at {Path(gt['onnx_export_at'][0]).name}:{gt['onnx_export_at'][1]})")
    )
    cause = gt.get("onnx_export_cause") or (
        gt.get("script", "") if te.startswith("not reached") else ""
    )
    if cause:
        row.cause = cause
        said = " ".join(f["message"] + " " + " ".join(f.get("notes") or []) for f in findings)
        row.cause_kept = _cause_kept(cause, said)
        step = re.search(r"step \d/3", te)
        row.torch_outcome = (
            (f"fails at {step.group(0)}: " if step else "")
            + cause
            + (
                f" (at {Path(gt['onnx_export_at'][0]).name}:{gt['onnx_export_at'][1]})"
                if gt.get("onnx_export_at")
                else ""
            )
        )
    row.our_outcome = us.get("status", "")
    if "onnxlint error" in row.our_outcome:
        row.same_outcome = False  # a failure of onnxlint itself says nothing of torch's
    elif te.startswith("not reached"):
        row.same_outcome = row.our_outcome.startswith(("fails", "cannot"))
    else:
        row.same_outcome = _agrees(te, row.our_outcome)
    # graph breaks
    ex = gt.get("explain") or {}
    torch_breaks = [
        f"{Path(x['file']).name}:{x['line']}" for x in ex.get("reasons") or [] if x.get("file")
    ]
    row.torch_breaks = torch_breaks if "error" not in ex else [f"explain raised {ex['error']}"]
    our_breaks = []
    for f in findings:
        if f["code"] == "OLX801":
            our_breaks += [f"{Path(f['path']).name}:{f['line']}"] * _break_count(f["message"])
    row.our_breaks = our_breaks
    # explain raising (a higher-order op it cannot capture) is no break list to agree with
    row.same_breaks = "error" not in ex and sorted(torch_breaks) == sorted(our_breaks)
    # false findings: not at an expected line, not at a line torch names
    torch_keys = {_key(x["file"], x["line"]) for x in ex.get("reasons") or [] if x.get("file")}
    export_at = gt.get("onnx_export_at")
    export_key = _key(*export_at) if export_at else None
    for f in findings:
        k = _key(f["path"], f["line"])
        label = f"{f['code']} {Path(f['path']).name}:{f['line']} {_first(f['message'], 160)}"
        if f["code"] == "OLX817":
            continue
        if f["code"] == "OLX816":
            row.stops.append(label)
            continue
        if not f["path"].endswith(".py"):
            row.unplaced.append(label)
            continue
        if k in expected_keys:
            continue
        if f["code"] == "OLX801" and k in torch_keys:
            continue
        if f["code"] != "OLX801" and k == export_key:
            continue
        row.false_findings.append(label)
    return row


# --------------------------------------------------------------------------- main


def _print_row(r: Report, row: Row) -> None:
    mark = {True: "CAUGHT", False: "missed", None: "n/a"}[row.caught]
    print(f"\n== {r.name}  [{mark}]  {r.url}  ({r.date})", flush=True)
    print(f"   {r.title}")
    print(f"   export   torch: {row.torch_outcome}")
    if "script" in row.truth:
        at = row.truth.get("script_at")
        where = f" (at {Path(at[0]).name}:{at[1]})" if at else ""
        print(f"   script   torch: {row.truth['script']}{where}")
    if row.cause_kept is not None:
        print(f"            torch's cause in a deep message: {'yes' if row.cause_kept else 'NO'}")
    print(f"            ours:  {row.our_outcome}" + ("" if row.same_outcome else "   <- differs"))
    print(
        f"   breaks   torch: {len(row.torch_breaks)} {row.torch_breaks}   ours: "
        f"{len(row.our_breaks)} {row.our_breaks}" + ("" if row.same_breaks else "   <- differs")
    )
    for p in row.problems:
        flag = {True: "caught", False: "MISSED", None: "-"}[p["caught"]]
        print(f"   [{flag}] {p['kind']}: {p['what']} at {', '.join(p['lines']) or '(no line)'}")
        print(f"            torch 2.13: {p['torch']}")
        if p["by"]:
            print(f"            onnxlint: {p['by'][0]}")
        if p["static"]:
            print(f"            static:  {p['static'][0]}")
    for f in row.findings:
        print(f"   finding  {f}")
    for f in row.false_findings:
        print(f"   FALSE    {f}")
    for f in row.unplaced:
        print(f"   no line  {f}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--verify", action="store_true", help="run the deep analysis with verify")
    ap.add_argument(
        "--rescore", default="", help="score a --json file's runs again (no torch, no analysis)"
    )
    ap.add_argument("--truth", default="", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.truth:
        print(json.dumps(truth(ns.truth), default=str))
        return 0
    from onnxlint.deep.analyzer import DeepAnalyzer

    chosen = [r for r in REPORTS if not ns.only or r.name in ns.only.split(",")]
    static = static_hits([MODELS, *sorted(SCRIPTS.glob("*.py"))])
    rows = []
    t0 = time.perf_counter()
    if ns.rescore:
        old = {x["name"]: x for x in json.loads(Path(ns.rescore).read_text())["reports"]}
        for r in chosen:
            if r.name in old:
                rows.append(score(r, old[r.name]["truth"], old[r.name]["ours"], static))
                _print_row(r, rows[-1])
        chosen = []
    analyzer = DeepAnalyzer()
    if chosen:
        analyzer.start()
    try:
        for r in chosen:
            proc = subprocess.run(
                [sys.executable, __file__, "--truth", r.name],
                capture_output=True,
                text=True,
                timeout=1800,
            )
            try:
                gt = json.loads(proc.stdout.strip().splitlines()[-1])
            except (json.JSONDecodeError, IndexError):
                gt = {"error": proc.stderr[-800:], "onnx_export": ""}
            us = ours(r, analyzer, ns.verify)
            row = score(r, gt, us, static)
            rows.append(row)
            _print_row(r, row)
    finally:
        analyzer.shutdown()
    with_problem = [x for x in rows if x.caught is not None]
    caught = sum(1 for x in with_problem if x.caught)
    probs = [p for x in rows for p in x.problems if p["caught"] is not None]
    same = sum(1 for x in rows if x.same_outcome)
    breaks = sum(1 for x in rows if x.same_breaks)
    false = sum(len(x.false_findings) for x in rows)
    stops = sum(len(x.stops) for x in rows)
    unplaced = sum(len(x.unplaced) for x in rows)
    with_cause = [x for x in rows if x.cause_kept is not None]
    kept = sum(1 for x in with_cause if x.cause_kept)
    not_now = [f"{x.name}: {p['what']}" for x in rows for p in x.problems if p["caught"] is None]
    print(
        f"\n{len(rows)} reports ({len(with_problem)} with a problem torch 2.13 confirms): "
        f"caught at the line {caught}/{len(with_problem)} "
        f"(problems {sum(1 for p in probs if p['caught'])}/{len(probs)}); "
        f"same export outcome as torch {same}/{len(rows)}; same graph breaks {breaks}/"
        f"{len(rows)}; torch's cause kept {kept}/{len(with_cause)}; false findings {false}; "
        f"findings at no line {unplaced}; stops (OLX816) {stops}; "
        f"{'with' if ns.verify else 'without'} --verify; {time.perf_counter() - t0:.0f} s"
    )
    if not_now:
        print("not on torch 2.13: " + "; ".join(not_now))
    if ns.json:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=HERE
        ).stdout.strip()
        Path(ns.json).write_text(
            json.dumps(
                {
                    "commit": commit,
                    "date": time.strftime("%Y-%m-%d"),
                    "verify": ns.verify,
                    "summary": {
                        "reports": len(rows),
                        "with_problem": len(with_problem),
                        "caught": caught,
                        "problems": len(probs),
                        "problems_caught": sum(1 for p in probs if p["caught"]),
                        "same_outcome": same,
                        "same_breaks": breaks,
                        "false_findings": false,
                        "stops": stops,
                        "unplaced": unplaced,
                        "causes": len(with_cause),
                        "causes_kept": kept,
                    },
                    "reports": [{**asdict(x), "report": asdict(BY_NAME[x.name])} for x in rows],
                },
                indent=1,
                default=str,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
