"""Model zoo: score the deep analysis against torch's own ground truth on real models.

    nice python bench/zoo.py [--only NAME,...] [--json out.json]

For each architecture in bench/zoo_models.py (transformers classes from small
configs with random init, MONAI networks, and a silently wrong op), a separate
process measures the ground truth with torch itself, on real tensors and real
weights:

- `torch._dynamo.explain`: every graph break's innermost line outside torch;
- the ShapeEnv replacements that pin a requested dynamic dim to a constant
  (what `TORCH_LOGS=+dynamic` prints), at their innermost line;
- `torch.onnx.export(..., dynamo=True)`: whether it fails, and at which line;
- the ONNX registry check of every node of the decomposed program (the line
  of each op without a translation);
- for the verify models, onnxruntime against eager: the line of the op that
  computes the wrong numbers.

Then onnxlint's deep analysis runs on the same factory, and each ground-truth
location must be found at its exact file and line (with a code of the same
family); every other finding is a false positive. Prints recall, precision,
wall time and peak memory per model and for the whole zoo.

transformers, monai and einops (MONAI's transformers need it) are installed
(`pip install -c torch==<installed>`)
when missing; torch itself is never replaced. Nothing is downloaded into the repo.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

FAMILIES = {
    "OLX801": "break",
    "OLX804": "dim",
    "OLX818": "dim",
    "OLX802": "export",
    "OLX803": "export",
    "OLX806": "export",
    "OLX808": "export",
    "OLX816": "export",
    "OLX805": "op",
    "OLX807": "op",
    "OLX810": "verify",
    "OLX811": "verify",
    "OLX822": "alias",
    "OLX823": "scalar",
    "OLX824": "names",
    "OLX825": "relation",
}


def ensure_deps() -> None:
    missing = [
        m
        for m in ("transformers", "monai", "einops", "diffusers")
        if importlib.util.find_spec(m) is None
    ]
    if not missing:
        return
    import torch

    pin = f"torch=={torch.__version__.split('+')[0]}"
    constraint = Path(os.environ.get("TMPDIR", "/tmp")) / "onnxlint-zoo-constraint.txt"
    constraint.write_text(pin + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "-c", str(constraint), *missing], check=True
    )


# --------------------------------------------------------------------------- ground truth


def _where(stack: Any) -> tuple[str, int] | None:
    from onnxlint.deep.worker import frames

    vis = [f for f in frames.visible(stack) if f["file"] != str(Path(__file__).resolve())]
    return (vis[-1]["file"], vis[-1]["line"]) if vis else None


def truth(name: str) -> dict[str, Any]:
    """Runs in its own process: torch's behaviour on real tensors and weights."""
    import torch
    import zoo_models
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from onnxlint.deep.worker import decompose, frames, torch_internals

    torch.manual_seed(0)
    model, args, kwargs, ds = zoo_models.ZOO[name]()
    out: dict[str, Any] = {"name": name, "expected": []}
    exp = out["expected"]
    # 1. graph breaks, as explain lists them
    try:
        torch._dynamo.reset()
        ex = torch._dynamo.explain(model)(*args, **kwargs)
        for r in ex.break_reasons:
            loc = _where(r.user_stack)
            if loc:
                exp.append(
                    {
                        "family": "break",
                        "file": loc[0],
                        "line": loc[1],
                        "what": str(r.reason).splitlines()[0],
                    }
                )
        out["breaks"] = ex.graph_break_count
    except Exception as e:
        out["explain_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    finally:
        torch._dynamo.reset()
    # 2. dims pinned to a constant while exporting with the requested dynamic dims
    pinned: list[Any] = []
    original = ShapeEnv._set_replacement

    def hooked(self: Any, a: Any, tgt: Any, msg: str) -> Any:
        if getattr(tgt, "is_number", False):
            pinned.append((str(a), str(tgt), traceback.extract_stack()[:-1]))
        return original(self, a, tgt, msg)

    dims = torch_internals.to_export_dims(ds) if ds is not None else None
    ShapeEnv._set_replacement = hooked  # type: ignore[method-assign]
    try:
        torch.export.export(model, args, kwargs=kwargs or None, dynamic_shapes=dims, strict=False)
        out["export_dynamic"] = "ok"
    except Exception as e:
        out["export_dynamic"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        if torch_internals.is_constraint_violation(e):
            for _sym, value, stack in pinned:
                loc = _where(stack)
                if loc:
                    exp.append(
                        {
                            "family": "dim",
                            "file": loc[0],
                            "line": loc[1],
                            "what": f"pinned to {value}",
                        }
                    )
                    break
    finally:
        ShapeEnv._set_replacement = original  # type: ignore[method-assign]
    # 3. torch.onnx.export with real weights
    program = None
    try:
        program = torch.onnx.export(
            model, args, kwargs=kwargs or None, dynamic_shapes=ds, dynamo=True, verbose=False
        )
        out["onnx_export"] = "ok"
    except Exception as e:
        out["onnx_export"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
        text = str(e)
        if "No ONNX function found" not in text and "DispatchError" not in text:
            at = frames.raised_at(e)
            loc = (at["file"], at["line"]) if at else _where(frames.exception_stack(e))
            if loc is None:  # step 2/3: torch names the FX node and its source in the error
                loc = _where(decompose.failing_node_stack(None, e))
            if loc:
                exp.append(
                    {"family": "export", "file": loc[0], "line": loc[1], "what": out["onnx_export"]}
                )
            else:  # torch names no line (eager int8's packed weights): any line will do
                out["export_unlocated"] = True
    # 4. registry check of the decomposed program
    try:
        ep = torch_internals.export(
            model, args, kwargs, torch_internals.to_export_dims(ds, auto=True) if ds else None
        )
        reg = torch_internals.registry(18)
        dec = torch_internals.decompose(ep, reg)
        for node in dec.graph.nodes:
            if node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
                ok, _msg = torch_internals.dispatch(node, reg)
                if not ok:
                    loc = _where(frames.parse_stack_trace(node.meta.get("stack_trace")))
                    if loc:
                        exp.append(
                            {
                                "family": "op",
                                "file": loc[0],
                                "line": loc[1],
                                "what": str(node.target),
                            }
                        )
    except Exception as e:
        out["registry_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    if program is not None:
        silent(name, model, args, kwargs, ds, program, exp)
    uniq = {(x["family"], x["file"], x["line"]): x for x in exp}
    out["expected"] = list(uniq.values())
    return out


def silent(
    name: str, model: Any, args: Any, kwargs: Any, ds: Any, program: Any, exp: list[Any]
) -> None:
    """What a successful torch.onnx.export gets wrong without an error, measured with
    onnxruntime against eager on real tensors (each problem at the line torch points at).

    - aliased example inputs: onnxruntime vs eager with the repeats made distinct;
    - Python scalar example inputs: the ONNX model has no input for them;
    - a dim the model supports only for some sizes: torch.export with a named Dim says
      "Constraints violated" with a derived dim (`2*_h`), and eager at the example size + 1
      fails: the line is where eager fails;
    - verify models: torch's own `verify_onnx_program` with intermediates: the first value
      that differs, at its node's line.
    """
    import torch
    import zoo_models

    from onnxlint.deep.worker import frames

    leaves = torch.utils._pytree.tree_leaves((args, kwargs))
    site = _return_line(zoo_models.ZOO[name])
    ids = [id(t) for t in leaves if isinstance(t, torch.Tensor)]
    if len(ids) != len(set(ids)):
        distinct = _distinct((args, kwargs))
        with torch.no_grad():
            want = torch.utils._pytree.tree_leaves(model(*distinct[0], **distinct[1]))
        got = program(*distinct[0], **distinct[1])
        if any(
            not torch.allclose(w, torch.as_tensor(g), atol=1e-4, rtol=1e-3)
            for w, g in zip([w for w in want if isinstance(w, torch.Tensor)], got, strict=False)
        ):
            exp.append({"family": "alias", **site, "what": "aliased inputs give wrong results"})
    scalars = [v for v in leaves if isinstance(v, (bool, int, float))]
    tensors = [t for t in leaves if isinstance(t, torch.Tensor)]
    if scalars and len(program.model.graph.inputs) <= len(tensors):
        exp.append({"family": "scalar", **site, "what": f"baked in: {scalars}"})
    if ds:
        _relations(model, args, kwargs, ds, exp)
    if name in zoo_models.VERIFY:
        from torch.onnx import verification

        infos = verification.verify_onnx_program(
            program, args, kwargs or None, compare_intermediates=True
        )
        nodes = {n.name: n for n in program.exported_program.graph.nodes}
        for info in infos:
            if info.max_abs_diff > 1e-4 + 1e-3 * 1 and info.name in nodes:
                node = nodes[info.name]
                loc = _where(frames.parse_stack_trace(node.meta.get("stack_trace")))
                if loc:
                    exp.append(
                        {
                            "family": "verify",
                            "file": loc[0],
                            "line": loc[1],
                            "what": f"{node.target}: max abs diff {info.max_abs_diff:.3g}",
                        }
                    )
                    break


def _relations(model: Any, args: Any, kwargs: Any, ds: Any, exp: list[Any]) -> None:
    import torch

    from onnxlint.deep.worker import frames
    from onnxlint.deep.worker.record import resize_inputs

    named = _named_dims(ds)
    try:
        torch.export.export(model, args, kwargs=kwargs or None, dynamic_shapes=named, strict=False)
        return
    except Exception as e:
        text = str(e)
    if "Constraints violated" not in text or "*_" not in text.split("Suggested fixes", 1)[-1]:
        return
    flat = torch.utils._pytree.tree_leaves(
        _per_leaf(args, kwargs, ds), is_leaf=lambda x: isinstance(x, dict) or x is None
    )
    for i, spec in enumerate(flat):
        for d in spec or {}:
            leaves = torch.utils._pytree.tree_leaves((args, kwargs))
            n = int(leaves[i].shape[d])
            grown = resize_inputs((args, kwargs), {(i, d): n + 1}, lambda t, s: torch.randn(s))
            try:
                with torch.no_grad():
                    model(*grown[0], **grown[1])
            except Exception as err:
                loc = _where(frames.exception_stack(err))
                if loc:
                    exp.append(
                        {
                            "family": "relation",
                            "file": loc[0],
                            "line": loc[1],
                            "what": f"fails at size {n + 1}",
                        }
                    )


def _named_dims(ds: Any) -> Any:
    from torch.export import Dim

    def conv(v: Any) -> Any:
        if isinstance(v, dict):
            if all(isinstance(k, int) for k in v):
                return {k: Dim(str(n)) if isinstance(n, str) else n for k, n in v.items()}
            return {k: conv(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(conv(x) for x in v)
        return v

    return conv(ds)


def _per_leaf(args: Any, kwargs: Any, ds: Any) -> list[Any]:
    """The dynamic-shape spec of each tensor input, in flat order (dict specs by name)."""
    if isinstance(ds, dict):
        return [ds.get(k) for k in kwargs] if kwargs and not args else list(ds.values())
    return list(ds) + [None] * (len(args) - len(ds)) if ds else []


def _distinct(tree: Any) -> Any:
    import torch

    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    seen: set[int] = set()
    out = []
    for t in leaves:
        if isinstance(t, torch.Tensor) and id(t) in seen:
            t = torch.randint_like(t, 3, 64) if not t.is_floating_point() else torch.randn_like(t)
        seen.add(id(t))
        out.append(t)
    return torch.utils._pytree.tree_unflatten(out, spec)


def _return_line(fn: Any) -> dict[str, Any]:
    import inspect

    lines, start = inspect.getsourcelines(fn)
    last = max(i for i, ln in enumerate(lines) if ln.strip().startswith("return"))
    return {"file": str(Path(inspect.getsourcefile(fn)).resolve()), "line": start + last}


# --------------------------------------------------------------------------- scoring


def score(
    expected: list[dict[str, Any]],
    violations: list[dict[str, Any]],
    skip: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """Findings against torch's ground truth at the exact file and line; `skip`: families
    torch gave no answer for (explain itself raised: no breaks to compare)."""
    exp = {(x["family"], x["file"], x["line"]) for x in expected if x["family"] not in skip}
    got = {(FAMILIES.get(v["code"], v["code"]), v["path"], v["line"]) for v in violations}
    got = {g for g in got if g[0] not in skip}
    hit = exp & got
    fp = got - exp
    return {
        "expected": len(exp),
        "found": len(hit),
        "reported": len(got),
        "false_positives": sorted(f"{c} {Path(p).name}:{ln}" for c, p, ln in fp),
        "missed": sorted(f"{c} {Path(p).name}:{ln}" for c, p, ln in exp - got),
    }


def _agrees(torch_export: str, ours: str) -> bool:
    """Whether our status says what torch.onnx.export with real weights did."""
    if torch_export == "ok":
        return not ours.startswith(("fails", "cannot", "factory"))
    if "step 1/3" in torch_export or "TorchExportError" in torch_export:
        return ours.startswith("fails at step 1/3")
    if "decompose" in torch_export:
        return ours.startswith("fails at step 2/3")
    if "convert" in torch_export:
        return ours.startswith("fails at step 3/3")
    return ours.startswith(("fails", "cannot"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--json", default="")
    ap.add_argument("--truth", default="", help=argparse.SUPPRESS)
    ns = ap.parse_args()
    if ns.truth:
        print(json.dumps(truth(ns.truth)))
        return 0
    ensure_deps()
    import zoo_models

    from onnxlint.deep.analyzer import DeepAnalyzer
    from onnxlint.deep.targets import Target

    names = [n for n in zoo_models.ZOO if not ns.only or n in ns.only.split(",")]
    analyzer = DeepAnalyzer()
    t0 = time.perf_counter()
    analyzer.start()
    rows = []
    peak = 0
    for name in names:
        t = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, __file__, "--truth", name],
            capture_output=True,
            text=True,
            timeout=1800,
        )
        truth_s = time.perf_counter() - t
        try:
            gt = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            gt = {"expected": [], "error": proc.stderr[-500:]}
        target = Target(
            name=name,
            factory=f"zoo_models:{name}",
            root=HERE,
            verify=name in zoo_models.VERIFY,
            timeout=1200.0,
        )
        res = analyzer.analyze(target)
        violations = [v.to_json() for v in res.violations if v.code != "OLX817"]
        # families torch gave no answer for: explain raised; the export failed at no line
        skip = frozenset(
            family
            for family, key in (("break", "explain_error"), ("export", "export_unlocated"))
            if gt.get(key)
        )
        s = score(gt.get("expected", []), violations, skip)
        peak = max(peak, res.peak_rss or 0)
        ours = res.outcome if hasattr(res, "outcome") else res.status
        row = {
            "model": name,
            "status_agrees": _agrees(str(gt.get("onnx_export", "")), ours),
            **s,
            "status": res.outcome if hasattr(res, "outcome") else res.status,
            "wall_s": round(res.wall, 1),
            "truth_s": round(truth_s, 1),
            "peak_mb": round((res.peak_rss or 0) / 2**20),
            "truth": gt,
            "reported_at": sorted(
                f"{v['code']} {Path(v['path']).name}:{v['line']}" for v in violations
            ),
        }
        rows.append(row)
        print(
            f"{name:22} expected {s['expected']:2} found {s['found']:2} reported {s['reported']:2} "
            f"wall {row['wall_s']:6.1f}s peak {row['peak_mb']:5} MB  {row['status']}"
            + ("" if row["status_agrees"] else f"  (torch: {gt.get('onnx_export', '?')[:60]})")
            + (f"\n{'':22} missed {s['missed']}" if s["missed"] else "")
            + (f"\n{'':22} extra  {s['false_positives']}" if s["false_positives"] else ""),
            flush=True,
        )
    analyzer.shutdown()
    exp = sum(r["expected"] for r in rows)
    found = sum(r["found"] for r in rows)
    reported = sum(r["reported"] for r in rows)
    fp = sum(len(r["false_positives"]) for r in rows)
    recall = found / exp if exp else 1.0
    precision = (reported - fp) / reported if reported else 1.0
    total = time.perf_counter() - t0
    agree = sum(1 for r in rows if r["status_agrees"])
    print(f"status agrees with torch.onnx.export (real weights) on {agree}/{len(rows)} models")
    print(
        f"\n{len(rows)} models: recall {recall:.2f} ({found}/{exp}), precision {precision:.2f} "
        f"({reported - fp}/{reported}); analysis wall {sum(r['wall_s'] for r in rows):.0f} s, "
        f"whole run {total:.0f} s; peak analysis RSS {peak / 2**20:.0f} MB"
    )
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
