"""ONNX Runtime's process memory over a sweep of input sizes (verification only).

The usual way to chase memory that grows when ONNX Runtime runs a model with dynamic
axes is to watch the process over a range of sizes and to try `enable_mem_pattern` /
`enable_cpu_mem_arena` in `SessionOptions`. This does exactly that, measured: the saved
model (real weights) is run by a fresh Python process per option set (so one set's arena
cannot hide the other's), over the sweep of sizes and then over the same sizes again,
reading the process's resident memory (`VmRSS`) after every run.

- Growth on the second pass (the same sizes again) is a leak: the arena keeps its
  high-water mark, so a healthy session is flat there.
- A first-pass high-water mark that `enable_mem_pattern=False, enable_cpu_mem_arena=False`
  lowers substantially is worth setting (info).

Imported by `verify` (stdlib only at the top); run as a script in the measuring process,
where it imports onnxruntime and numpy and never torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

MIN_SIZES = 8
"""Sizes per sweep; the sweep is run twice."""
SWEEP_ACTIVATIONS = 1 << 30
"""Largest predicted activation memory at the top of the sweep (bytes): the sweep stops
below it, so verification stays small."""
LEAK_MIN_BYTES = 16 << 20
LEAK_SHARE = 0.05
"""Second-pass growth that is a leak: above 16 MB and 5% of the first pass's growth."""
LEAN_MIN_BYTES = 32 << 20
LEAN_SHARE = 0.10
"""A high-water mark the lean options lower by 32 MB and 10% is worth reporting."""
TIMEOUT_S = 300.0
MMAP_THRESHOLD = 1 << 20
"""glibc's `M_MMAP_THRESHOLD` in the measuring process (see `measure`)."""

OPTION_SETS: dict[str, dict[str, bool]] = {
    "default": {},
    "lean": {"enable_mem_pattern": False, "enable_cpu_mem_arena": False},
}
"""The two `SessionOptions` compared: ONNX Runtime's defaults, and without the memory
pattern planner and the CPU arena."""


def sweep_sizes(example: int, lo: int | None, hi: int | None, top: int) -> list[int]:
    """`MIN_SIZES` increasing sizes from the declared minimum (else half the example, at
    least 2) to the declared maximum (else `top`), the example size among them; every
    size of the range when it holds fewer."""
    low = lo if lo is not None else max(2, example // 2)
    high = hi if hi is not None else max(top, low + MIN_SIZES - 1)
    if high - low + 1 <= MIN_SIZES:
        return list(range(low, high + 1))
    step = (high - low) / (MIN_SIZES - 1)
    sizes = {round(low + i * step) for i in range(MIN_SIZES)}
    if low <= example <= high:
        sizes.add(example)
    return sorted(sizes)


def measure(
    model_path: str, inputs: list[dict[str, Any]], steps: list[list[list[int]]], options: str
) -> dict[str, Any]:
    """Run the model over `steps` (each: one shape per input) twice, in a fresh process
    with the named option set; RSS after session creation and after every run."""
    request = {
        "model": model_path,
        "inputs": inputs,
        "steps": steps,
        "options": OPTION_SETS[options],
    }
    env = dict(os.environ)
    # glibc raises its mmap threshold after large blocks are freed, so later ones come from
    # the heap and are kept: the process grows on a second pass though nothing leaks. A
    # fixed threshold turns that off; what stays resident is then what is really held.
    env["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        env=env,
        check=False,
    )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the onnxruntime process failed (exit {proc.returncode}): {tail}")
    out: dict[str, Any] = json.loads(lines[-1])
    return out


def judge(runs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What the two sweeps say: per option set its high-water marks and second-pass
    growth, whether that growth is a leak, and whether the lean options are worth it."""
    out: dict[str, Any] = {}
    for name, r in runs.items():
        base = int(r["base"])
        p1, p2 = [int(x) for x in r["pass1"]], [int(x) for x in r["pass2"]]
        hwm1, hwm2 = max(p1), max(p2)
        growth1 = max(hwm1 - base, 0)
        grown = max(hwm2 - hwm1, p2[-1] - p1[-1])
        out[name] = {
            "base": base,
            "high_water": max(hwm1, hwm2),
            "first_pass_growth": growth1,
            "second_pass_growth": grown,
            "leak": grown > max(LEAK_MIN_BYTES, LEAK_SHARE * growth1),
        }
    d, lean = out.get("default"), out.get("lean")
    if d is not None and lean is not None:
        saved = d["high_water"] - lean["high_water"]
        out["lean_saves"] = saved
        out["lean_worth_it"] = bool(
            not d["leak"] and saved >= LEAN_MIN_BYTES and saved >= LEAN_SHARE * d["high_water"]
        )
    return out


# --------------------------------------------------------------------------- the measuring process


def _rss() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def _main() -> int:  # pragma: no cover - runs in the measuring process
    import numpy as np
    import onnxruntime as ort

    req = json.loads(sys.stdin.read())
    so = ort.SessionOptions()
    for key, value in req["options"].items():
        setattr(so, key, value)
    sess = ort.InferenceSession(req["model"], so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    rng = np.random.default_rng(0)
    base = _rss()
    passes: list[list[int]] = [[], []]
    for p in range(2):
        for shapes in req["steps"]:
            feeds = {}
            for name, spec, shape in zip(names, req["inputs"], shapes, strict=False):
                dtype = np.dtype(spec["dtype"])
                if dtype.kind == "f":
                    feeds[name] = rng.standard_normal(shape).astype(dtype)
                else:
                    feeds[name] = np.zeros(shape, dtype=dtype)
            sess.run(None, feeds)
            del feeds
            passes[p].append(_rss())
    print(json.dumps({"base": base, "pass1": passes[0], "pass2": passes[1]}), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(_main())
