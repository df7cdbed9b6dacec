"""The result types every front end shares: a finding, its position, and the fix it carries.

The JSON shape of `Violation.to_json()` is a contract (other tools read it): lines and
columns are 1-based, columns count Unicode code points, `end_column` is exclusive.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

# What ends a line for Span: `\r\n`, `\r` or `\n`, as for CPython's tokenizer, libcst and
# LSP. Not `str.splitlines`, which also breaks at \f, \v, \x1c-\x1e, \x85, \u2028, \u2029.
_LINE_BREAK = re.compile(r"\r\n?|\n")


# What `str.splitlines` breaks at beside those: a text without them is split in C.
_OTHER_BREAKS = ("\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def line_starts(text: str) -> list[int]:
    """Offset of the first character of each line of `text` (index 0 is line 1); a text
    ending in a line break has an empty last line starting at `len(text)`."""
    if not any(c in text for c in _OTHER_BREAKS):  # only \n: C loops (4,000 lines: 0.3 ms)
        starts = [0, *accumulate(map(len, text.splitlines(True)))]
        if text and not text.endswith("\n"):
            starts.pop()  # (the end of an unterminated last line starts no line)
        return starts
    return [0, *(m.end() for m in _LINE_BREAK.finditer(text))]


# Where the documentation site (docs/, built with Sphinx) is served: GitHub Pages of the
# repository, published by .github/workflows/docs.yml. Every URL a finding carries is a page
# of it (tests/docs checks each one against a build).
DOCS_URL = "https://onnxlint.github.io/onnxlint/"
DOCS_BASE_URL = f"{DOCS_URL}rules/"


class Severity(str, enum.Enum):
    """How bad a finding is. The order matters: ERROR > WARNING > INFO."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 3, "warning": 2, "info": 1}[self.value]


class FixSafety(str, enum.Enum):
    """Whether applying a fix keeps behaviour (ruff's applicability classes)."""

    SAFE = "safe"  # behaviour kept: applied by `--fix` and "Fix all"
    UNSAFE = "unsafe"  # behaviour may change: a quick fix, or `--fix --unsafe-fixes`
    DISPLAY = "display"  # shown as a suggestion only, never applied in batch


@dataclass(frozen=True, order=True)
class Span:
    """A range in a file: 1-based lines, 1-based columns (code points), end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def shifted(self, lines: int) -> Span:
        return Span(self.line + lines, self.column, self.end_line + lines, self.end_column)

    def contains(self, other: Span) -> bool:
        return (self.line, self.column) <= (other.line, other.column) and (
            other.end_line,
            other.end_column,
        ) <= (self.end_line, self.end_column)


@dataclass(frozen=True)
class Edit:
    """Replace the text in `span` by `text` (an insertion when the span is empty)."""

    span: Span
    text: str

    def to_json(self) -> dict[str, Any]:
        s = self.span
        return {
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
            "content": self.text,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Edit:
        return cls(
            Span(data["line"], data["column"], data["end_line"], data["end_column"]),
            data["content"],
        )


@dataclass(frozen=True)
class FileEdit:
    """What a fix changes in a file other than its finding's: edits of an existing file, or
    a file it adds (`create`: the file must not exist; its text is `text`)."""

    path: str
    edits: tuple[Edit, ...] = ()
    create: bool = False
    text: str = ""  # a created file's whole text

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path}
        if self.create:
            out["create"] = True
            out["content"] = self.text
        else:
            out["edits"] = [e.to_json() for e in self.edits]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FileEdit:
        return cls(
            data["path"],
            tuple(Edit.from_json(e) for e in data.get("edits", ())),
            bool(data.get("create", False)),
            data.get("content", ""),
        )


@dataclass(frozen=True)
class Fix:
    """A titled set of edits that together remove one finding: `edits` in the finding's
    file, `files` in other files (a deep fix may also edit the export script and add a
    module next to it)."""

    title: str
    edits: tuple[Edit, ...]
    safety: FixSafety = FixSafety.SAFE
    files: tuple[FileEdit, ...] = ()

    @property
    def changes(self) -> bool:
        """Whether applying the fix changes anything."""
        return bool(self.edits) or any(f.create or f.edits for f in self.files)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "title": self.title,
            "safety": self.safety.value,
            "edits": [e.to_json() for e in self.edits],
        }
        if self.files:
            out["files"] = [f.to_json() for f in self.files]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fix:
        return cls(
            data["title"],
            tuple(Edit.from_json(e) for e in data["edits"]),
            FixSafety(data["safety"]),
            tuple(FileEdit.from_json(f) for f in data.get("files", ())),
        )


@dataclass(frozen=True)
class Related:
    """Another place that belongs to a finding: a link of the chain from the user's code
    to a deep finding's line, or the target's declaration (LSP relatedInformation)."""

    path: str
    line: int
    column: int = 1
    message: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "column": self.column,
            "message": self.message,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Related:
        return cls(
            data["path"], int(data["line"]), int(data.get("column", 1)), data.get("message", "")
        )


@dataclass(frozen=True)
class Violation:
    """One finding at one place in one file."""

    path: str
    span: Span
    code: str
    message: str
    severity: Severity
    fix: Fix | None = None
    source: str = "static"  # "static" (OLX0xx-5xx) or "deep" (OLX8xx)
    deprecated: bool = False  # the finding is about a deprecated API (LSP tag)
    notes: tuple[str, ...] = field(default=())  # extra lines: hints, workarounds
    related: tuple[Related, ...] = field(default=())  # deep: the chain, the declaration
    # In a notebook: the cell (1-based index in its `cells` array); `span` is in the cell.
    cell: int | None = None

    @property
    def url(self) -> str:
        return f"{DOCS_BASE_URL}{self.code}/"

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    @property
    def location(self) -> str:
        """`path:line:column`, or `nb.ipynb:cell 3:12:5` in a notebook (as ruff writes it)."""
        cell = f"cell {self.cell}:" if self.cell is not None else ""
        return f"{self.path}:{cell}{self.span.line}:{self.span.column}"

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, Any]:
        s = self.span
        out: dict[str, Any] = {
            "path": self.path,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
            "code": self.code,
            "severity": self.severity.value,
            "message": self.message,
            "source": self.source,
            "url": self.url,
            "fix": self.fix.to_json() if self.fix else None,
        }
        if self.cell is not None:
            out["cell"] = self.cell
        if self.notes:
            out["notes"] = list(self.notes)
        if self.related:
            out["related"] = [r.to_json() for r in self.related]
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Violation:
        return cls(
            path=data["path"],
            span=Span(data["line"], data["column"], data["end_line"], data["end_column"]),
            code=data["code"],
            message=data["message"],
            severity=Severity(data["severity"]),
            fix=Fix.from_json(data["fix"]) if data.get("fix") else None,
            source=data.get("source", "static"),
            deprecated=bool(data.get("deprecated", False)),
            notes=tuple(data.get("notes", ())),
            related=tuple(Related.from_json(r) for r in data.get("related", ())),
            cell=data.get("cell"),
        )
