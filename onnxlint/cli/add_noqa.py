"""`onnxlint check --add-noqa`: a suppression comment on every line with a finding, so that a
codebase adopting onnxlint is judged on new code only (ruff's `--add-noqa`).

The comments are made by onnxlint.core.suppression.add_noqa; here each file is read and written
back as --fix writes (encoding, line endings, permissions kept; notebooks cell by cell, everything
but the cells' sources byte for byte), and only when it still parses.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from onnxlint.core.suppression import add_noqa
from onnxlint.core.violation import Violation
from onnxlint.source.fixes import read_source, write_source
from onnxlint.source.magics import mask_cell
from onnxlint.source.notebook import NotebookError, is_notebook, read_notebook, replace_sources


@dataclass
class NoqaOutcome:
    added: int = 0  # comments written or extended
    files: int = 0  # files written
    left: list[Violation] = field(default_factory=list)  # findings still reported
    problems: list[str] = field(default_factory=list)  # files not written, and why


def add_noqa_comments(violations: Sequence[Violation]) -> NoqaOutcome:
    by_path: dict[str, list[Violation]] = defaultdict(list)
    for v in violations:
        by_path[v.path].append(v)
    outcome = NoqaOutcome()
    for path, found in sorted(by_path.items()):
        if not (path.endswith(".py") or path.endswith(".pyi") or is_notebook(path)):
            outcome.left += found  # a finding in pyproject.toml (a deep-analysis target)
            continue
        try:
            src = read_source(Path(path))
            if is_notebook(path):
                new_text, added, left = _notebook(src.text, found)
            else:
                new_text, added, left = add_noqa(src.text, found)
                if added:
                    ast.parse(new_text)
        except (OSError, UnicodeDecodeError, SyntaxError, ValueError, NotebookError) as exc:
            outcome.problems.append(f"{path}: no comments written: {exc}")
            outcome.left += found
            continue
        outcome.left += left
        if added:
            write_source(src, new_text)
            outcome.added += added
            outcome.files += 1
    return outcome


def _notebook(text: str, found: list[Violation]) -> tuple[str, int, list[Violation]]:
    """The comments go into the cells' sources; the rest of the file is kept byte for byte."""
    notebook = read_notebook(text)
    by_cell: dict[int, list[Violation]] = defaultdict(list)
    left: list[Violation] = []
    for v in found:
        if v.cell is None or not 1 <= v.cell <= len(notebook.cells):
            left.append(v)  # the notebook itself (OLX000: not valid JSON)
        else:
            by_cell[v.cell - 1].append(v)
    sources: dict[int, str] = {}
    added = 0
    for index, cell_found in sorted(by_cell.items()):
        source = notebook.cells[index].source
        masked = mask_cell(source)
        if not masked.python:
            left += cell_found
            continue
        new, n, cell_left = add_noqa(source, cell_found, python=masked.text)
        left += cell_left
        if n:
            sources[index] = new
            added += n
    if not sources:
        return text, 0, left
    return replace_sources(notebook, sources), added, left
