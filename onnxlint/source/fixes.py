"""Applying fixes: non-overlapping edits, a parse check and a re-check, then an atomic write.

A fix is kept only if the fixed text still parses and re-checking shows fewer findings of
the fixed code than before; otherwise it is dropped and the others are tried without it.
Files are written through a temporary file in the same folder and renamed over the
original, keeping its encoding, line endings and permissions.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import libcst as cst

from onnxlint.core.violation import Edit, Fix, FixSafety, Violation, line_starts
from onnxlint.source.magics import mask_cell
from onnxlint.source.notebook import Cell

Checker = Callable[[str], list[Violation]]


@dataclass
class FixResult:
    text: str
    applied: list[Violation] = field(default_factory=list)
    remaining: list[Violation] = field(default_factory=list)
    rejected: list[Violation] = field(default_factory=list)  # fixes that did not hold up


def is_applicable(fix: Fix | None, unsafe: bool) -> bool:
    if fix is None:
        return False
    if fix.safety is FixSafety.SAFE:
        return True
    return unsafe and fix.safety is FixSafety.UNSAFE


def line_offsets(text: str) -> list[int]:
    """Offset of the start of each line (index 0 is line 1), plus the end of the text."""
    offsets = line_starts(text)
    if not text.endswith(("\n", "\r")):
        offsets.append(len(text))
    return offsets


def _offset(offsets: list[int], text: str, line: int, column: int) -> int:
    if line - 1 >= len(offsets):
        return len(text)
    return min(offsets[line - 1] + column - 1, len(text))


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits (positions refer to `text`)."""
    offsets = line_offsets(text)
    spans = sorted(
        (
            (
                _offset(offsets, text, e.span.line, e.span.column),
                _offset(offsets, text, e.span.end_line, e.span.end_column),
                e.text,
            )
            for e in edits
        ),
        key=lambda t: (t[0], t[1]),
    )
    out: list[str] = []
    pos = 0
    for start, end, new in spans:
        if start < pos:
            raise ValueError("overlapping edits")
        out.append(text[pos:start])
        out.append(new)
        pos = end
    out.append(text[pos:])
    return "".join(out)


def _fix_range(fix: Fix) -> tuple[tuple[int, int], tuple[int, int]]:
    starts = [(e.span.line, e.span.column) for e in fix.edits]
    ends = [(e.span.end_line, e.span.end_column) for e in fix.edits]
    return min(starts), max(ends)


def _non_overlapping(violations: Sequence[Violation]) -> list[Violation]:
    chosen: list[Violation] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    for v in sorted(violations, key=Violation.sort_key):
        assert v.fix is not None
        lo, hi = _fix_range(v.fix)
        if all(hi < a or lo > b for a, b in taken):  # strictly apart: no touching edits
            chosen.append(v)
            taken.append((lo, hi))
    return chosen


def parses(text: str) -> bool:
    try:
        cst.parse_module(text)
    except Exception:
        return False
    return True


def fix_text(
    text: str,
    violations: list[Violation],
    check: Checker,
    *,
    unsafe: bool = False,
    only: Callable[[Violation], bool] | None = None,
    max_passes: int = 8,
    valid: Callable[[str], bool] | None = None,
) -> FixResult:
    """Apply every applicable fix, pass after pass, keeping only fixes that hold up
    (`valid`: whether a fixed text still parses; a notebook cell's masks its magics)."""
    valid = valid or parses
    result = FixResult(text)
    current = violations
    for _ in range(max_passes):
        candidates = [
            v for v in current if is_applicable(v.fix, unsafe) and (only is None or only(v))
        ]
        candidates = [v for v in candidates if v not in result.rejected]
        if not candidates:
            break
        batch = _non_overlapping(candidates)
        new_text, new_violations, good = _try_batch(result.text, current, batch, check, valid)
        if not good:
            # Find the culprits one by one.
            kept = []
            for v in batch:
                t, nv, ok = _try_batch(result.text, current, [v], check, valid)
                if ok:
                    result.text, current = t, nv
                    kept.append(v)
                    break  # positions changed: start a new pass
                result.rejected.append(v)
            result.applied.extend(kept)
            if not kept and all(v in result.rejected for v in candidates):
                break
            continue
        result.text, current = new_text, new_violations
        result.applied.extend(batch)
    result.remaining = current
    return result


def _try_batch(
    text: str,
    before: list[Violation],
    batch: list[Violation],
    check: Checker,
    valid: Callable[[str], bool],
) -> tuple[str, list[Violation], bool]:
    edits = [e for v in batch for e in (v.fix.edits if v.fix else ())]
    try:
        new_text = apply_edits(text, edits)
    except ValueError:
        return text, before, False
    if new_text == text or not valid(new_text):
        return text, before, False
    after = check(new_text)
    count_before = Counter(v.code for v in before)
    count_after = Counter(v.code for v in after)
    for code, fixed in Counter(v.code for v in batch).items():
        if count_after[code] > count_before[code] - fixed:
            return text, before, False
    return new_text, after, True


# --------------------------------------------------------------------------- notebooks


@dataclass
class CellsFixResult:
    """Fixed notebook cells: the new source of each changed cell (by index)."""

    sources: dict[int, str] = field(default_factory=dict)
    applied: list[Violation] = field(default_factory=list)
    remaining: list[Violation] = field(default_factory=list)


def fix_cells(
    cells: Sequence[Cell],
    violations: list[Violation],
    check: Callable[[list[Cell]], list[Violation]],
    *,
    unsafe: bool = False,
    only: Callable[[Violation], bool] | None = None,
) -> CellsFixResult:
    """Apply the fixes of a notebook's findings cell by cell (`check` checks the cells as
    one module): each fix edits one cell's text, parsed with its IPython syntax masked,
    and must hold up when the whole notebook is checked again."""
    current = list(cells)
    out = CellsFixResult()
    found = violations
    wanted = sorted(
        {v.cell for v in violations if v.cell is not None and is_applicable(v.fix, unsafe)}
    )
    for number in wanted:
        i = next((k for k, c in enumerate(current) if c.index == number - 1), None)
        if i is None:
            continue
        cell = current[i]

        def check_cell(text: str, i: int = i, number: int = number) -> list[Violation]:
            trial = [*current[:i], replace(current[i], source=text), *current[i + 1 :]]
            return [v for v in check(trial) if v.cell == number]

        mine = [v for v in found if v.cell == number]
        result = fix_text(
            cell.source, mine, check_cell, unsafe=unsafe, only=only, valid=cell_parses
        )
        if result.text != cell.source:
            current[i] = replace(cell, source=result.text)
            out.sources[cell.index] = result.text
            out.applied.extend(result.applied)
            found = check(current)
    out.remaining = found
    return out


def cell_parses(text: str) -> bool:
    """Whether a notebook cell's text parses, its IPython syntax masked."""
    masked = mask_cell(text)
    return masked.python and parses(masked.text)


# --------------------------------------------------------------------------- file I/O


@dataclass
class SourceFile:
    """A file's text with what is needed to write it back the way it was."""

    path: Path
    text: str
    encoding: str
    newline: str  # the file's line ending, restored on write
    bom: bool


def read_source(path: Path) -> SourceFile:
    """Read a Python file as text (UTF-8, or a PEP 263 coding cookie). Raises on failure."""
    raw = path.read_bytes()
    bom = raw.startswith(b"\xef\xbb\xbf")
    if bom:
        raw = raw[3:]
    encoding = _coding_cookie(raw) or "utf-8"
    text = raw.decode(encoding)
    newline = "\r\n" if "\r\n" in text else ("\r" if "\r" in text else "\n")
    if newline != "\n":
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return SourceFile(path, text, encoding, newline, bom)


def _coding_cookie(raw: bytes) -> str | None:
    import re

    for line in raw.split(b"\n")[:2]:
        m = re.match(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", line)
        if m:
            name = m.group(1).decode("ascii")
            try:
                "".encode(name)
            except LookupError:
                return None
            return name
    return None


def write_source(src: SourceFile, new_text: str) -> None:
    """Write atomically, keeping encoding, BOM, line endings and permissions."""
    text = new_text.replace("\n", src.newline) if src.newline != "\n" else new_text
    data = text.encode(src.encoding)
    if src.bom:
        data = b"\xef\xbb\xbf" + data
    target = src.path.resolve()
    mode = stat.S_IMODE(target.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".onnxlint")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
