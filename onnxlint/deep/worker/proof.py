"""The real-tensor half of a rewrite's proof: same outputs as the original, in eager mode
and under ONNX Runtime.

A deep fix is offered only once the worker has shown, on a copy of the code (the
parent's rewrite, served by `overlay`), that the finding it targets is gone (a normal
analysis of the rewritten code, run by the parent) and that the rewritten model computes
what the original computes. This module is that second part. It runs in a child of its
own, with real tensors, in one of two modes (`target["real_run"]["mode"]`):

- `reference` (once per target, on the original code): build the model with real random
  weights (seed 0), make the inputs to compare on (the example inputs; a second size of
  each dynamic dim; the example with its floating inputs negated, so that a condition on
  the data takes its other branch too), run eager PyTorch on each, and save the weights,
  the inputs and the outputs to `file`;
- `candidate` (once per rewrite, on the rewritten code): build the rewritten model, load
  the reference's weights, run eager PyTorch on the reference's inputs and compare with
  the reference's outputs; then export it for real (`torch.onnx.export(..., dynamo=True)`,
  with the call's own examples, dynamic shapes, opset and translation table) and run ONNX
  Runtime on the same inputs (and on the rewritten call's own examples) against eager.

Outputs are compared as `verify` compares them: `abs 1e-4 + rel 1e-3 x max|eager|` per
output, shapes and integer values exactly, NaN where the other has NaN.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from . import torch_internals
from .real_build import build_real
from .record import Analysis, Emit, cause, resize_inputs

ATOL = 1e-4
RTOL = 1e-3
MAX_PARAMS = 50_000_000
"""As verify: above this many parameters the proof would allocate too much."""


def run(target: dict[str, Any], progress: Emit) -> dict[str, Any]:
    spec = dict(target.get("real_run") or {})
    mode = str(spec.get("mode") or "")
    out: dict[str, Any] = {"target": target.get("name"), "findings": [], "proof": {"mode": mode}}
    report = out["proof"]
    progress("build", 10)
    rec = build_real(target, progress, "proof")
    if isinstance(rec, str):
        report["error"] = rec
        return out
    model = rec.model
    if isinstance(model, torch.nn.Module):
        model.eval()
        params = sum(p.numel() for p in model.parameters())
        if params > int(spec.get("max_params") or MAX_PARAMS):
            report["error"] = f"{params:,} parameters: too large to run for real here"
            return out
    path = str(spec.get("file") or "")
    if mode == "reference":
        progress("eager", 40)
        _reference(rec, path, report)
    elif mode == "candidate":
        progress("eager", 40)
        _candidate(rec, path, report, progress)
    else:
        report["error"] = f"unknown mode {mode!r}"
    progress("done", 100)
    return out


# --------------------------------------------------------------------------- reference


def _reference(rec: Analysis, path: str, report: dict[str, Any]) -> None:
    state = _state_of(rec.model)
    cases = _cases(rec, report)
    outputs: list[Any] = []
    for label, args, kwargs in cases:
        outputs.append(_eager(rec.model, args, kwargs))
        _ = label
    report["cases"] = [
        {"case": label, "status": "ok" if not isinstance(o, str) else o}
        for (label, _a, _k), o in zip(cases, outputs, strict=True)
    ]
    torch.save(
        {"state": state, "cases": cases, "outputs": outputs, "sizes": report.get("sizes", {})},
        path,
    )


def _state_of(model: Any) -> dict[str, Any]:
    """The weights to give the rewritten model (the same random draw, whatever its code)."""
    if not isinstance(model, torch.nn.Module):
        return {}
    state = {}
    for k, v in model.state_dict(keep_vars=False).items():
        if isinstance(v, torch.Tensor) and v.is_floating_point() and not bool(v.isfinite().all()):
            v = torch.zeros_like(v)  # torch.load's structure of a checkpoint that has no values
        state[k] = v.detach().clone()
    return state


def _cases(rec: Analysis, report: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """The example inputs, a second size of each dynamic dim (where eager runs), and the
    example with its floating inputs negated."""
    args, kwargs = rec.args, rec.kwargs
    cases: list[tuple[str, Any, Any]] = [("example inputs", *_copy(args, kwargs))]
    dims = rec.requested_dims()
    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    sizes: dict[str, list[int]] = {}
    for name in sorted({d[2] for d in dims}):
        members = [d for d in dims if d[2] == name]
        flat0, dim0 = members[0][0], members[0][1]
        n = int(leaves[flat0].shape[dim0])
        lo, hi = None, None
        for f, d, _, _ in members:
            b_lo, b_hi = rec.dim_bounds.get((f, d), (None, None))
            lo = b_lo if lo is None else max(lo, b_lo or lo)
            hi = b_hi if hi is None else min(hi, b_hi or hi)
        sizes[name] = [n]
        for size in (n + 1, 2 * n if n > 1 else 3, n + 2):
            if size == n or (lo is not None and size < lo) or (hi is not None and size > hi):
                continue
            torch.manual_seed(size)
            new_args, new_kwargs = resize_inputs(
                (args, kwargs), {(f, d): size for f, d, _, _ in members}, _random_like
            )
            if isinstance(_eager(rec.model, new_args, new_kwargs), str):
                continue  # a size the model itself refuses: try the next
            cases.append((f"{name}={size}", new_args, new_kwargs))
            sizes[name].append(size)
            break
    report["sizes"] = sizes
    negated, changed = _negated((args, kwargs))
    if changed:
        cases.append(("example inputs negated", *negated))
    return cases


def _negated(tree: Any) -> tuple[tuple[Any, dict[str, Any]], bool]:
    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    changed = False
    out = []
    for leaf in leaves:
        if isinstance(leaf, torch.Tensor) and leaf.is_floating_point() and leaf.numel():
            leaf = -leaf.detach().clone()
            changed = True
        out.append(leaf)
    args, kwargs = torch.utils._pytree.tree_unflatten(out, spec)
    return (tuple(args), dict(kwargs)), changed


def _copy(args: Any, kwargs: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    a, k = copy.deepcopy((tuple(args), dict(kwargs)))
    return a, k


def _eager(model: Any, args: Any, kwargs: Any) -> Any:
    """The output's tensor leaves (detached), or `error: ...` when eager fails."""
    a, k = _copy(args, kwargs)  # a model may write into its inputs
    try:
        with torch.no_grad():
            out = model(*a, **k)
    except Exception as e:
        return f"error: {cause(e)}"
    return _leaves(out)


def _leaves(out: Any) -> list[Any]:
    """Tensor leaves detached; Python numbers kept as they are (an output `.tolist()`)."""
    leaves = torch.utils._pytree.tree_leaves(out)
    return [x.detach().clone() if isinstance(x, torch.Tensor) else x for x in leaves]


def _random_like(leaf: torch.Tensor, shape: list[int]) -> torch.Tensor:
    if leaf.is_floating_point():
        return torch.randn(shape, dtype=leaf.dtype)
    if leaf.dtype == torch.bool:
        return torch.randint(0, 2, shape).bool()
    high = int(leaf.max()) + 1 if leaf.numel() else 2
    return torch.randint(0, max(high, 1), shape, dtype=leaf.dtype)


# --------------------------------------------------------------------------- candidate


def _candidate(rec: Analysis, path: str, report: dict[str, Any], progress: Emit) -> None:
    try:
        ref = torch.load(path, weights_only=False)
    except Exception as e:
        report["error"] = f"the reference run's file cannot be read: {cause(e)}"
        return
    model = rec.model
    if isinstance(model, torch.nn.Module) and ref["state"]:
        try:
            missing, unexpected = model.load_state_dict(ref["state"], strict=False)
        except Exception as e:
            report["error"] = f"the original weights do not fit the rewritten model: {cause(e)}"
            return
        report["missing_keys"] = list(missing)
        report["unexpected_keys"] = list(unexpected)
        if unexpected:
            report["error"] = "the rewritten model lacks weights the original has: " + ", ".join(
                list(unexpected)[:5]
            )
            return
    eager_rows: list[dict[str, Any]] = []
    report["eager"] = eager_rows
    for (label, args, kwargs), want in zip(ref["cases"], ref["outputs"], strict=True):
        got = _eager(model, args, kwargs)
        if isinstance(want, str):
            same = isinstance(got, str)
            eager_rows.append(
                {
                    "case": label,
                    "status": "ok" if same else "the original fails here; the rewrite runs",
                    "skipped": True,
                }
            )
            continue
        eager_rows.append({"case": label, **_compare(want, got)})
    report["eager_match"] = all(r["status"] == "ok" for r in eager_rows if not r.get("skipped"))
    report["sizes"] = ref.get("sizes", {})
    progress("export", 60)
    try:
        program: Any = torch.onnx.export(
            model,
            tuple(rec.args),
            kwargs=rec.kwargs or None,
            dynamic_shapes=rec.dynamic_shapes,
            opset_version=rec.opset,
            custom_translation_table=rec.translation_table,
            dynamo=True,
            verbose=False,
        )
    except Exception as e:
        report["export"] = f"torch.onnx.export failed: {cause(e)}"
        return
    finally:
        torch_internals.reset_dynamo()
    report["export"] = "ok"
    progress("onnxruntime", 80)
    onnx_rows: list[dict[str, Any]] = []
    report["onnx"] = onnx_rows
    cases = list(ref["cases"])
    own = ("the rewritten call's example inputs", *_copy(rec.args, rec.kwargs))
    if not _same_inputs(own, cases[0]):
        cases.insert(0, own)
    # a dynamic dim the original runs at one size only (a size it pinned): the rewrite's own
    # eager at a second size, against its ONNX model (the dim now works, or the proof says)
    compared = ref.get("sizes", {})
    own_sizes = _own_sizes(rec, [n for n, v in compared.items() if len(v) < 2])
    cases += own_sizes
    report["onnx_sizes"] = {label.split("=")[0]: label for label, _a, _k in own_sizes}
    for label, args, kwargs in cases:
        want = _eager(model, args, kwargs)
        if isinstance(want, str):
            onnx_rows.append({"case": label, "status": "eager fails here", "skipped": True})
            continue
        a, k = _as_inputs_of((rec.args, rec.kwargs), _copy(args, kwargs))
        try:
            got = [torch.as_tensor(t) for t in program(*a, **k)]
        except Exception as e:
            onnx_rows.append({"case": label, "status": f"onnxruntime failed: {cause(e)}"})
            continue
        onnx_rows.append({"case": label, **_compare(want, got)})
    report["onnx_match"] = bool(onnx_rows) and all(
        r["status"] == "ok" for r in onnx_rows if not r.get("skipped")
    )


def _own_sizes(rec: Analysis, names: list[str]) -> list[tuple[str, Any, Any]]:
    """Inputs of the rewritten model at a second size of each dim in `names`, where its
    eager runs (labelled `name=size (the rewrite's own)`)."""
    out: list[tuple[str, Any, Any]] = []
    if not names:
        return out
    dims = rec.requested_dims()
    leaves = torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))
    for name in names:
        members = [d for d in dims if d[2] == name]
        if not members:
            continue
        n = int(leaves[members[0][0]].shape[members[0][1]])
        for size in (n + 1, 2 * n if n > 1 else 3, n + 2):
            lo, hi = rec.dim_bounds.get((members[0][0], members[0][1]), (None, None))
            if (lo is not None and size < lo) or (hi is not None and size > hi):
                continue
            torch.manual_seed(size)
            a, k = resize_inputs(
                (rec.args, rec.kwargs), {(f, d): size for f, d, _, _ in members}, _random_like
            )
            if isinstance(_eager(rec.model, a, k), str):
                continue
            out.append((f"{name}={size} (the rewrite's own)", tuple(a), dict(k)))
            break
    return out


def _as_inputs_of(own: Any, case: tuple[Any, Any]) -> tuple[Any, Any]:
    """A reference case fed to the rewritten model's ONNX program: where the rewrite takes
    a tensor for what the original took as a Python number (`torch.tensor(0.1)` for
    `0.1`), the number as such a tensor."""
    mine, _ = torch.utils._pytree.tree_flatten(own)
    theirs, spec = torch.utils._pytree.tree_flatten(case)
    if len(mine) != len(theirs):
        return case
    out = []
    for m, t in zip(mine, theirs, strict=True):
        if isinstance(m, torch.Tensor) and isinstance(t, (bool, int, float)):
            t = torch.tensor(t, dtype=m.dtype)
        out.append(t)
    args, kwargs = torch.utils._pytree.tree_unflatten(out, spec)
    return tuple(args), dict(kwargs)


def _same_inputs(a: tuple[str, Any, Any], b: tuple[str, Any, Any]) -> bool:
    la = torch.utils._pytree.tree_leaves((a[1], a[2]))
    lb = torch.utils._pytree.tree_leaves((b[1], b[2]))
    if len(la) != len(lb):
        return False
    for x, y in zip(la, lb, strict=True):
        if isinstance(x, torch.Tensor) != isinstance(y, torch.Tensor):
            return False
        if isinstance(x, torch.Tensor):
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                return False
        elif x != y:
            return False
    return True


def _compare(want: Any, got: Any) -> dict[str, Any]:
    if isinstance(got, str):
        return {"status": got}
    want_t = [w for w in want if isinstance(w, torch.Tensor)]
    got_t = [torch.as_tensor(g) for g in got if isinstance(g, torch.Tensor) or _is_array(g)]
    if [w for w in want if not isinstance(w, torch.Tensor)] != [
        g for g in got if not isinstance(g, torch.Tensor) and not _is_array(g)
    ]:
        return {"status": "the Python values among the outputs differ"}
    if len(want_t) != len(got_t):
        return {"status": f"{len(got_t)} outputs, the reference {len(want_t)}"}
    worst = 0.0
    for i, (w, g) in enumerate(zip(want_t, got_t, strict=True)):
        if tuple(w.shape) != tuple(g.shape):
            return {"status": f"output {i} has shape {tuple(g.shape)}, expected {tuple(w.shape)}"}
        if not w.is_floating_point() and not w.is_complex():
            if not torch.equal(w, g.to(w.dtype)):
                return {"status": f"output {i} differs (integer values)"}
            continue
        wd, gd = w.double(), g.double()
        wn, gn = torch.isnan(wd), torch.isnan(gd)
        if not torch.equal(wn, gn):
            return {"status": f"output {i}: NaN in one and not the other"}
        ok = ~wn
        if not ok.any():
            continue
        wf, gf = wd[ok], gd[ok]
        if not torch.equal(torch.isinf(wf), torch.isinf(gf)):
            return {"status": f"output {i}: inf in one and not the other"}
        fin = torch.isfinite(wf)
        if not torch.equal(wf[~fin], gf[~fin]):
            return {"status": f"output {i}: infinities of other signs"}
        diff = (wf[fin] - gf[fin]).abs()
        max_abs = float(diff.max()) if diff.numel() else 0.0
        ref = float(wf[fin].abs().max()) if diff.numel() else 0.0
        worst = max(worst, max_abs)
        if max_abs > ATOL + RTOL * ref:
            return {"status": f"output {i}: max abs diff {max_abs:.3g}", "max_abs": max_abs}
    return {"status": "ok", "max_abs": worst}


def _is_array(x: Any) -> bool:
    return hasattr(x, "__array__") and hasattr(x, "shape")
