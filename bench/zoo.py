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
}


def ensure_deps() -> None:
    missing = [
        m for m in ("transformers", "monai", "einops") if importlib.util.find_spec(m) is None
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
    try:
        torch.onnx.export(
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
                    # ops that fail are also where verify would fail
            if (
                node.op == "call_function"
                and "scatter_reduce" in str(node.target)
                and name in zoo_models.VERIFY
            ):
                loc = _where(frames.parse_stack_trace(node.meta.get("stack_trace")))
                if loc:
                    exp.append(
                        {
                            "family": "verify",
                            "file": loc[0],
                            "line": loc[1],
                            "what": "wrong numbers",
                        }
                    )
    except Exception as e:
        out["registry_error"] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    uniq = {(x["family"], x["file"], x["line"]): x for x in exp}
    out["expected"] = list(uniq.values())
    return out


# --------------------------------------------------------------------------- scoring


def score(expected: list[dict[str, Any]], violations: list[dict[str, Any]]) -> dict[str, Any]:
    exp = {(x["family"], x["file"], x["line"]) for x in expected}
    got = {(FAMILIES.get(v["code"], v["code"]), v["path"], v["line"]) for v in violations}
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
        s = score(gt.get("expected", []), violations)
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
