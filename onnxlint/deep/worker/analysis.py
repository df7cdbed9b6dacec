"""One target's analysis, phase by phase, in a forked child of the warm worker.

Phases, one module each, around the record in `record.py`: load (factory under
fake mode) -> memory (what one real run would need, counted on fake tensors)
-> explain (graph breaks) -> export (non-strict torch.export,
specialised dims) -> decompose (every node checked against the ONNX registry)
-> translate (ONNX structure, checker, signature) -> verify (optional, real
weights + onnxruntime). A phase that fails reports findings and the phases that
need its output are skipped; nothing here may raise past `run`. Where each
finding goes is `frames.py`'s business.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from . import (
    decompose,
    explain,
    export,
    frames,
    inputs,
    load,
    memory,
    overlay,
    proof,
    script,
    script_loop,
    torch_internals,
    translate,
    verify,
    wire,
)
from .module_state import ModuleState
from .record import Analysis, Emit, finding, first_line
from .script_fakes import autograd_mode

__all__ = ["Analysis", "run", "warm_up"]


def run(target: dict[str, Any], emit_progress: Emit) -> dict[str, Any]:
    """Analyse one target (the wire's target dict); the result the parent receives."""
    if target.get("overlay"):  # a rewrite's proof: its files in place of the user's
        overlay.install(target["overlay"])
    if target.get("real_run"):  # a rewrite's proof, with real tensors (proof.py)
        return proof.run(target, emit_progress)
    rec = Analysis(target, emit_progress)
    if not torch_internals.is_tested_version():
        rec.add(
            finding(
                wire.KIND_TORCH_UNSUPPORTED,
                f"onnxlint's deep analysis was written for torch "
                f"{', '.join(torch_internals.TESTED_TORCH)}; this is torch "
                f"{torch_internals.torch_version()}. Results may be incomplete.",
            )
        )
    ok = False  # an onnxlint error in the load phase is a finding (`_Phase`), then stop
    with _Phase(rec, "load", 0):
        # a factory builds the model; a script target runs the user's export script to it
        ok = script.run(rec) if rec.target.get("script") else load.run(rec)
        if ok:
            inputs.run(rec)  # examples that export fine and give a wrong model
    if ok:
        # a script's call made under `torch.inference_mode()` / `no_grad()` is analysed so;
        # an ONNX export runs with torch.onnx.is_in_onnx_export() true, as torch's does
        # each phase's forward sees the model as the export call does (a cache a forward
        # fills is the first call's, not the memory count's)
        state = ModuleState(rec.model)
        with autograd_mode(rec.autograd), torch_internals.onnx_exporting(rec.onnx_capture):
            with _Phase(rec, "memory", 5):
                memory.run(rec)
            state.restore()
            _torch_steps(rec, state)
            if "memory" in rec.result:
                # before verification, which allocates real weights
                rec.result["memory"]["analysis_peak_bytes"] = memory.self_peak_rss()
            if rec.target.get("verify"):
                with _Phase(rec, "verify", 90):
                    verify.run(rec)
        later_passes(rec)
    return _finish(rec)


def _torch_steps(rec: Analysis, state: ModuleState) -> None:
    """explain, then torch.onnx.export's three steps, each on the model as the export call
    sees it (`state` undoes what a forward cached); a step that fails skips the later ones."""
    with _Phase(rec, "explain", 10):
        explain.run(rec)
    state.restore()
    with _Phase(rec, "export", 30):
        export.run(rec)
    if rec.ep is not None:
        with _Phase(rec, "decompose", 55):
            decompose.run(rec)
    if rec.decomposed is not None:
        with _Phase(rec, "translate", 75):
            translate.run(rec)


def later_passes(rec: Analysis) -> None:
    """The models a script's export call in a loop exports in its later passes (one per
    new structure, `script_loop`): analysed as the first one was, up to the ONNX translation;
    their findings join the first pass's with a note naming the pass's model, and a finding
    the record has already is not repeated."""
    if len(rec.loop_calls) < 2:
        return
    rec.progress("later passes", 95)
    seen = {_key(f) for f in rec.findings}
    at = rec.target.get("script_line") or rec.loop_calls[0].line
    for call in rec.loop_calls[1:]:
        name = script_loop.label(call, rec.loop_calls)
        sub = Analysis(dict(rec.target), lambda _phase, _percent: None)
        sub.fake_mode, sub.module_sites = rec.fake_mode, rec.module_sites
        problem = script.take_later(sub, call)
        if problem is None:
            with autograd_mode(sub.autograd), torch_internals.onnx_exporting(sub.onnx_capture):
                _torch_steps(sub, ModuleState(sub.model))
        else:
            sub.add(finding(wire.KIND_TARGET_ERROR, problem))
        loc = sub.factory_loc or {}
        for found in sub.findings:
            if not found.get("file"):
                found["file"], found["line"] = loc.get("file"), loc.get("line")
            if _key(found) in seen:
                continue
            seen.add(_key(found))
            found.setdefault("notes", []).insert(
                0, f"in the pass of the loop at line {at} that exports {name}"
            )
            rec.add(found)
        for phase, why in sub.failed.items():
            rec.failed.setdefault(phase, f"{why} (the loop's pass that exports {name})")


def _key(found: dict[str, Any]) -> tuple[Any, ...]:
    return (found.get("kind"), found.get("file"), found.get("line"), found.get("message"))


def warm_up(rec: Analysis) -> None:
    """The phases after load on a model the caller built (the zygote's warm-up)."""
    memory.run(rec)
    explain.run(rec)
    export.run(rec)
    if rec.ep is not None:
        decompose.run(rec)
    if rec.decomposed is not None:
        translate.run(rec)


def _finish(rec: Analysis) -> dict[str, Any]:
    loc = rec.factory_loc
    if rec.target.get("script") and loc is not None:
        # A script target is declared by its export call: what belongs to no line of the
        # model goes there (the call the run captured, when the target named none).
        for found in rec.findings:
            if not found.get("file"):
                found["file"], found["line"] = loc["file"], loc["line"]
    rec.result["project_files"] = sorted(
        {
            os.path.realpath(f)
            for m in list(sys.modules.values())
            if (f := getattr(m, "__file__", None))
            and os.path.isabs(f)
            and frames.is_project_file(f, rec.root)
        }
        # a script target's own file is no module, and its edits change the analysis
        | ({os.path.realpath(rec.target["script"])} if rec.target.get("script") else set())
        # a module whose import failed is gone from sys.modules, but fixing it changes the
        # analysis: the files the findings and their chains point at count too
        | {
            os.path.realpath(f)
            for found in rec.findings
            for f in (found.get("file"), *(c.get("file") for c in found.get("chain") or ()))
            if isinstance(f, str) and os.path.isabs(f) and frames.is_project_file(f, rec.root)
        }
    )
    for name in (
        "load",
        "inputs",
        "memory",
        "explain",
        "export",
        "decompose",
        "translate",
        "verify",
    ):
        if name in rec.failed:
            rec.result["first_failed_phase"] = name
            break
    rec.progress("done", 100)
    return rec.result


class _Phase:
    """Times a phase; an unexpected error becomes a finding, never a crash."""

    def __init__(self, rec: Analysis, name: str, percent: int) -> None:
        self.rec = rec
        self.name = name
        self.start = 0.0
        rec.progress(name, percent)

    def __enter__(self) -> _Phase:
        self.start = time.perf_counter()
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        self.rec.phases[self.name] = round(time.perf_counter() - self.start, 3)
        if ev is None or not isinstance(ev, Exception):
            return False
        self.rec.failed[self.name] = f"onnxlint error: {type(ev).__name__}"
        self.rec.add(
            self.rec.place_exc(
                finding(
                    wire.KIND_EXPORT_FAILURE,
                    f"onnxlint's {self.name} phase failed: {type(ev).__name__}: "
                    f"{first_line(str(ev))}",
                    notes=["".join(traceback.format_exception(et, ev, tb))[-2000:]],
                ),
                ev,
            )
        )
        return True
