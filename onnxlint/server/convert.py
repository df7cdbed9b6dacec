"""Engine results -> LSP types: positions, diagnostics, text edits.

The engine counts columns in code points (1-based, end exclusive); LSP counts them in the
negotiated position encoding, UTF-16 code units unless the client offered another one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, overload

from lsprotocol import types

from onnxlint.core.violation import Edit, Fix, FixSafety, Violation, line_starts

SOURCE = "onnxlint"
UTF8 = types.PositionEncodingKind.Utf8.value
UTF32 = types.PositionEncodingKind.Utf32.value

_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


class Lines:
    """A text's lines, for converting code-point columns to the client's units and back."""

    def __init__(self, text: str, encoding: str = types.PositionEncodingKind.Utf16) -> None:
        self.text = text
        self.lines = _LazyLines(text)
        self.encoding = str(getattr(encoding, "value", encoding))

    def _units(self, s: str) -> int:
        if s.isascii() or self.encoding == UTF32:
            return len(s)
        if self.encoding == UTF8:
            return len(s.encode("utf-8"))
        return len(s.encode("utf-16-le")) // 2

    def position(self, line: int, column: int) -> types.Position:
        """1-based line, 1-based code-point column -> an LSP Position (clamped to the text)."""
        n = len(self.lines)
        if line < 1:
            return types.Position(0, 0)
        if line > n:
            # Past the last line: the end of the text.
            if n and not self.text.endswith(("\n", "\r")):
                return types.Position(n - 1, self._units(self.lines[-1]))
            return types.Position(n, 0)
        text = self.lines[line - 1]
        col = max(0, min(column - 1, len(text)))
        return types.Position(line - 1, self._units(text[:col]))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        return types.Range(self.position(line, column), self.position(end_line, end_column))

    def code_point_column(self, pos: types.Position) -> tuple[int, int]:
        """An LSP Position -> (1-based line, 1-based code-point column)."""
        if pos.line >= len(self.lines):
            return pos.line + 1, 1
        text = self.lines[pos.line]
        if text.isascii() or self.encoding == UTF32:
            return pos.line + 1, min(pos.character, len(text)) + 1
        units = 0
        for i, ch in enumerate(text):
            if units >= pos.character:
                return pos.line + 1, i + 1
            units += self._units(ch)
        return pos.line + 1, len(text) + 1

    def line_text(self, line: int) -> str:
        return self.lines[line - 1] if 0 < line <= len(self.lines) else ""


class _LazyLines(Sequence[str]):
    """The lines without their breaks, broken where the engine and LSP break them
    (`violation.line_starts`; `str.splitlines` also breaks at \f, \v, \x1c...). Each line
    is cut when asked for: a publish reads the few lines that have findings, not 4,000."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts = starts = line_starts(text)
        self._n = len(starts) - (0 if starts[-1] < len(text) else 1)

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> list[str]: ...
    def __getitem__(self, i: int | slice) -> str | list[str]:
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(self._n))]
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(i)
        starts = self._starts
        end = starts[i + 1] if i + 1 < len(starts) else len(self._text)
        return self._text[starts[i] : end].rstrip("\r\n")


def severity(v: Violation, override: str | None) -> types.DiagnosticSeverity:
    return _SEVERITY.get(override or v.severity.value, types.DiagnosticSeverity.Warning)


def diagnostic(
    v: Violation, lines: Lines, severity_override: str | None = None
) -> types.Diagnostic:
    s = v.span
    data: dict[str, Any] = {"source": v.source}
    if v.fix is not None:
        data["fix"] = v.fix.to_json()
    message = v.message
    if v.notes:
        message = message + "\n" + "\n".join(v.notes)
    return types.Diagnostic(
        range=lines.range(s.line, s.column, s.end_line, s.end_column),
        message=message,
        severity=severity(v, severity_override),
        code=v.code,
        code_description=types.CodeDescription(href=v.url),
        source=SOURCE,
        tags=[types.DiagnosticTag.Deprecated] if v.deprecated else None,
        related_information=[
            types.DiagnosticRelatedInformation(
                location=types.Location(
                    uri=Path(r.path).resolve().as_uri(),
                    range=types.Range(
                        start=types.Position(
                            line=max(r.line - 1, 0), character=max(r.column - 1, 0)
                        ),
                        end=types.Position(line=max(r.line - 1, 0), character=max(r.column - 1, 0)),
                    ),
                ),
                message=r.message,
            )
            for r in v.related
        ]
        or None,
        data=data,
    )


def text_edits(edits: Iterable[Edit], lines: Lines) -> list[types.TextEdit]:
    out = []
    for e in sorted(edits, key=lambda e: (e.span.line, e.span.column)):
        s = e.span
        out.append(types.TextEdit(lines.range(s.line, s.column, s.end_line, s.end_column), e.text))
    return out


def whole_text_edit(old: str, new: str, lines: Lines) -> list[types.TextEdit]:
    """One edit replacing only the lines that differ between `old` and `new`."""
    if old == new:
        return []
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    start = 0
    while start < len(a) and start < len(b) and a[start] == b[start]:
        start += 1
    end_a, end_b = len(a), len(b)
    while end_a > start and end_b > start and a[end_a - 1] == b[end_b - 1]:
        end_a -= 1
        end_b -= 1
    replacement = "".join(b[start:end_b])
    rng = types.Range(lines.position(start + 1, 1), lines.position(end_a + 1, 1))
    return [types.TextEdit(rng, replacement)]


def fix_is_offered(fix: Fix | None) -> bool:
    """Whether a fix can be offered as a quick fix (display-only fixes are not edits)."""
    return fix is not None and fix.safety is not FixSafety.DISPLAY and fix.changes


def overlaps(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges touch (an empty range at a diagnostic's edge counts)."""
    a_start, a_end = (a.start.line, a.start.character), (a.end.line, a.end.character)
    b_start, b_end = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return a_start <= b_end and b_start <= a_end


def contains(rng: types.Range, pos: types.Position) -> bool:
    p = (pos.line, pos.character)
    return (rng.start.line, rng.start.character) <= p <= (rng.end.line, rng.end.character)


def sort_key(d: types.Diagnostic) -> tuple[int, int, str]:
    return (d.range.start.line, d.range.start.character, str(d.code))


def diagnostics(
    violations: Sequence[Violation], lines: Lines, severity_for: Any
) -> list[types.Diagnostic]:
    return [diagnostic(v, lines, severity_for(v.code)) for v in violations]
