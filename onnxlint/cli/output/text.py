"""ruff-style text output: `path:line:col: CODE message`, a code frame, the fix hint."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence

from onnxlint.core.violation import Severity, Violation

_COLORS = {
    "bold": "\x1b[1m",
    "red": "\x1b[31m",
    "yellow": "\x1b[33m",
    "blue": "\x1b[34m",
    "cyan": "\x1b[36m",
    "dim": "\x1b[2m",
    "green": "\x1b[32m",
    "reset": "\x1b[0m",
}
_SEVERITY_COLOR = {Severity.ERROR: "red", Severity.WARNING: "yellow", Severity.INFO: "blue"}


def use_color(stream_isatty: bool) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream_isatty


class Painter:
    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles:
            return text
        return "".join(_COLORS[s] for s in styles) + text + _COLORS["reset"]


def label(v: Violation) -> str:
    """`error[OLX402]`: the severity in words, so a log without colour tells them apart."""
    return f"{v.severity.value}[{v.code}]"


def fix_marker(v: Violation) -> str:
    if v.fix is None:
        return ""
    return {"safe": "[*]", "unsafe": "[~]", "display": "[-]"}[v.fix.safety.value]


def render_violation(
    v: Violation, lines: Sequence[str] | None, paint: Painter, show_frame: bool = True
) -> str:
    fix_mark = f" {fix_marker(v)}" if v.fix is not None else ""
    head = (
        f"{paint(v.path, 'bold')}{v.location[len(v.path) :]}: "
        f"{paint(label(v), 'bold', _SEVERITY_COLOR[v.severity])}"
        f"{paint(fix_mark, 'cyan')} {v.message}"
    )
    out = [head]
    if show_frame and lines:
        out.extend(_frame(v, lines, paint))
    for note in v.notes:
        out.append(f"  {paint('=', 'blue')} note: {note}")
    if v.fix is not None:
        how = "--fix" if v.fix.safety.value == "safe" else "--fix --unsafe-fixes"
        if v.fix.safety.value == "display":
            how = "by hand"
        out.append(f"  {paint('=', 'blue')} help: {v.fix.title} ({how})")
    out.append(f"  {paint('=', 'blue')} docs: {v.url}")
    return "\n".join(out)


def _frame(v: Violation, lines: Sequence[str], paint: Painter) -> list[str]:
    first = max(1, v.line - 1)
    last = min(len(lines), min(v.span.end_line, v.line + 3) + 1)
    width = len(str(last))
    gutter = paint(" " * width + " |", "blue")
    out = [gutter]
    for n in range(first, last + 1):
        text = lines[n - 1].rstrip("\n").expandtabs(4) if n - 1 < len(lines) else ""
        out.append(f"{paint(str(n).rjust(width) + ' |', 'blue')} {text}")
        if n == v.line:
            start = v.column - 1
            end = v.span.end_column - 1 if v.span.end_line == v.line else len(text)
            marks = "^" * max(1, end - start)
            color = _SEVERITY_COLOR[v.severity]
            out.append(f"{gutter} {' ' * start}{paint(marks + ' ' + v.code, color, 'bold')}")
    out.append(gutter)
    return out


def render_text(
    violations: Sequence[Violation],
    read_lines: Callable[[Violation], Sequence[str] | None],
    paint: Painter,
    *,
    fixed: int = 0,
    files_checked: int = 0,
    quiet: bool = False,
    unsafe_fixes: bool = False,
    fixing: bool = False,
    created: int = 0,
) -> str:
    blocks = []
    if not quiet:
        for v in violations:
            blocks.append(render_violation(v, read_lines(v), paint))
    summary = summary_line(
        violations, fixed, files_checked, unsafe_fixes, paint, fixing=fixing, created=created
    )
    if quiet:
        return "\n".join(f"{v.location}: {label(v)} {v.message}" for v in violations) + (
            "\n" if violations else ""
        )
    return "\n\n".join(blocks) + ("\n\n" if blocks else "") + summary + "\n"


def summary_line(
    violations: Sequence[Violation],
    fixed: int,
    files: int,
    unsafe_fixes: bool,
    paint: Painter,
    fixing: bool = False,
    created: int = 0,
) -> str:
    """The closing lines. `unsafe_fixes` without `fixing` (ruff's `--unsafe-fixes` alone)
    shows the unsafe fixes as available; with `fixing` they were applied, and what is left
    did not hold up."""
    n = len(violations)
    parts = []
    if fixed:
        parts.append(paint(f"Fixed {fixed} problem{'s' * (fixed != 1)}.", "green", "bold"))
    if created:
        parts.append(
            paint(
                f"{created} of these findings {'were' if created != 1 else 'was'} brought "
                "about by the fixes just applied (each has a note saying so); review "
                f"{'them' if created != 1 else 'it'}.",
                "yellow",
            )
        )
    if n == 0:
        parts.append(
            paint(f"All checks passed ({files} file{'s' * (files != 1)} checked).", "green")
        )
        return "\n".join(parts)
    sev = Counter(v.severity for v in violations)
    detail = ", ".join(f"{sev[s]} {s.value}{'s' * (sev[s] != 1)}" for s in Severity if sev[s])
    safe = sum(1 for v in violations if v.fix and v.fix.safety.value == "safe")
    unsafe = sum(1 for v in violations if v.fix and v.fix.safety.value == "unsafe")
    line = (
        f"Found {n} problem{'s' * (n != 1)} ({detail}) in {files} file{'s' * (files != 1)} checked."
    )
    parts.append(paint(line, "bold"))
    if safe:
        parts.append(f"[*] {safe} fixable with `onnxlint check --fix`.")
    if unsafe and not (unsafe_fixes and fixing):
        more = "more " if safe else ""
        parts.append(f"[~] {unsafe} {more}fixable with `onnxlint check --fix --unsafe-fixes`.")
    return "\n".join(parts)


def statistics(violations: Sequence[Violation]) -> list[tuple[str, int, str]]:
    """(code, count, fix marker) per code, most frequent first. The marker is `[*]` when
    some finding has a safe fix, else `[~]` when some has an unsafe one."""
    counts = Counter(v.code for v in violations)
    marks: dict[str, set[str]] = {}
    for v in violations:
        if v.fix is not None:
            marks.setdefault(v.code, set()).add(fix_marker(v))
    rows = []
    for code, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        have = marks.get(code, set())
        mark = next((m for m in ("[*]", "[~]", "[-]") if m in have), "")
        rows.append((code, n, mark))
    return rows


def render_statistics(violations: Sequence[Violation], names: dict[str, str]) -> str:
    rows = [
        f"{n:>6}  {code}  {mark or '   '} {names.get(code, '')}"
        for code, n, mark in statistics(violations)
    ]
    if rows:
        rows.append(f"{len(violations):>6}  total")
    return "\n".join(rows) + ("\n" if rows else "")
