"""A notebook's code cells as one Python module, and findings mapped back to their cell.

The cells run top to bottom in one namespace, so they are checked as one module: a class
defined in cell 2 and exported in cell 5 is understood like in a `.py` file. The module is
the code cells in notebook order, each masked (`onnxlint.source.magics`) and ended by a newline;
cells that are not Python (`%%bash`, automagic commands) leave nothing. Every module line
belongs to exactly one cell, so a finding maps to (cell, line in cell) by a bisection, and
a fix maps to edits of one cell's text; a fix that would cross a cell boundary or touch a
masked IPython line is dropped (the finding stays, without the fix).
"""

from __future__ import annotations

import dataclasses
import os
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

from onnxlint.core.violation import Edit, Fix, Span, Violation
from onnxlint.source.magics import MaskedCell, mask_cell
from onnxlint.source.notebook import Cell, NotebookError, read_notebook


@dataclass(frozen=True)
class CellPlace:
    """Where one code cell sits in the module."""

    index: int  # 0-based in the notebook's `cells` array
    start_line: int  # 1-based module line of the cell's first line
    line_count: int
    masked: frozenset[int]  # 1-based cell lines holding IPython syntax

    @property
    def number(self) -> int:
        """The cell as findings name it: 1-based index in the `cells` array."""
        return self.index + 1


@dataclass(frozen=True)
class CellModule:
    text: str
    places: tuple[CellPlace, ...]

    @cached_property
    def _starts(self) -> list[int]:
        return [p.start_line for p in self.places]

    def place_of(self, line: int) -> CellPlace | None:
        """The cell holding 1-based module `line`."""
        i = bisect_right(self._starts, line) - 1
        if i < 0:
            return None
        place = self.places[i]
        return place if line < place.start_line + max(place.line_count, 1) else None

    def place_of_cell(self, index: int) -> CellPlace | None:
        return next((p for p in self.places if p.index == index), None)

    def to_cell(self, v: Violation) -> Violation:
        """`v` (module positions) in its cell's positions, with `cell` set."""
        place = self.place_of(v.span.line)
        if place is None:  # past the last cell (an unclosed bracket at the very end)
            place = self.places[-1] if self.places else None
            if place is None:
                return v
        shift = place.start_line - 1
        span = _clamp(v.span.shifted(-shift), place.line_count)
        fix = _cell_fix(v.fix, place) if v.fix is not None else None
        return dataclasses.replace(v, span=span, fix=fix, cell=place.number)

    def to_module(self, index: int, span: Span) -> Span:
        """A span in cell `index` as a module span."""
        place = self.place_of_cell(index)
        return span if place is None else span.shifted(place.start_line - 1)


def _clamp(span: Span, lines: int) -> Span:
    """A span that runs past its cell (a statement merged with the next cell) ends there."""
    if span.end_line <= lines:
        return span
    return Span(span.line, span.column, span.line, span.column + 1)


def _cell_fix(fix: Fix, place: CellPlace) -> Fix | None:
    """The fix's edits in the cell's positions, or None if it leaves the cell or touches
    masked IPython syntax."""
    shift = place.start_line - 1
    last = place.line_count
    edits: list[Edit] = []
    for e in fix.edits:
        s = e.span.shifted(-shift)
        ends_at_next_cell = s.end_line == last + 1 and s.end_column == 1
        if s.line < 1 or s.line > last or (s.end_line > last and not ends_at_next_cell):
            return None
        if any(line in place.masked for line in range(s.line, min(s.end_line, last) + 1)):
            return None
        edits.append(Edit(s, e.text))
    return Fix(fix.title, tuple(edits), fix.safety)


@lru_cache(maxsize=8192)
def _masked(source: str) -> MaskedCell:
    return mask_cell(source)


def cell_module(cells: Sequence[Cell]) -> CellModule:
    """The code cells of a notebook as one module (see the module docstring)."""
    parts: list[str] = []
    places: list[CellPlace] = []
    line = 1
    for cell in cells:
        if cell.kind != "code":
            continue
        masked = _masked(cell.source)
        if not masked.python:
            continue
        text = masked.text
        if not text.endswith("\n"):
            text += "\n"
        count = text.count("\n")
        places.append(CellPlace(cell.index, line, count, masked.masked))
        parts.append(text)
        line += count
    return CellModule("".join(parts), tuple(places))


def cell_line(path: str, line: int) -> tuple[int, int] | None:
    """(cell number, line in the cell) of module `line` of the notebook file at `path`, as
    the file is on disk; None when it cannot be read. For messages that name a place in
    another file (`export.ipynb:cell 5:2 declares dynamic`)."""
    try:
        stat = os.stat(path)
    except OSError:
        return None
    module = _module_on_disk(path, stat.st_mtime_ns, stat.st_size)
    place = module.place_of(line) if module is not None else None
    return None if place is None else (place.number, line - place.start_line + 1)


@lru_cache(maxsize=64)
def _module_on_disk(path: str, mtime_ns: int, size: int) -> CellModule | None:
    from pathlib import Path

    from onnxlint.source.files import ReadError, read_text

    try:
        return cell_module(read_notebook(read_text(Path(path))).cells)
    except (ReadError, NotebookError):
        return None


def notebook_module_text(text: str) -> str | None:
    """The module text of a notebook file's text (None when it is no readable notebook):
    what other files' analyses read for a notebook."""
    try:
        notebook = read_notebook(text)
    except NotebookError:
        return None
    return cell_module(notebook.cells).text if notebook.is_python else None
