"""ruff-style text output: `path:line:col: CODE message`, a code frame, the fix hint."""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Sequence

from onnxlint.violation import Severity, Violation

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


def render_violation(
    v: Violation, lines: Sequence[str] | None, paint: Painter, show_frame: bool = True
) -> str:
    fix_mark = ""
    if v.fix is not None:
        fix_mark = " [*]" if v.fix.safety.value == "safe" else " [~]"
    head = (
        f"{paint(v.path, 'bold')}:{v.line}:{v.column}: "
        f"{paint(v.code, 'bold', _SEVERITY_COLOR[v.severity])}"
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
    read_lines: Callable[[str], Sequence[str] | None],
    paint: Painter,
    *,
    fixed: int = 0,
    files_checked: int = 0,
    quiet: bool = False,
    unsafe_fixes: bool = False,
) -> str:
    blocks = []
    if not quiet:
        for v in violations:
            blocks.append(render_violation(v, read_lines(v.path), paint))
    summary = summary_line(violations, fixed, files_checked, unsafe_fixes, paint)
    if quiet:
        return "\n".join(
            f"{v.path}:{v.line}:{v.column}: {v.code} {v.message}" for v in violations
        ) + ("\n" if violations else "")
    return "\n\n".join(blocks) + ("\n\n" if blocks else "") + summary + "\n"


def summary_line(
    violations: Sequence[Violation], fixed: int, files: int, unsafe_fixes: bool, paint: Painter
) -> str:
    n = len(violations)
    parts = []
    if fixed:
        parts.append(paint(f"Fixed {fixed} problem{'s' * (fixed != 1)}.", "green", "bold"))
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
    if unsafe and not unsafe_fixes:
        parts.append(f"[~] {unsafe} more fixable with `--fix --unsafe-fixes`.")
    return "\n".join(parts)


def render_statistics(violations: Sequence[Violation], names: dict[str, str]) -> str:
    counts = Counter(v.code for v in violations)
    fixable = Counter(v.code for v in violations if v.fix and v.fix.safety.value == "safe")
    rows = []
    for code, n in counts.most_common():
        mark = "[*]" if fixable[code] else "   "
        rows.append(f"{n:>6}  {code}  {mark} {names.get(code, '')}")
    return "\n".join(rows) + ("\n" if rows else "")
