"""DeepResult: one target's analysis as Violations grouped by file, plus report data.

Converts the worker's findings (kind, message, file, line) into `Violation`s
with `source="deep"`, spanning the line's code (not its indentation). A finding
without a user line lands on the target's declaration (pyproject.toml table or
the `# onnxlint: target` function), so nothing is ever dropped.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.core.violation import Related, Severity, Span, Violation
from onnxlint.deep import codes
from onnxlint.deep.plain import reword
from onnxlint.deep.targets import Target, factory_location
from onnxlint.deep.worker import wire


@dataclass
class DeepResult:
    """What `DeepAnalyzer.analyze` returns. `data` is the worker's raw result (reports)."""

    target: Target
    status: str  # wire.STATUS_* or "error" (the worker could not start)
    violations: list[Violation] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    peak_rss: int | None = None
    wall: float = 0.0
    detail: str = ""
    data: dict[str, Any] = field(default_factory=dict)
    cached: bool = False

    @property
    def by_file(self) -> dict[str, list[Violation]]:
        out: dict[str, list[Violation]] = defaultdict(list)
        for v in self.violations:
            out[v.path].append(v)
        return dict(out)

    @property
    def ok(self) -> bool:
        """The worker ran the analysis to its end (its findings may still say the model
        does not export: see `outcome`)."""
        return self.status == wire.STATUS_OK

    @property
    def outcome(self) -> str:
        """The target's status in words, as the CLI, the JSON and the reports show it:
        "ok" only when every phase succeeded, else where it stopped."""
        return outcome_of(self)

    @property
    def succeeded(self) -> bool:
        return self.outcome == OUTCOME_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target.name,
            "status": self.outcome,
            "process": self.status,
            "detail": self.detail,
            "cached": self.cached,
            "wall": self.wall,
            "peak_rss": self.peak_rss,
            "phases": self.phases,
            "violations": [v.to_json() for v in self.violations],
            "data": self.data,
        }


OUTCOME_OK = "ok"
SYS_EXIT_DETAIL = "the model code called sys.exit("
_PROCESS_OUTCOME = {
    wire.STATUS_CRASHED: "crashed",
    wire.STATUS_TIMEOUT: "timed out",
    wire.STATUS_MEMORY: "out of memory",
    wire.STATUS_CANCELLED: "cancelled",
}
# The exporter's steps: 1/3 torch.export, 2/3 ONNX decompositions, 3/3 ONNX translation.
_STEP1 = frozenset({"OLX802", "OLX803", "OLX828", "OLX806"})
_STEP3 = frozenset({"OLX805", "OLX807"})
_DIMS = frozenset({"OLX804", "OLX818"})
_VERIFY = frozenset({"OLX810", "OLX811"})


def outcome_of(r: DeepResult) -> str:
    """ "ok" only when every phase succeeded; otherwise the first phase that did not."""
    if r.status != wire.STATUS_OK:
        if r.detail.startswith(SYS_EXIT_DETAIL):
            return f"cannot be analysed: {r.detail}"
        return _PROCESS_OUTCOME.get(r.status, "cannot be analysed")
    codes_found = {v.code for v in r.violations}
    save = (r.data or {}).get("script_save_fails")
    if save:  # the call's save fails after the export: the export's own outcome first
        codes_found = {v.code for v in r.violations if save not in v.message}
    if "OLX812" in codes_found:
        raised = any(v.code == "OLX812" and " raised " in v.message for v in r.violations)
        if (r.data or {}).get("failed", {}).get("load") == wire.NOT_REACHED:
            return wire.NOT_REACHED
        return "factory raised" if raised else "cannot be analysed"
    failed = (r.data or {}).get("failed") or {}  # the worker's phases that did not succeed
    if "load" in failed:
        return f"cannot be analysed: {failed['load']}"
    if (r.data or {}).get("script_call_removed") or (r.data or {}).get("script_call_fails"):
        # the script's own call fails where the model does not: an export function this
        # torch lacks, the exporter's library shadowed by a package of the project, or
        # `dynamic_axes` torch cannot convert
        return "fails at the script's own call"
    # torch.onnx.export falls back to strict capture when the non-strict one fails: the
    # first capture's findings are then information, and step 1/3 succeeded
    strict_fallback = (r.data or {}).get("capture") == "strict"
    if (codes_found & _STEP1 and not strict_fallback) or (r.data or {}).get("export_fails"):
        return "fails at step 1/3 (torch.export)"
    if any(v.code == "OLX808" and "step 2/3" in v.message for v in r.violations):
        return "fails at step 2/3 (ONNX decompositions)"
    if codes_found & _STEP3 or "OLX808" in codes_found:
        return "fails at step 3/3 (ONNX translation)"
    if "OLX809" in codes_found:
        return "fails the ONNX checker"
    if save:
        return "exports, but the script's call fails at the save"
    if "OLX826" in codes_found:
        return "exports, but other dims are dynamic than dynamic_axes name"
    if "OLX824" in codes_found:
        return "exports, but onnxruntime refuses the file (duplicate names)"
    if "OLX822" in codes_found:
        return "exports, but the ONNX model computes with aliased inputs"
    if "OLX829" in codes_found:
        return "exports, but an autograd Function's `symbolic` is ignored"
    if "OLX830" in codes_found:
        return "exports, but in training mode"
    if codes_found & _DIMS:
        return "exports, but with static dims that were asked to be dynamic"
    if codes_found & _VERIFY:
        return "exports, but onnxruntime disagrees with PyTorch"
    if "OLX827" in codes_found:
        return "exports, but at another opset than the one asked for"
    if "OLX825" in codes_found:
        return "exports, but only some sizes of a dynamic dim work"
    if any(v.code == "OLX823" and v.severity != Severity.INFO for v in r.violations):
        return "exports, with an example input baked in as a constant"
    if "OLX820" in codes_found:
        return "exports, but onnxruntime's memory keeps growing"
    if "OLX817" in codes_found:
        return "incomplete (this torch lacks what some phases need)"
    if failed:
        return "incomplete: " + ", ".join(f"{k} ({v})" for k, v in failed.items())
    return OUTCOME_OK


_line_cache: dict[str, list[str]] = {}


def _lines(path: str) -> list[str]:
    """The file's lines; a notebook's are its code cells' as one module (the lines the
    worker reports: `onnxlint.deep.notebooks`)."""
    if path not in _line_cache:
        if path.lower().endswith(".ipynb"):
            from onnxlint.deep.notebooks import module_text

            _line_cache[path] = (module_text(path) or "").splitlines()
            return _line_cache[path]
        try:
            _line_cache[path] = Path(path).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            _line_cache[path] = []
    return _line_cache[path]


def line_span(path: str, line: int) -> Span:
    """The span of the code on a line: from its first non-blank character to its end."""
    lines = _lines(path)
    if 1 <= line <= len(lines):
        text = lines[line - 1]
        start = len(text) - len(text.lstrip()) + 1
        end = len(text.rstrip()) + 1
        if end <= start:
            end = start + 1
        return Span(line, start, line, end)
    return Span(max(line, 1), 1, max(line, 1), 1)


def declaration(target: Target) -> tuple[str, int]:
    path = target.decl_path or (target.root / "pyproject.toml")
    return str(path), target.decl_line


def violation(
    target: Target,
    code: str,
    message: str,
    path: str | None,
    line: int | None,
    notes: Any = (),
    *,
    severity: Severity | None = None,
    related: tuple[Related, ...] = (),
) -> Violation:
    if not path or not line:
        path, line = declaration(target)
        message = f"[{target.name}] {message}"
    else:
        text = _lines(path)[line - 1] if 0 < line <= len(_lines(path)) else None
        message, torch_text = reword(code, message, text)
        notes = (*notes, *torch_text)
    return Violation(
        path=path,
        span=line_span(path, line),
        code=code,
        message=message,
        severity=severity or codes.severity_for(code),
        source="deep",
        notes=tuple(str(n) for n in notes if n),
        related=related,
    )


def chain_of(target: Target, f: dict[str, Any]) -> tuple[list[str], tuple[Related, ...]]:
    """A worker finding's chain (outermost first) as a `via:` note and related locations,
    plus the target's declaration; nothing when the finding has no chain."""
    chain = [c for c in f.get("chain") or () if c.get("file") and c.get("line")]
    if not chain:
        return [], ()
    links = []
    for c in chain:
        where = f"{Path(c['file']).name}:{c['line']}"
        if str(c.get("name", "")).startswith("factory "):
            where += f" ({c['name']})"
        links.append(where)
    # every link but the finding's own place (the last one, or a line of the user's code
    # above a library's that raised: `frames.locate`'s in_project)
    at = (str(f.get("file")), f.get("line"))
    own = next((i for i, c in enumerate(chain) if (str(c["file"]), c["line"]) == at), None)
    related = [
        Related(str(c["file"]), int(c["line"]), 1, f"via {c.get('name') or 'here'}")
        for i, c in enumerate(chain)
        if i != (len(chain) - 1 if own is None else own)
    ]
    decl_path, decl_line = declaration(target)
    related.append(Related(decl_path, decl_line, 1, f"target {target.name!r} is declared here"))
    return ["via: " + " -> ".join(links)], tuple(related)


VERIFY_CODES = frozenset({"OLX810", "OLX811", "OLX820", "OLX821"})
"""Findings of the real-weights run, which have no line of the model: at the export call."""


def _export_call_site(target: Target, data: dict[str, Any]) -> tuple[str, int] | None:
    """The user's `torch.onnx.export` call of the target's model class, if the project has one."""
    model = data.get("model") or {}
    qualname = model.get("class")
    if not qualname:
        return None
    loc = model.get("class_loc") or {}
    try:
        from onnxlint.deep.callsite import export_call_for_class

        return export_call_for_class(target.root, str(qualname), loc.get("file"))
    except Exception:  # a static-analysis problem must never lose the finding
        return None


def from_worker(target: Target, end: dict[str, Any], data: dict[str, Any] | None) -> DeepResult:
    """Build the result from the worker's `end` event and (if any) its `result` payload."""
    _line_cache.clear()
    status = str(end.get("status", wire.STATUS_CRASHED))
    res = DeepResult(
        target=target,
        status=status,
        peak_rss=end.get("peak_rss"),
        wall=float(end.get("wall") or 0.0),
        detail=str(end.get("detail") or ""),
        data=data or {},
    )
    if data:
        res.phases = dict(data.get("phases") or {})
        mem = data.get("memory")
        if isinstance(mem, dict) and not mem.get("analysis_peak_bytes") and res.peak_rss:
            mem["analysis_peak_bytes"] = res.peak_rss  # not Linux: the worker's own figure
        call_sites: list[tuple[str, int] | None] = []  # looked up once, when first needed
        for f in data.get("findings") or []:
            code = codes.code_for_kind(str(f.get("kind")))
            path, line, notes = f.get("file"), f.get("line"), list(f.get("notes") or ())
            if code in VERIFY_CODES and not path:
                if not call_sites:
                    call_sites.append(_export_call_site(target, data))
                call_site = call_sites[0]
                if call_site is not None:
                    path, line = call_site
                    notes.append(
                        f"found by verifying target {target.name!r} (real random weights, "
                        "onnxruntime against eager PyTorch); this is the export call of "
                        "the same model class"
                    )
            via, related = chain_of(target, f)
            related = (
                *(
                    Related(str(r["file"]), int(r["line"]), 1, str(r.get("message") or ""))
                    for r in f.get("related") or ()
                    if r.get("file") and r.get("line")
                ),
                *related,
            )
            sev = f.get("severity")
            res.violations.append(
                violation(
                    target,
                    code,
                    str(f.get("message")),
                    path,
                    line,
                    [*via, *notes],
                    severity=Severity(sev) if sev in ("error", "warning", "info") else None,
                    related=related,
                )
            )
        budget = _budget_finding(target, data)
        if budget is not None:
            res.violations.append(budget)
    if status in codes.STATUS_TO_CODE:
        notes = [
            "The analysis ran in a separate process; onnxlint and the editor are unaffected, "
            "and the next analysis starts a fresh worker.",
        ]
        if status == wire.STATUS_TIMEOUT:
            notes.append("Raise the target's `timeout` (seconds) if the model is just big.")
        if status == wire.STATUS_MEMORY:
            notes.append("Raise the target's `memory_limit_mb` if the model needs more.")
        tail = str(end.get("stderr_tail") or "")
        loc = (data or {}).get("factory_loc") or {}
        path, line = loc.get("file"), loc.get("line")
        if not path:
            found = factory_location(target)
            if found is not None:
                path, line = str(found[0]), found[1]
        exited = _sys_exit(tail, target.root) if status == wire.STATUS_CRASHED else None
        if exited is not None:
            code_text, where = exited
            res.detail = f"{SYS_EXIT_DETAIL}{code_text})"
            notes.insert(
                0,
                "sys.exit() raises SystemExit, which ends the analysis as it would end any "
                "program; model and factory code must not call it",
            )
            if where is not None:
                path, line = where
        step = _TORCH_STEPS.get(str(end.get("phase") or ""))
        if status == wire.STATUS_CRASHED and exited is None and step is not None:
            res.detail = f"{res.detail} in {step}" if res.detail else f"crashed in {step}"
            same = (
                "torch.onnx.export runs the same step and crashes there too"
                if "onnx" in step
                else "torch.compile and a strict torch.export run it too"
            )
            notes.insert(
                0,
                f"torch itself crashed in {step}, on this model; {same}. It is a torch bug "
                "to report with the model (one trigger in torch 2.13: `.data` of a buffer "
                "or parameter in forward; use the tensor itself or `.detach()`).",
            )
        if tail.strip():
            notes.append("worker stderr (last lines):\n" + tail.strip("\n"))
        res.violations.append(
            violation(
                target,
                codes.STATUS_TO_CODE[status],
                f"analysis of {target.name!r} stopped: {res.detail or status}",
                path,
                line,
                notes,
            )
        )
    res.violations.sort(key=Violation.sort_key)
    return res


# The worker's phases that run one of torch.onnx.export's own steps.
_TORCH_STEPS = {
    "explain": "torch._dynamo.explain",
    "export": "torch.export (step 1/3 of torch.onnx.export)",
    "decompose": "the ONNX decompositions (step 2/3 of torch.onnx.export)",
    "translate": "the ONNX translation (step 3/3 of torch.onnx.export)",
}


def gb(n: float) -> str:
    """Bytes in decimal units, as memory budgets are written ("16GB")."""
    if n >= 1e9:
        return f"{n / 1e9:.2f} GB"
    if n >= 1e6:
        return f"{n / 1e6:.1f} MB"
    if n >= 1e3:
        return f"{n / 1e3:.0f} kB"
    return f"{n:.0f} B"


def _budget_finding(target: Target, data: dict[str, Any]) -> Violation | None:
    """OLX819 when one real run of the model needs more than the budget: an error at each
    export call of the model's class that runs the model (TorchScript exporter, tracing),
    else a warning at the target."""
    mem = data.get("memory") or {}
    peak = mem.get("run_peak_bytes")
    if not isinstance(peak, int) or peak <= 0:
        return None
    budget = target.memory_budget or mem.get("machine_bytes")
    if not isinstance(budget, int) or peak <= budget:
        return None
    whose = (
        f"the target's `memory-budget` of {gb(budget)}"
        if target.memory_budget
        else f"this machine's memory ({gb(budget)})"
    )
    at = mem.get("run_peak_op") or {}
    where = f" at `{at.get('op')}`" if at.get("op") else ""
    if at.get("file") and at.get("line"):
        where += f" ({Path(str(at['file'])).name}:{at['line']})"
    analysis = mem.get("analysis_peak_bytes")
    notes = [
        f"weights {gb(int(mem.get('weights_bytes') or 0))}, inputs "
        f"{gb(int(mem.get('inputs_bytes') or 0))}, the rest activations; the peak is{where}",
        "The TorchScript exporter (dynamo=False) and torch.jit.trace run the model with real "
        "weights to record it, so they need this memory; the dynamo exporter can capture it "
        "under FakeTensorMode and apply the weights afterwards"
        + (f" (this analysis, which does that, peaked at {gb(analysis)})" if analysis else "")
        + ".",
    ]
    if mem.get("run_partial"):
        notes.append(
            f"the run stopped early on fake tensors ({mem['run_partial']}); the real peak may be "
            "higher"
        )
    head = f"running the model once at the example inputs needs {gb(peak)} of tensor memory"
    sites: list[tuple[str, int, Any]] = []
    model = data.get("model") or {}
    if model.get("class"):
        try:
            from onnxlint.deep.callsite import export_calls_for_class
            from onnxlint.semantic.calls import ExportKind

            sites = export_calls_for_class(
                target.root,
                str(model["class"]),
                (model.get("class_loc") or {}).get("file"),
                {k for k in ExportKind if k.is_torchscript},
                first=True,
            )
        except Exception:  # a static-analysis problem must never lose the finding
            sites = []
    if sites:
        path, line, kind = sites[0]
        how = "torch.jit.trace" if kind.value == "jit-trace" else "this TorchScript export"
        return violation(
            target,
            codes.RUN_MEMORY_OVER_BUDGET,
            f"{how} will not fit: {head}, over {whose}; `torch.onnx.export(..., dynamo=True)` will",
            path,
            line,
            [*notes, f"measured by the deep analysis of target {target.name!r}"],
            severity=Severity.ERROR,
        )
    return violation(
        target,
        codes.RUN_MEMORY_OVER_BUDGET,
        f"{head}, over {whose}: tracing or the TorchScript exporter will not "
        "fit; the dynamo exporter (`torch.onnx.export(..., dynamo=True)`) will",
        None,
        None,
        notes,
    )


_FRAME_RE = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)')
_EXIT_RE = re.compile(r"^SystemExit(?::\s*(?P<code>.*))?$")


def _sys_exit(tail: str, root: Path) -> tuple[str, tuple[str, int] | None] | None:
    """`sys.exit(3)` in user code, read from the traceback the analysis process printed:
    the code as the user passed it, and the innermost frame of the project's files."""
    lines = [line.rstrip() for line in tail.splitlines() if line.strip()]
    if not lines:
        return None
    m = _EXIT_RE.match(lines[-1].strip())
    if m is None:
        return None
    code = (m.group("code") or "").strip() or "None"
    if not re.fullmatch(r"-?\d+|None", code):
        code = repr(code)  # sys.exit("message")
    where: tuple[str, int] | None = None
    base = Path(root).resolve()
    for line in lines:
        fm = _FRAME_RE.match(line)
        if fm is None:
            continue
        file = Path(fm.group("file"))
        try:
            file.resolve().relative_to(base)
        except (ValueError, OSError):
            continue
        if "site-packages" not in file.parts and "onnxlint" not in file.parts[-3:-1]:
            where = (str(file.resolve()), int(fm.group("line")))
    return code, where


def error_result(target: Target, detail: str) -> DeepResult:
    """The worker could not be started or answered nonsense: one finding, no crash."""
    res = DeepResult(target=target, status="error", detail=detail)
    res.violations.append(
        violation(target, "OLX813", f"deep analysis unavailable: {detail}", None, None)
    )
    return res


def max_severity(results: list[DeepResult]) -> Severity | None:
    best: Severity | None = None
    for r in results:
        for v in r.violations:
            if best is None or v.severity.rank > best.rank:
                best = v.severity
    return best
