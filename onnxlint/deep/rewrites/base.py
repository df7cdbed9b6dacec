"""What every rewrite shares: the finding it answers, the files it reads, how it edits them.

A rewrite is a libcst transformation of one file (or, for a new module, a new file): it
returns the rewritten module's code, and `edits_between` turns the old and the new text
into the fix's edits (whole-line hunks, in the old text's positions), so that what the
worker proves (the new text, served by its overlay) and what the user gets (the edits)
are the same change.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst
from libcst.metadata import MetadataWrapper, ParentNodeProvider, PositionProvider

from onnxlint.core.violation import Edit, Span, Violation


@dataclass(frozen=True)
class Candidate:
    """One way to fix one finding: its kind, what its title says it does, the new text of
    each file it changes (absolute path -> text) and the files it adds."""

    kind: str
    title: str
    files: dict[str, str]
    created: frozenset[str] = frozenset()
    note: str = ""

    def edits_for(self, path: str, old: str) -> tuple[Edit, ...]:
        return edits_between(old, self.files[path])


@dataclass
class Site:
    """A deep finding, with what a rewrite needs to know about it."""

    violation: Violation
    raw: dict[str, Any]  # the worker's finding: kind, message, file, line and its extras
    data: dict[str, Any]  # the analysis result (model, inputs, script call, ...)
    sources: Sources
    target_script: str | None = None
    target_factory: str | None = None
    dynamic_shapes: Any = None

    @property
    def path(self) -> str:
        return str(self.raw.get("file") or self.violation.path)

    @property
    def line(self) -> int:
        return int(self.raw.get("line") or self.violation.line)

    @property
    def kind(self) -> str:
        return str(self.raw.get("kind") or "")


class Sources:
    """Files read and parsed once per proof run (the rewrites of one target share them)."""

    def __init__(self, overrides: dict[str, str] | None = None) -> None:
        self._texts: dict[str, str | None] = dict(overrides or {})
        self._parsed: dict[str, Parsed | None] = {}

    def text(self, path: str) -> str | None:
        """The file's text; a notebook's is its code cells as one module (the code the
        worker runs, at the lines it reports: `onnxlint.deep.notebooks`)."""
        if path not in self._texts:
            if path.lower().endswith(".ipynb"):
                from onnxlint.deep.notebooks import module_text

                self._texts[path] = module_text(path)
                return self._texts[path]
            try:
                self._texts[path] = Path(path).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                self._texts[path] = None
        return self._texts[path]

    def parsed(self, path: str) -> Parsed | None:
        if path not in self._parsed:
            text = self.text(path)
            try:
                self._parsed[path] = Parsed(text) if text is not None else None
            except cst.ParserSyntaxError:
                self._parsed[path] = None
        return self._parsed[path]


class Parsed:
    """A file's libcst module with positions and parents."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.wrapper = MetadataWrapper(cst.parse_module(text))
        self.module = self.wrapper.module
        self.positions = self.wrapper.resolve(PositionProvider)
        self.parents = self.wrapper.resolve(ParentNodeProvider)

    def start_line(self, node: cst.CSTNode) -> int:
        return int(self.positions[node].start.line)

    def end_line(self, node: cst.CSTNode) -> int:
        return int(self.positions[node].end.line)

    def nodes(self, kind: type[cst.CSTNode] | tuple[type[cst.CSTNode], ...]) -> Iterator[Any]:
        for node in self.positions:
            if isinstance(node, kind):
                yield node

    def at_line(
        self, line: int, kind: type[cst.CSTNode] | tuple[type[cst.CSTNode], ...]
    ) -> list[Any]:
        """Nodes of `kind` that start on `line`, outermost first."""
        found = [n for n in self.nodes(kind) if self.start_line(n) == line]
        return sorted(found, key=lambda n: (self.positions[n].start.column, -self.end_line(n)))

    def covering(
        self, line: int, kind: type[cst.CSTNode] | tuple[type[cst.CSTNode], ...]
    ) -> list[Any]:
        """Nodes of `kind` whose lines include `line`, innermost first."""
        found = [n for n in self.nodes(kind) if self.start_line(n) <= line <= self.end_line(n)]
        return sorted(found, key=lambda n: self.end_line(n) - self.start_line(n))

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self.parents.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        p = self.parent(node)
        while p is not None:
            yield p
            p = self.parent(p)

    def enclosing(self, node: cst.CSTNode, kind: type[cst.CSTNode]) -> Any:
        return next((a for a in self.ancestors(node) if isinstance(a, kind)), None)

    def code(self, node: cst.CSTNode) -> str:
        return self.module.code_for_node(node)

    def replace(self, old: cst.CSTNode, new: cst.CSTNode | cst.FlattenSentinel[Any]) -> str:
        """The module's code with `old` replaced by `new` (statements: several, or none)."""
        out = self.module.deep_replace(old, new)  # type: ignore[type-var]
        assert isinstance(out, cst.Module)
        return out.code


def edits_between(old: str, new: str, gap: int = 3) -> tuple[Edit, ...]:
    """The edits that turn `old` into `new`: one per changed run of lines (runs fewer than
    `gap` unchanged lines apart are one edit), each replacing whole lines, so that a client
    shows them as the lines the rewrite changes."""
    a = old.splitlines(keepends=True)
    b = new.splitlines(keepends=True)
    hunks: list[list[int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        if hunks and i1 - hunks[-1][1] < gap and j1 - hunks[-1][3] < gap:
            hunks[-1][1], hunks[-1][3] = i2, j2
        else:
            hunks.append([i1, i2, j1, j2])
    nlines = len(a)
    edits: list[Edit] = []
    for i1, i2, j1, j2 in hunks:
        text = "".join(b[j1:j2])
        if i2 < nlines or old.endswith(("\n", "\r")):
            span = Span(i1 + 1, 1, i2 + 1, 1)
        else:  # up to the end of a last line without a line break
            span = Span(i1 + 1, 1, nlines, len(a[-1]) + 1)
        edits.append(Edit(span, text))
    return tuple(edits)


def line_map(old: str, new: str) -> Callable[[int], tuple[int, int]]:
    """Old line -> the new lines it became ((n, n) when unchanged, the new hunk's range
    when the line was rewritten, an empty range where it was removed)."""
    a = old.splitlines()
    b = new.splitlines()
    ops = difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes()

    def where(line: int) -> tuple[int, int]:
        i = line - 1
        for tag, i1, i2, j1, j2 in ops:
            if i1 <= i < i2 or (tag == "insert" and i1 == i):
                if tag == "equal":
                    return (j1 + (i - i1) + 1,) * 2
                return (j1 + 1, max(j2, j1 + 1))
        return (line, line)

    return where


def fresh_name(parsed: Parsed, base: str, taken: Sequence[str] = ()) -> str:
    """`base`, or `base_2`, ... : a name that the file does not use yet."""
    used = {n.value for n in parsed.nodes(cst.Name)} | set(taken)
    if base not in used:
        return base
    k = 2
    while f"{base}_{k}" in used:
        k += 1
    return f"{base}_{k}"


def torch_alias(parsed: Parsed) -> str | None:
    """The name the file binds the torch module to (`import torch`, `import torch as th`)."""
    for node in parsed.nodes(cst.Import):
        for alias in node.names:
            if isinstance(alias.name, cst.Name) and alias.name.value == "torch":
                if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                    return alias.asname.name.value
                return "torch"
    return None


@dataclass
class Rewriter:
    """A rewrite kind: which findings it answers, and how it makes its candidates."""

    kind: str
    label: str  # the bench's name for the kind
    codes: frozenset[str]
    make: Callable[[Site], list[Candidate]] = field(repr=False)

    def candidates(self, site: Site) -> list[Candidate]:
        if site.violation.code not in self.codes:
            return []
        try:
            return self.make(site)
        except Exception:  # a rewrite that cannot be made is not offered; never a crash
            return []
