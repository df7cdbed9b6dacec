"""DeepResult: one target's analysis as Violations grouped by file, plus report data.

Converts the worker's findings (kind, message, file, line) into `Violation`s
with `source="deep"`, spanning the line's code (not its indentation). A finding
without a user line lands on the target's declaration (pyproject.toml table or
the `# onnxlint: target` function), so nothing is ever dropped.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.deep import codes
from onnxlint.deep.targets import Target, factory_location
from onnxlint.deep.worker import wire
from onnxlint.violation import Severity, Span, Violation


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
        return self.status == wire.STATUS_OK

    def to_json(self) -> dict[str, Any]:
        return {
            "target": self.target.name,
            "status": self.status,
            "detail": self.detail,
            "cached": self.cached,
            "wall": self.wall,
            "peak_rss": self.peak_rss,
            "phases": self.phases,
            "violations": [v.to_json() for v in self.violations],
            "data": self.data,
        }


_line_cache: dict[str, list[str]] = {}


def _lines(path: str) -> list[str]:
    if path not in _line_cache:
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
    target: Target, code: str, message: str, path: str | None, line: int | None, notes: Any = ()
) -> Violation:
    if not path or not line:
        path, line = declaration(target)
        message = f"[{target.name}] {message}"
    return Violation(
        path=path,
        span=line_span(path, line),
        code=code,
        message=message,
        severity=codes.severity_for(code),
        source="deep",
        notes=tuple(str(n) for n in notes if n),
    )


VERIFY_CODES = frozenset({"OLX810", "OLX811"})


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
            res.violations.append(violation(target, code, str(f.get("message")), path, line, notes))
    if status in codes.STATUS_TO_CODE:
        notes = [
            "The analysis ran in a separate process; onnxlint and the editor are unaffected, "
            "and the next analysis starts a fresh worker.",
        ]
        if status == wire.STATUS_TIMEOUT:
            notes.append("Raise the target's `timeout` (seconds) if the model is just big.")
        if status == wire.STATUS_MEMORY:
            notes.append("Raise the target's `memory_limit_mb` if the model needs more.")
        tail = end.get("stderr_tail")
        if tail:
            notes.append("worker stderr (last lines):\n" + str(tail))
        loc = (data or {}).get("factory_loc") or {}
        path, line = loc.get("file"), loc.get("line")
        if not path:
            found = factory_location(target)
            if found is not None:
                path, line = str(found[0]), found[1]
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
