"""A Jupyter notebook file: its code cells read out, and fixed cells written back in place.

Reading needs no more than JSON and nbformat's version rules: anything that is not a JSON
object of nbformat 4 with a `cells` list is a `NotebookError` naming the line and what to
do (one OLX000 line, never a traceback). Writing back splices only the `source` values of
the fixed cells into the file's text, formatted the way the file has them (a list of
lines or one string, its indentation, its escaping): outputs, execution counts, metadata,
key order, indentation and the trailing newline stay byte for byte. The spliced text is
parsed again and must equal the notebook with just those sources replaced, and validate
with nbformat whenever the original did; otherwise nothing is written.
"""

from __future__ import annotations

import copy
import json
import re
from bisect import bisect_right
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

NOTEBOOK_SUFFIX = ".ipynb"
_WS = re.compile(r"[ \t\n\r]*")
_NON_ASCII_ESCAPE = re.compile(r"\\u(?!00[0-7])[0-9a-fA-F]{4}")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


class NotebookError(Exception):
    """A notebook that cannot be read: the message says why and what to do."""

    def __init__(self, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class Cell:
    """One cell: its 0-based index in the notebook's `cells` array, type and text."""

    index: int
    kind: str  # "code", "markdown", "raw"
    source: str


@dataclass
class Notebook:
    """A notebook as read: the file's text (for writing back in place), its JSON, its cells."""

    text: str  # the file's text (line endings as `fixes.read_source` gives them)
    data: dict[str, Any]
    cells: list[Cell]

    @property
    def code_cells(self) -> list[Cell]:
        return [c for c in self.cells if c.kind == "code"]

    @property
    def is_python(self) -> bool:
        """False for a notebook of another language (an R or Julia kernel): its code cells
        are not Python and are not checked (as ruff does)."""
        metadata = self.data.get("metadata")
        if not isinstance(metadata, dict):
            return True
        for key, field_name in (("language_info", "name"), ("kernelspec", "language")):
            section = metadata.get(key)
            if isinstance(section, dict) and isinstance(section.get(field_name), str):
                return str(section[field_name]).lower() == "python"
        return True


def read_notebook(text: str) -> Notebook:
    """The notebook in `text`, or a NotebookError."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(
            f"not a valid notebook: the JSON is broken ({exc.msg}); repair it, or open and "
            "save it in Jupyter",
            exc.lineno,
            exc.colno,
        ) from None
    if not isinstance(data, dict) or "cells" not in data:
        raise NotebookError(
            "not a Jupyter notebook: the JSON has no `cells` list (nbformat 4 is needed)"
        )
    version = data.get("nbformat")
    if version != 4:
        raise NotebookError(
            f"not an nbformat 4 notebook (nbformat is {version!r}): convert it with "
            "`jupyter nbconvert --to notebook --nbformat 4`"
        )
    raw_cells = data["cells"]
    if not isinstance(raw_cells, list):
        raise NotebookError("not a valid notebook: `cells` is not a list")
    cells: list[Cell] = []
    for i, raw in enumerate(raw_cells):
        if not isinstance(raw, dict) or not isinstance(raw.get("cell_type"), str):
            raise NotebookError(f"not a valid notebook: cell {i + 1} has no `cell_type`")
        source = raw.get("source", "")
        if isinstance(source, list) and all(isinstance(s, str) for s in source):
            source = "".join(source)
        if not isinstance(source, str):
            raise NotebookError(
                f"not a valid notebook: the `source` of cell {i + 1} is neither a string "
                "nor a list of strings"
            )
        cells.append(Cell(i, raw["cell_type"], source))
    return Notebook(text, data, cells)


def is_valid(data: Mapping[str, Any]) -> bool:
    """Whether nbformat's schema accepts the notebook (nbformat 4, any minor version)."""
    import warnings

    from nbformat.validator import iter_validate  # type: ignore[import-untyped,unused-ignore]

    with warnings.catch_warnings():  # nbformat warns about what it would repair
        warnings.simplefilter("ignore")
        errors = iter_validate(copy.deepcopy(dict(data)), version=4)  # type: ignore[no-untyped-call,unused-ignore]
        return next(errors, None) is None


def replace_sources(nb: Notebook, sources: Mapping[int, str]) -> str:
    """The notebook's text with the `source` of each cell in `sources` (by index) replaced,
    everything else kept byte for byte. Raises NotebookError if that cannot be done."""
    ranges = _source_ranges(nb.text)
    ascii_only = bool(_NON_ASCII_ESCAPE.search(nb.text))
    unit = _indent_unit(nb.text)
    pieces: list[str] = []
    pos = 0
    for index in sorted(sources):
        if index not in ranges:
            raise NotebookError(f"cannot find the source of cell {index + 1} in the file")
        start, end = ranges[index]
        old = nb.text[start:end]
        pieces.append(nb.text[pos:start])
        pieces.append(_format_source(nb.text, start, old, sources[index], unit, ascii_only))
        pos = end
    pieces.append(nb.text[pos:])
    new_text = "".join(pieces)
    expected = json.loads(nb.text)
    for index, source in sources.items():
        cell = expected["cells"][index]
        cell["source"] = source.splitlines(True) if isinstance(cell["source"], list) else source
    if json.loads(new_text) != expected:
        raise NotebookError("writing the fixed cells back would change more than their source")
    if is_valid(nb.data) and not is_valid(expected):
        raise NotebookError("the fixed notebook would not be valid nbformat")
    return new_text


def _format_source(
    text: str, start: int, old: str, source: str, unit: str, ascii_only: bool
) -> str:
    """`source` as JSON, in the shape of the `old` value (a string, or a list of lines on
    one line or one per line with its indentation)."""

    def dump(s: str) -> str:
        return json.dumps(s, ensure_ascii=ascii_only)

    if not old.startswith("["):
        return dump(source)
    lines = source.splitlines(True)
    if not lines:
        return "[]"
    m = re.match(r"\[([ \t\r\n]*)", old)
    lead = m.group(1) if m else ""
    if old != "[]" and "\n" not in old:  # ["a\n", "b"] on one line
        sep = ","
        after = old[old.index(",") + 1 :] if "," in old else " "
        sep += after[: len(after) - len(after.lstrip(" "))]
        return (
            "[" + lead + sep.join(dump(s) for s in lines) + old[len(old.rstrip("] \t")) : -1] + "]"
        )
    if old == "[]" or "\n" not in lead:
        line_start = text.rfind("\n", 0, start) + 1
        key_indent = re.match(r"[ \t]*", text[line_start:start])
        base = key_indent.group(0) if key_indent else ""
        lead = "\n" + base + unit
        close = "\n" + base
    else:
        tail = re.search(r"([ \t\r\n]*)\]$", old)
        close = tail.group(1) if tail else "\n"
    return "[" + lead + ("," + lead).join(dump(s) for s in lines) + close + "]"


def file_position(text: str, index: int, line: int, column: int) -> tuple[int, int]:
    """The 1-based line and column in the notebook file's text (its JSON) of `line` and
    `column` in cell `index`: where an annotation on the file itself must point."""
    from onnxlint.core.violation import line_starts

    scanner = _SourceScanner(text)
    found = scanner.scan().get(index)
    if found is None:
        return 1, 1
    start, end = found
    ascii_only = bool(_NON_ASCII_ESCAPE.search(text))
    if text[start] == "[":
        elements: list[int] = []
        i = scanner._ws(start + 1)
        while text[i] != "]":
            elements.append(i)
            i = scanner._ws(scanner._skip(i))
            if text[i] == ",":
                i = scanner._ws(i + 1)
        if not elements:
            at, prefix = start, ""
        else:
            at = elements[min(line, len(elements)) - 1]
            element = json.loads(text[at : scanner._skip(at)])
            prefix = element[: column - 1] if line <= len(elements) else ""
    else:
        at = start
        lines = str(json.loads(text[start:end])).splitlines(True) or [""]
        k = min(line, len(lines)) - 1
        prefix = "".join(lines[:k]) + lines[k][: column - 1]
    offset = at + 1 + len(json.dumps(prefix, ensure_ascii=ascii_only)) - 2
    starts = line_starts(text)
    row = bisect_right(starts, offset)
    return row, offset - starts[row - 1] + 1


def _indent_unit(text: str) -> str:
    """The file's indentation step (nbformat writes one space)."""
    m = re.match(r"\{\r?\n([ \t]+)\"", text)
    return m.group(1) if m else " "


def _source_ranges(text: str) -> dict[int, tuple[int, int]]:
    """Cell index -> (start, end) offsets of the cell's `source` value in the JSON text."""
    return _SourceScanner(text).scan()


class _SourceScanner:
    """Walks the notebook's JSON text far enough to find each cell's `source` value
    (json's own decoder parses and skips every other value)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.decoder = json.JSONDecoder()
        self.found: dict[int, tuple[int, int]] = {}

    def scan(self) -> dict[int, tuple[int, int]]:
        self._object(self._ws(0), self._top_member)
        return self.found

    def _ws(self, i: int) -> int:
        m = _WS.match(self.text, i)
        return m.end() if m else i

    def _skip(self, i: int) -> int:
        return int(self.decoder.raw_decode(self.text, i)[1])

    def _object(self, i: int, member: Callable[[str, int], int]) -> int:
        """Walk the object at `i`, `member(key, value start) -> value end` for each
        member; the offset after the object."""
        text = self.text
        if text[i] != "{":
            return self._skip(i)
        i = self._ws(i + 1)
        while text[i] != "}":
            key, i = scanstring(text, i + 1)
            i = self._ws(self._ws(i) + 1)  # past the colon
            i = self._ws(member(key, i))
            if text[i] == ",":
                i = self._ws(i + 1)
        return i + 1

    def _top_member(self, key: str, at: int) -> int:
        if key != "cells" or self.text[at] != "[":
            return self._skip(at)
        text = self.text
        i = self._ws(at + 1)
        index = 0
        while text[i] != "]":

            def member(key: str, at: int, index: int = index) -> int:
                end = self._skip(at)
                if key == "source":
                    self.found[index] = (at, end)
                return end

            i = self._ws(self._object(i, member))
            index += 1
            if text[i] == ",":
                i = self._ws(i + 1)
        return i + 1
