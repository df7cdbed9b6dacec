"""Phase 6 (optional), verify: real random weights, torch.onnx.export, onnxruntime vs eager.

Runs on the example inputs and on two other sizes of every dynamic dim (dims
sharing a name change together). This is the only phase that allocates real
weights, so `DEFAULT_VERIFY_MAX_PARAMS` bounds it.
"""

from __future__ import annotations

import importlib
from typing import Any

import torch

from . import frames, wire
from .record import Analysis, finding, first_line, resize_inputs

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


def _verify(a: Analysis) -> None:
    mod_name, _, func_name = str(a.target["factory"]).partition(":")
    torch.manual_seed(0)
    out = getattr(importlib.import_module(mod_name), func_name)()
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
                f"torch.onnx.export with real weights failed: {type(e).__name__}: "
                f"{first_line(str(e))}",
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
                    f"onnxruntime failed on {label}: {type(e).__name__}: {first_line(str(e))}",
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
                f["op"] = first["eager_op"]
                a.place_at(f, first["stack"])
            a.add(f)


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

    with torch.no_grad():
        Recorder(gm).run(*torch.utils._pytree.tree_leaves((args, kwargs)))
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
        }
    return None


def _random_like(leaf: torch.Tensor, shape: list[int]) -> torch.Tensor:
    if leaf.is_floating_point():
        return torch.randn(shape, dtype=leaf.dtype)
    if leaf.dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    high = int(leaf.max()) + 1 if leaf.numel() else 2
    return torch.randint(0, max(high, 1), shape, dtype=leaf.dtype)
