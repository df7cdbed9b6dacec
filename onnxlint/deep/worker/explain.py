"""Phase 2, explain: the graph breaks `torch._dynamo.explain` finds, as it lists them.

Graph breaks are a `torch.compile` / strict `torch.export` notion:
`torch.onnx.export` captures with non-strict `torch.export`, which runs Python
and is not stopped by a break (a `print`, an LSTM). So a break is reported at
info severity, unless the target asks for a strict export or compile
(`exporter.strict = true`), where it is a warning. The breaks are explain's own
`break_reasons` (same count, reasons and lines), each at its innermost line
outside torch, library or not.
"""

from __future__ import annotations

import contextlib
import re
import traceback
from typing import Any

from . import torch_internals, wire
from .record import Analysis, cause, finding, first_line

_GB_URL = re.compile(r"https://\S+/gb/(gb\d+)\.html")


MAX_FLIPS = 3
"""Runs again with a condition decided the other way, when the placeholder decision led
into the model's own `raise`."""


def run(rec: Analysis) -> None:
    explain_out: Any = None
    decisions = torch_internals.Decisions()
    for attempt in range(MAX_FLIPS + 1):
        seen: list[Any] = []  # break reasons found before a line that stops the search
        try:
            with torch_internals.lenient_scalars(rec.fake_mode):
                explain_out = torch_internals.explain(
                    rec.model, rec.args, rec.kwargs, rec.fake_mode, seen, decisions
                )
            break
        except torch_internals.Unsupported as e:
            rec.add(finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
            rec.failed["explain"] = "unsupported torch"
            return
        except Exception as e:
            flip = _decision_that_raised(e, decisions)
            if flip is not None and attempt < MAX_FLIPS:
                decisions.flipped.add(flip)
                decisions.made.clear()
                continue
            _stopped(rec, e, seen)
            break
        finally:
            with contextlib.suppress(Exception):
                torch_internals.reset_dynamo()
    if decisions.flipped:
        rec.result["explain_decided_other_way"] = sorted(
            f"{file}:{line}" for file, line in decisions.flipped
        )
    if explain_out is None:
        return
    reasons = list(getattr(explain_out, "break_reasons", None) or ())
    _report_breaks(rec, reasons)
    rec.result["explain"] = {
        "graphs": int(getattr(explain_out, "graph_count", 0)),
        "breaks": len(reasons),
        "ops": int(getattr(explain_out, "op_count", 0)),
        "strict": bool(rec.target.get("strict")),
    }


def _stopped(rec: Analysis, e: BaseException, seen: list[Any]) -> None:
    """The run raised: keep the breaks found so far; say where the search stopped, unless
    it is the model's own error (the export phase reports it, once, at its line)."""
    _report_breaks(rec, seen)
    if not torch_internals.is_fake_limitation(e):
        rec.failed["explain"] = f"{type(e).__name__}"
        rec.result["skipped"]["explain"] = f"{type(e).__name__}: {first_line(str(e))}"
        return
    rec.add(
        rec.place_exc(
            finding(
                wire.KIND_FAKE_MODE_LIMIT,
                f"graph-break search stopped here: {cause(e)}",
                notes=[
                    "This code cannot run on fake tensors (no data), so the breaks "
                    "after it were not looked for. `.numpy()` and data-dependent "
                    "Python values are the usual causes."
                ],
            ),
            e,
        )
    )
    rec.failed["explain"] = "stopped on fake tensors"


def _decision_that_raised(
    e: BaseException, decisions: torch_internals.Decisions
) -> tuple[str, int] | None:
    """The last yes/no condition decided at a placeholder in the file of the model's own
    `raise` statement that ended the run, when there is one not yet flipped: a
    consistency check (`if n != len(x): raise ValueError`) that the placeholder failed
    and real data passes (pytorch#150891, Llama4's image-token merge)."""
    tb = traceback.extract_tb(e.__traceback__)
    if not tb:
        return None
    last = tb[-1]
    if torch_internals.internal_file(last.filename) or not (last.line or "").startswith("raise"):
        return None
    for line, _answer in reversed(decisions.made):
        if line[0] == last.filename and line[1] < (last.lineno or 0):
            return None if line in decisions.flipped else line
    return None


def _report_breaks(rec: Analysis, reasons: list[Any]) -> None:
    """One finding per line and reason (a count when several breaks share them)."""
    strict = bool(rec.target.get("strict"))
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in reasons:
        text = str(getattr(r, "reason", r))
        f = _graph_break_finding(text, strict)
        rec.place_at(f, list(getattr(r, "user_stack", None) or ()))
        key = (f["file"], f["line"], f["message"])
        if key in groups:
            groups[key]["count"] += 1
            continue
        f["count"] = 1
        groups[key] = f
    for f in groups.values():
        if f["count"] > 1:
            f["message"] += f" ({f['count']} breaks here)"
        rec.add(f)


def _graph_break_finding(reason: str, strict: bool) -> dict[str, Any]:
    lines = [ln.strip() for ln in reason.splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("Encountered graph break")]
    title = lines[0] if lines else "graph break"
    explanation = next(
        (ln[len("Explanation:") :].strip() for ln in lines if ln.startswith("Explanation:")), ""
    )
    hints = [ln[len("Hint:") :].strip() for ln in lines if ln.startswith("Hint:")]
    hints = [h for h in hints if "report an issue to PyTorch" not in h]
    m = _GB_URL.search(reason)
    url = m.group(0) if m else None
    msg = f"graph break: {title}"
    if explanation:
        msg += f" ({explanation})"
    if strict:
        path = (
            "The target asks for a strict export or compile (`exporter.strict`): this break "
            "stops strict torch.export and splits torch.compile's graph."
        )
    else:
        path = (
            "This matters for torch.compile and strict torch.export only: torch.onnx.export "
            "captures with non-strict torch.export, which runs this Python and is not stopped "
            "by a graph break. Set `exporter.strict = true` on the target to rate it a warning."
        )
    notes = [path, *hints] + ([url] if url else [])
    return finding(
        wire.KIND_GRAPH_BREAK,
        msg,
        notes=notes,
        gb_type=m.group(1) if m else None,
        url=url,
        severity="warning" if strict else "info",
    )
