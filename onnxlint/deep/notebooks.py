"""Jupyter notebooks in the deep analysis: the code cells run in order as one script.

A notebook target is a script target whose script is an `.ipynb` file. What runs is the
module the static engine checks (`onnxlint.source.cells`): the code cells in notebook order,
IPython's magics and shell escapes masked (`%matplotlib inline`, `!pip install x` become
`pass`, `files = !ls` becomes `files = ...`), cells that are not Python (`%%bash`) left out;
every module line belongs to one cell. The parent sends that module's text to the worker as
the notebook's overlay (`worker/overlay.py`), so the worker compiles it under the notebook's
path, and everything the worker reports about the notebook is at module lines, as are the
proofs' rewrites (`deep/fixes.py` reads the notebook as its module text: `rewrites.Sources`).
The front ends place those findings, and their fixes, back in their cells (`in_cells`),
exactly as the static engine places its notebook findings (`Violation.cell`, the span in
the cell); a fix that would leave its cell or touch a masked line is dropped.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from onnxlint.core.violation import Related, Violation
from onnxlint.source.cells import CellModule, cell_module
from onnxlint.source.files import ReadError, read_text
from onnxlint.source.notebook import NotebookError, is_notebook, read_notebook

__all__ = ["NotebookError", "in_cells", "is_notebook", "module_of", "module_text", "read_module"]


def read_module(path: str | Path) -> CellModule:
    """The code cells of the notebook on disk as one module; NotebookError (its message says
    what is wrong) when it cannot be read or is not a Python notebook."""
    try:
        text = read_text(Path(path))
    except ReadError as exc:
        raise NotebookError(str(exc)) from None
    notebook = read_notebook(text)
    if not notebook.is_python:
        raise NotebookError("the notebook's kernel is not Python: its cells are not analysed")
    return cell_module(notebook.cells)


def module_of(path: str | Path) -> CellModule | None:
    """`read_module`, or None when the notebook cannot be read."""
    try:
        return read_module(path)
    except NotebookError:
        return None


def module_text(path: str | Path) -> str | None:
    """The module text of the notebook on disk (what the worker runs), or None."""
    module = module_of(path)
    return module.text if module is not None else None


ModuleOf = Callable[[str], "CellModule | None"]


def in_cells(violations: Iterable[Violation], modules: ModuleOf | None = None) -> list[Violation]:
    """`violations` with each finding at a module line of a notebook placed in its cell (its
    span and fix in the cell's lines, `cell` set), its chain's links into notebooks named by
    cell too. `modules`: the module of a notebook path (default: the notebook on disk)."""
    found: dict[str, CellModule | None] = {}

    def module(path: str) -> CellModule | None:
        key = os.path.realpath(path)
        if key not in found:
            found[key] = (modules or module_of)(path)
        return found[key]

    out: list[Violation] = []
    for v in violations:
        if v.cell is None and is_notebook(v.path):
            m = module(v.path)
            if m is not None and m.places:
                v = m.to_cell(v)
        if any(is_notebook(r.path) for r in v.related) or any(".ipynb:" in n for n in v.notes):
            v = dataclasses.replace(
                v,
                related=tuple(_related(r, module) for r in v.related),
                notes=tuple(
                    _note(n, module, [v.path, *(r.path for r in v.related)]) for n in v.notes
                ),
            )
        out.append(v)
    return out


def cell_of(module: CellModule, line: int) -> tuple[int, int] | None:
    """(cell number, line in the cell) of a module line."""
    place = module.place_of(line)
    return None if place is None else (place.number, line - place.start_line + 1)


def _related(r: Related, module: Callable[[str], CellModule | None]) -> Related:
    if not is_notebook(r.path):
        return r
    m = module(r.path)
    at = cell_of(m, r.line) if m is not None else None
    if at is None:
        return r
    return dataclasses.replace(r, line=at[1], message=f"cell {at[0]}: {r.message}".rstrip(": "))


_VIA_LINK = re.compile(r"(?P<name>[^\s>]+\.ipynb):(?P<line>\d+)")


def _note(note: str, module: Callable[[str], CellModule | None], paths: list[str]) -> str:
    """`via: nb.ipynb:14 -> models.py:7` with a notebook's link as `nb.ipynb:cell 3:2`
    (`paths`: the files of the finding and of its chain, which the links name)."""
    by_name = {Path(p).name: p for p in paths if is_notebook(p)}
    if not note.startswith("via: ") or not by_name:
        return note

    def link(match: re.Match[str]) -> str:
        path = by_name.get(match.group("name"))
        m = module(path) if path is not None else None
        at = cell_of(m, int(match.group("line"))) if m is not None else None
        if at is None:
            return match.group(0)
        return f"{match.group('name')}:cell {at[0]}:{at[1]}"

    return _VIA_LINK.sub(link, note)
