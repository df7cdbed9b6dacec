"""Phase 2, memory: what running the model once at the example inputs would need.

The model was built on fake tensors (shapes, no data). Running its forward once
more under the same fake mode, with a `TorchDispatchMode` that sees every op's
outputs, gives the tensor memory a real run would hold, op by op, without
allocating any of it: each output's untyped storage is counted once (views and
in-place results share it) and uncounted when Python frees it (a weak reference
with a callback, the technique of torch's own `torch.distributed._tools.mem_tracker`).
Parameters, buffers and the example inputs are live from the start.

The peak is what tracing (`torch.jit.trace`) and the TorchScript exporter need:
they run the model with real weights. `torch.no_grad()` as they do; the op and
the user's line at the peak are recorded. Temporary buffers inside a kernel
(im2col of a convolution, oneDNN scratch) and the allocator's own overhead are
not tensors, so a real process needs somewhat more than this.
"""

from __future__ import annotations

import contextlib
import os
import sys
import weakref
from collections.abc import Iterable
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from . import frames, torch_internals
from .record import Analysis, first_line

FUSED_KERNELS = frozenset(
    {
        "aten._transformer_encoder_layer_fwd.default",
        "aten._native_multi_head_attention.default",
    }
)
"""Fused fast-path kernels (`nn.TransformerEncoderLayer`, `nn.MultiheadAttention` in eval
under no_grad) whose large internal buffers (the attention scores) are not op outputs, so
the count cannot see them: a run through one is reported as under-counted."""

MAX_FRAMES = 64
"""Python frames kept for the line at the peak (innermost first, then filtered)."""


class RunMemory(TorchDispatchMode):  # type: ignore[no-untyped-call]
    """Live tensor bytes of one run, by storage, and the op where they peak."""

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.live: dict[int, int] = {}
        self._refs: dict[int, Any] = {}
        self.current = 0
        self.peak = 0
        self.peak_op: str | None = None
        self.peak_stack: list[tuple[str, int, str]] = []
        self.ops = 0
        self.fused: set[str] = set()

    def track(self, t: torch.Tensor) -> None:
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):  # sparse or opaque tensors: no storage
            return
        key = id(st)
        if key in self.live:
            return
        n = int(st.nbytes())
        self.live[key] = n
        self.current += n

        def gone(_ref: Any, key: int = key) -> None:
            self.current -= self.live.pop(key, 0)
            self._refs.pop(key, None)

        self._refs[key] = weakref.ref(st, gone)

    def track_all(self, values: Iterable[Any]) -> None:
        for v in values:
            if isinstance(v, torch.Tensor):
                self.track(v)

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        self.ops += 1
        name = str(func)
        if name in FUSED_KERNELS:
            self.fused.add(name)
        self.track_all(torch.utils._pytree.tree_leaves(out))
        if self.current > self.peak:
            self.peak = self.current
            self.peak_op = name
            self.peak_stack = _python_stack()
        return out


def _python_stack() -> list[tuple[str, int, str]]:
    """(file, line, function) of the Python frames now running, outermost first."""
    out: list[tuple[str, int, str]] = []
    f: Any = sys._getframe(2)
    while f is not None and len(out) < MAX_FRAMES:
        out.append((f.f_code.co_filename, f.f_lineno, f.f_code.co_name))
        f = f.f_back
    out.reverse()
    return out


def _storage_bytes(tensors: Iterable[Any]) -> int:
    seen: set[int] = set()
    total = 0
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            continue
        try:
            st = t.untyped_storage()
        except (RuntimeError, NotImplementedError):
            continue
        if id(st) in seen:
            continue
        seen.add(id(st))
        total += int(st.nbytes())
    return total


def machine_bytes() -> int | None:
    """The machine's physical memory (what a real run would have to fit in)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None


def self_peak_rss() -> int | None:
    """This process's resident high-water mark so far (Linux `VmHWM`)."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def run(rec: Analysis) -> None:
    """Fill `rec.result["memory"]`: weights, inputs, the run's peak and where it is."""
    if rec.fake_mode is None:
        # built with real tensors (eager-mode int8): counting their storages under a
        # dispatch mode crashes the process on packed quantized weights
        rec.result["skipped"]["memory"] = "skipped: the model was built with real tensors"
        return
    model = rec.model
    params: list[Any] = []
    if isinstance(model, torch.nn.Module):
        params = [*model.parameters(), *model.buffers()]
    inputs = torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))
    summary = rec.result.get("model") or {}
    by_dtype = summary.get("params_by_dtype") or {}
    main_dtype = max(by_dtype, key=lambda k: by_dtype[k]["bytes"]) if by_dtype else None
    mem: dict[str, Any] = {
        "weights_bytes": _storage_bytes(params),
        "weights_dtype": main_dtype,
        "inputs_bytes": _storage_bytes(inputs),
        "machine_bytes": machine_bytes(),
    }
    rec.result["memory"] = mem
    tracker = RunMemory()
    tracker.track_all(params)
    tracker.track_all(inputs)
    start = tracker.current
    tracker.peak = start
    error: BaseException | None = None
    try:
        with contextlib.ExitStack() as stack:
            if rec.fake_mode is not None:
                stack.enter_context(rec.fake_mode)
                # `.item()` on a fake tensor has no value: answer with a placeholder and go
                # on, so a data-dependent branch does not hide the rest of the run.
                stack.enter_context(torch_internals.lenient_scalars(rec.fake_mode))
            stack.enter_context(torch.no_grad())
            stack.enter_context(tracker)
            out = model(*rec.args, **rec.kwargs)
            del out
    except Exception as e:
        error = e
    mem["run_peak_bytes"] = tracker.peak
    mem["activations_peak_bytes"] = tracker.peak - start
    mem["ops"] = tracker.ops
    if tracker.fused:
        mem["uncounted_kernels"] = sorted(tracker.fused)
    if error is not None:
        mem["run_partial"] = f"{type(error).__name__}: {first_line(str(error))}"[:300]
    if tracker.peak_op is not None:
        where: dict[str, Any] = {"op": tracker.peak_op.replace("aten::", "aten.")}
        stack_frames = [frames.frame_dict(f, line, name) for f, line, name in tracker.peak_stack]
        fr, chain = rec.locate(stack_frames)
        if fr is not None:
            where.update(file=fr["file"], line=fr["line"])
            if chain:
                where["chain"] = [
                    {"file": c["file"], "line": c["line"], "name": c.get("name", "")} for c in chain
                ]
        mem["run_peak_op"] = where
