"""Phase 6 (optional), verify: real random weights, torch.onnx.export, onnxruntime vs eager.

Runs on the example inputs and on two other sizes of every dynamic dim (dims
sharing a name change together). This is the only phase that allocates real
weights, so `DEFAULT_VERIFY_MAX_PARAMS` bounds it.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from typing import Any

import torch

from . import frames, ort_memory, wire
from .inputs import storage_id
from .real_build import build_real
from .record import Analysis, cause, finding, first_line, resize_inputs

ATOL = 1e-4
RTOL = 1e-3
DEFAULT_VERIFY_MAX_PARAMS = 50_000_000
"""Verification allocates real weights; above this many parameters it is skipped."""

BLOCKING = {
    wire.KIND_DATA_DEPENDENT,
    wire.KIND_EXPORT_FAILURE,
    wire.KIND_UNSUPPORTED_OP,
    wire.KIND_CUSTOM_OP_NO_FAKE,
    wire.KIND_CUSTOM_OP_NO_TRANSLATION,
    wire.KIND_TRANSLATION_FAILURE,
    wire.KIND_TARGET_ERROR,
}


def run(a: Analysis) -> None:
    summary = a.result.get("model", {})
    limit = int(a.target.get("verify_max_params") or DEFAULT_VERIFY_MAX_PARAMS)
    if summary.get("params", 0) > limit:
        a.result["skipped"]["verify"] = (
            f"skipped: {summary.get('params'):,} parameters is above the verification "
            f"limit of {limit:,} (real weights would be allocated)"
        )
        return
    if any(f["kind"] in BLOCKING for f in a.findings):
        a.result["skipped"]["verify"] = "skipped: the model does not export"
        return
    _verify(a)


def _real_build(a: Analysis) -> tuple[Any, ...] | str:
    """The model and its examples with real random weights (seed 0): the factory called
    again, or, for a script target, the script run again up to its export call with real
    tensors (its module cannot be imported: it is run as `__main__`). A string says why
    it could not be built."""
    torch.manual_seed(0)
    if not a.target.get("script"):
        mod_name, _, func_name = str(a.target["factory"]).partition(":")
        return tuple(getattr(importlib.import_module(mod_name), func_name)())
    real = build_real(a.target, a.progress, "verify")
    if isinstance(real, str):
        return real
    return real.model, real.args, real.kwargs


def _verify(a: Analysis) -> None:
    out = _real_build(a)
    if isinstance(out, str):
        a.result["skipped"]["verify"] = f"skipped: {out}"
        return
    model, args = out[0], out[1]
    if isinstance(args, torch.Tensor):
        args = (args,)
    args = tuple(args)
    kwargs = dict(out[2]) if len(out) > 2 and out[2] is not None else {}
    if isinstance(model, torch.nn.Module):
        model.eval()
    dims = a.requested_dims()
    cases: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = [("example inputs", args, kwargs)]
    names = sorted({d[2] for d in dims})
    for name in names:
        members = [d for d in dims if d[2] == name]
        flat0, dim0, _, _ = members[0]
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        n = int(leaves[flat0].shape[dim0])
        for size in (n + 1, n + 3):
            new_args, new_kwargs = resize_inputs(
                (args, kwargs), {(f, d): size for f, d, _, _ in members}, _random_like
            )
            cases.append((f"{name}={size}", new_args, new_kwargs))
    aliased = [f for f in a.findings if f["kind"] == wire.KIND_ALIASED_INPUTS]
    if aliased:
        # the case the aliasing hides: OLX822 says what goes wrong, this measures it
        cases.append((DISTINCT, *distinct_inputs((args, kwargs))))
    report: list[dict[str, Any]] = []
    a.result["verify"] = report
    try:
        export: Any = torch.onnx.export
        program = export(
            model,
            args,
            kwargs=kwargs or None,
            dynamic_shapes=a.dynamic_shapes,
            opset_version=a.opset,
            custom_translation_table=a.translation_table,
            dynamo=True,
            verbose=False,
        )
    except Exception as e:
        a.add(
            finding(
                wire.KIND_VERIFY_FAILURE,
                f"torch.onnx.export with real weights failed: {cause(e)}",
            )
        )
        return
    for label, c_args, c_kwargs in cases:
        entry: dict[str, Any] = {"case": label}
        report.append(entry)
        try:
            with torch.no_grad():
                expected = model(*c_args, **c_kwargs)
        except Exception as e:
            entry["status"] = f"eager failed at this size ({type(e).__name__}); not compared"
            continue
        try:
            got = program(*c_args, **c_kwargs)
        except Exception as e:
            entry["status"] = "onnxruntime failed"
            a.add(
                finding(
                    wire.KIND_VERIFY_FAILURE,
                    f"onnxruntime failed on {label}: {cause(e)}",
                )
            )
            continue
        exp_leaves = [
            t for t in torch.utils._pytree.tree_leaves(expected) if isinstance(t, torch.Tensor)
        ]
        got_leaves = [torch.as_tensor(t) for t in got]
        worst = (0.0, 0.0)
        bad = None
        if len(exp_leaves) != len(got_leaves):
            bad = f"{len(got_leaves)} ONNX outputs vs {len(exp_leaves)} eager outputs"
        for i, (e_t, g_t) in enumerate(zip(exp_leaves, got_leaves, strict=False)):
            if tuple(e_t.shape) != tuple(g_t.shape):
                bad = f"output {i} has shape {tuple(g_t.shape)}, eager {tuple(e_t.shape)}"
                break
            if not e_t.is_floating_point():
                if not torch.equal(e_t, g_t.to(e_t.dtype)):
                    bad = f"output {i} differs (integer output)"
                    break
                continue
            diff = (e_t.double() - g_t.double()).abs()
            max_abs = float(diff.max()) if diff.numel() else 0.0
            ref = float(e_t.double().abs().max()) if e_t.numel() else 0.0
            max_rel = max_abs / ref if ref > 0 else max_abs
            worst = (max(worst[0], max_abs), max(worst[1], max_rel))
            if max_abs > ATOL + RTOL * ref:
                bad = f"output {i}: max abs diff {max_abs:.3g}, max rel diff {max_rel:.3g}"
                break
        entry.update({"max_abs": worst[0], "max_rel": worst[1], "status": bad or "ok"})
        if bad and label == DISTINCT:
            for f in aliased:
                f["notes"].append(
                    f"Measured: with the aliased inputs made distinct, {bad} between "
                    "onnxruntime and eager PyTorch."
                )
            continue
        if bad:
            f = finding(
                wire.KIND_VERIFY_MISMATCH,
                f"onnxruntime and eager PyTorch disagree on {label}: {bad}",
                notes=[f"tolerance: abs {ATOL} + rel {RTOL} x max|eager|"],
            )
            try:
                first = first_differing_op(program, c_args, c_kwargs)
            except Exception as e:  # localising must never lose the finding
                first = None
                f["notes"].append(f"the differing op was not found: {type(e).__name__}: {e}")
            if first is not None:
                f["message"] = (
                    f"onnxruntime and eager PyTorch disagree on {label}: the first op whose "
                    f"output differs is {first['eager_op']} (ONNX {first['onnx_op']}): max abs "
                    f"diff {first['max_abs']:.3g}, max rel diff {first['max_rel']:.3g}"
                )
                f["notes"].insert(0, f"the model's output: {bad}")
                if first.get("why"):
                    f["message"] += f"; {first['why']}"
                    f["notes"].append(
                        "Where a row can be fully masked (padding), set its output yourself "
                        "(`torch.where(mask.any(-1, keepdim=True), out, 0)`) so that both "
                        "agree, or keep at least one position unmasked per row."
                    )
                f["op"] = first["eager_op"]
                a.place_at(f, first["stack"])
            a.add(f)
    try:
        _memory_sweep(a, program, args, kwargs)
    except Exception as e:  # the sweep must never cost the verification's findings
        a.result["skipped"]["onnxruntime_memory"] = f"{type(e).__name__}: {first_line(str(e))}"


_NUMPY_DTYPES = {
    torch.float32: "float32",
    torch.float64: "float64",
    torch.float16: "float16",
    torch.int64: "int64",
    torch.int32: "int32",
    torch.int8: "int8",
    torch.uint8: "uint8",
    torch.bool: "bool",
}


def _memory_sweep(a: Analysis, program: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    """ONNX Runtime's process memory over a sweep of every dynamic dim, twice, with the
    default session options and the lean ones (`ort_memory`); findings for a leak and for
    a high-water mark the lean options lower."""
    dims = a.requested_dims()
    if not dims:
        a.result["skipped"]["onnxruntime_memory"] = "no dynamic dims to sweep"
        return
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    tensors = [(i, t) for i, t in enumerate(leaves) if isinstance(t, torch.Tensor)]
    graph_inputs = list(program.model.graph.inputs)
    if len(graph_inputs) != len(tensors):
        a.result["skipped"]["onnxruntime_memory"] = (
            f"the ONNX model has {len(graph_inputs)} inputs for {len(tensors)} tensors"
        )
        return
    specs = []
    for _i, t in tensors:
        name = _NUMPY_DTYPES.get(t.dtype)
        if name is None:
            a.result["skipped"]["onnxruntime_memory"] = f"no NumPy dtype for {t.dtype}"
            return
        specs.append({"dtype": name})
    names = sorted({d[2] for d in dims})
    act = int((a.result.get("memory") or {}).get("activations_peak_bytes") or 0)
    ratio = 8.0
    if act > 0:
        ratio = min(ratio, (ort_memory.SWEEP_ACTIVATIONS / act) ** (1 / len(names)))
    ratio = max(ratio, 2.0)
    per_name: dict[str, list[int]] = {}
    for name in names:
        members = [d for d in dims if d[2] == name]
        flat0, dim0 = members[0][0], members[0][1]
        n = int(leaves[flat0].shape[dim0])
        lo = hi = None
        for f, d, _, _ in members:
            b_lo, b_hi = a.dim_bounds.get((f, d), (None, None))
            lo = b_lo if lo is None else max(lo, b_lo or lo)
            hi = b_hi if hi is None else min(hi, b_hi or hi)
        per_name[name] = ort_memory.sweep_sizes(n, lo, hi, max(round(n * ratio), n + 1))
    count = min(len(v) for v in per_name.values())
    steps: list[list[list[int]]] = []
    labels: list[str] = []
    for k in range(count):
        shapes = {i: list(t.shape) for i, t in tensors}
        chosen = {}
        for name, sizes in per_name.items():
            size = sizes[round(k * (len(sizes) - 1) / max(count - 1, 1))]
            chosen[name] = size
            for f, d, n2, _ in dims:
                if n2 == name and f in shapes:
                    shapes[f][d] = size
        steps.append([shapes[i] for i, _ in tensors])
        labels.append(", ".join(f"{n}={s}" for n, s in chosen.items()))
    with tempfile.TemporaryDirectory(prefix="onnxlint-ort-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        program.save(path)
        runs = {
            name: ort_memory.measure(path, specs, steps, name) for name in ort_memory.OPTION_SETS
        }
    verdict = ort_memory.judge(runs)
    sweep = {
        "sizes": labels,
        "options": ort_memory.OPTION_SETS,
        "runs": runs,
        "verdict": verdict,
    }
    a.result.setdefault("memory", {})["ort_sweep"] = sweep
    mb = 2**20
    for name, v in verdict.items():
        if not isinstance(v, dict) or not v.get("leak"):
            continue
        r = runs[name]
        opts = ", ".join(f"{k}={val}" for k, val in ort_memory.OPTION_SETS[name].items())
        a.add(
            finding(
                wire.KIND_ORT_MEMORY_LEAK,
                f"onnxruntime's memory keeps growing when the same sizes are run again: "
                f"+{v['second_pass_growth'] / mb:.0f} MB on the second pass over "
                f"{labels[0]} .. {labels[-1]} (high-water {max(r['pass1']) / mb:.0f} MB after "
                f"the first pass, {max(r['pass2']) / mb:.0f} MB after the second) with "
                f"{opts or 'the default SessionOptions'}",
                notes=[
                    "An arena keeps its high-water mark, so a healthy session is flat on "
                    "the second pass; growth there is memory that is never given back. "
                    "Run the exported model in a loop over these sizes to confirm, and "
                    "report it to ONNX Runtime with the model.",
                    "process memory (MB) after each run, first pass: "
                    + ", ".join(f"{x / mb:.0f}" for x in r["pass1"])
                    + "; second pass: "
                    + ", ".join(f"{x / mb:.0f}" for x in r["pass2"]),
                ],
            )
        )
    if verdict.get("lean_worth_it"):
        d, lean = verdict["default"], verdict["lean"]
        a.add(
            finding(
                wire.KIND_ORT_MEMORY_OPTIONS,
                f"onnxruntime's memory over {labels[0]} .. {labels[-1]} peaks at "
                f"{d['high_water'] / mb:.0f} MB with the default SessionOptions and at "
                f"{lean['high_water'] / mb:.0f} MB with enable_mem_pattern=False and "
                f"enable_cpu_mem_arena=False",
                notes=[
                    "With dynamic axes the CPU arena grows to the largest size run and "
                    "keeps that memory; the memory pattern plans per shape. Set "
                    "`so = onnxruntime.SessionOptions(); so.enable_mem_pattern = False; "
                    "so.enable_cpu_mem_arena = False` where the model is served if memory "
                    "matters more than a little speed.",
                    f"second pass over the same sizes: default "
                    f"+{d['second_pass_growth'] / mb:.0f} MB, lean "
                    f"+{lean['second_pass_growth'] / mb:.0f} MB",
                ],
            )
        )


def first_differing_op(program: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The first FX node (in program order) whose value onnxruntime computes differently
    from eager PyTorch: every ONNX value is named after the FX node it comes from and
    carries its source stack, so intermediate values are compared one by one."""
    ep = program.exported_program
    gm = ep.module()
    eager: dict[str, Any] = {}

    class Recorder(torch.fx.Interpreter):
        def run_node(self, n: Any) -> Any:
            out = super().run_node(n)
            if n.op == "call_function" and isinstance(out, torch.Tensor):
                eager[n.name] = (n, out.detach())
            return out

    recorder = Recorder(gm, garbage_collect_values=False)
    with torch.no_grad():
        recorder.run(*torch.utils._pytree.tree_leaves((args, kwargs)))
    producers: dict[str, Any] = {}
    for node in program.model.graph:
        for out in node.outputs:
            if out.name:
                producers[out.name] = node
    names = [n for n in eager if n in producers]
    if not names:
        return None
    got = program.compute_values(names, args, kwargs or None)
    for name, value in zip(names, got, strict=False):
        node, expected = eager[name]
        actual = torch.as_tensor(value)
        if tuple(actual.shape) != tuple(expected.shape):
            max_abs = max_rel = float("inf")
        elif expected.is_floating_point():
            diff = (expected.double() - actual.double()).abs()
            max_abs = float(diff.max()) if diff.numel() else 0.0
            ref = float(expected.double().abs().max()) if expected.numel() else 0.0
            if max_abs <= ATOL + RTOL * ref:
                continue
            max_rel = max_abs / ref if ref > 0 else max_abs
        else:
            if torch.equal(expected, actual.to(expected.dtype)):
                continue
            max_abs = max_rel = float((expected.double() - actual.double()).abs().max())
        return {
            "eager_op": str(node.target),
            "onnx_op": producers[name].op_type,
            "max_abs": max_abs,
            "max_rel": max_rel,
            "stack": frames.parse_stack_trace(node.meta.get("stack_trace")),
            "why": _masked_rows(node, recorder.env, expected, actual),
        }
    return None


def _masked_rows(node: Any, env: dict[Any, Any], expected: Any, actual: Any) -> str | None:
    """Why scaled_dot_product_attention differs, when it does because a row of its mask is
    fully masked: eager PyTorch (2.13: zeros) and the ONNX translation (softmax over an
    all-masked row: the mean of `value`, or NaN) define that row differently."""
    if "scaled_dot_product_attention" not in str(node.target):
        return None
    mask_arg = node.kwargs.get("attn_mask", node.args[3] if len(node.args) > 3 else None)
    mask = env.get(mask_arg) if isinstance(mask_arg, torch.fx.Node) else None
    if not isinstance(mask, torch.Tensor) or mask.dim() < 1:
        return None
    blocked = ~mask if mask.dtype == torch.bool else torch.isneginf(mask)
    full = blocked.all(dim=-1)
    rows = int(full.sum())
    if rows == 0:
        return None
    full = full.expand(expected.shape[:-1]) if full.dim() <= expected.dim() - 1 else full

    def looks(t: Any) -> str:
        vals = t[full]
        if bool(torch.isnan(vals).any()):
            return "NaN"
        if bool((vals == 0).all()):
            return "zeros"
        return "numbers (the softmax of an all-masked row is uniform: the mean of `value`)"

    try:
        eager, onnx = looks(expected), looks(actual)
    except Exception:  # a mask that does not broadcast to the output's rows
        eager, onnx = "one thing", "another"
    return (
        f"{rows} row(s) of the attention mask are fully masked: eager PyTorch gives {eager} "
        f"there, the ONNX model {onnx}"
    )


DISTINCT = "the aliased example inputs made distinct"


def distinct_inputs(tree: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(args, kwargs) with every repeat of a tensor (or of a view of one) replaced by a
    new random tensor of its shape."""
    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    seen: set[int] = set()
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            base = storage_id(leaf)
            if base in seen:
                leaf = _random_like(leaf, list(leaf.shape))
            seen.add(base)
        out.append(leaf)
    args, kwargs = torch.utils._pytree.tree_unflatten(out, spec)
    return tuple(args), dict(kwargs)


def _random_like(leaf: torch.Tensor, shape: list[int]) -> torch.Tensor:
    if leaf.is_floating_point():
        return torch.randn(shape, dtype=leaf.dtype)
    if leaf.dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    high = int(leaf.max()) + 1 if leaf.numel() else 2
    return torch.randint(0, max(high, 1), shape, dtype=leaf.dtype)
