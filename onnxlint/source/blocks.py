"""Split a file into top-level blocks and parse each one with libcst, reusing unchanged blocks.

Whole-file libcst parsing costs ~100 ms for a 1,400-line model file, more with metadata. A
keystroke changes one top-level statement (a class, a function, an import line), so the
engine parses each top-level statement on its own and keeps the parsed block keyed by its
text: after an edit only the edited block is parsed again.

Splitting is a cheap line scan (a block starts at a column-0 line that is not a comment, a
closing bracket, or an `else`/`elif`/`except`/`finally`/`case` continuation, and not inside a
string). A split that lands inside a bracket shows up as a block that does not parse; it is
merged with the following blocks until it does. A block that still does not parse is a real
syntax error: it is reported (OLX000) and the rest of the file is still checked.
"""

from __future__ import annotations

import ast
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from onnxlint.core.violation import line_starts
from onnxlint.source.fast_nodes import unvalidated_nodes

# Multi-line strings: candidate block starts inside them are not starts. Only triple-quoted
# strings span lines (a backslash-continued one-line string just causes a merge), and a
# comment that mentions triple quotes is consumed so it does not open one. One-line strings
# holding triple quotes are not recognised: that costs a merge or a larger block, never a
# wrong parse (blocks are only ever joined, and every block is parsed by libcst).
# (A string's prefix letters are left out: no line starts between them and the quotes, and
# without them the regex scans for three characters instead of fourteen: 2.8x faster.)
_MULTILINE_STRING = re.compile(
    r"""#[^\n]*(?:'''|\"\"\")[^\n]*"""
    r"""|'''[\s\S]*?(?:'''|\Z)|\"\"\"[\s\S]*?(?:\"\"\"|\Z)"""
)
# A line start (after a line break: offset 0 always starts a block) that may start a
# statement. Searched as `\n` and a lookahead, not `^` with re.M: the literal lets the
# regex engine skip to each line break (2.5-6x faster on model files).
_START = re.compile(r"\n(?![ \t#\n\r)\]}]|else\b|elif\b|except\b|finally\b|case\b)")
# How many following blocks a non-parsing block may swallow before it is called an error.
_MAX_MERGE = 6


@dataclass
class Block:
    """One top-level statement (with its leading comments): its text, place and parse."""

    text: str
    start_line: int  # 1-based line of the block's first line in the file
    start_offset: int  # character offset of the block in the file
    module: cst.Module | None  # None when the block does not parse
    error: SyntaxErrorInfo | None = None
    # Per-block memo for analyses (index, positions, rule results): dropped with the block.
    memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def line_count(self) -> int:
        return self.text.count("\n") + (0 if self.text.endswith("\n") else 1)


@dataclass(frozen=True)
class SyntaxErrorInfo:
    line: int  # 1-based, in the file
    column: int  # 1-based
    message: str


# (parsed module or None, the parse error or None, the block's memo for later analyses)
_Entry = tuple[cst.Module | None, Any, dict[Any, Any]]


class ParseCache:
    """Parsed blocks keyed by their exact text: an LRU bounded in entries and, optionally,
    in characters of text (trees grow with their text; the server bounds both). Pinned
    texts (the server pins the blocks of its open documents) are never evicted."""

    def __init__(self, max_entries: int = 4096, max_chars: int | None = None) -> None:
        self.max_entries = max_entries
        self.max_chars = max_chars
        self.pinned: set[str] = set()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._chars = 0
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def chars(self) -> int:
        """Characters of text held."""
        return self._chars

    def get(self, text: str) -> _Entry | None:
        entry = self._entries.get(text)
        if entry is not None:
            self._entries.move_to_end(text)
            self.hits += 1
        return entry

    def put(self, text: str, value: _Entry) -> None:
        self.misses += 1
        if self.max_entries <= 0:
            return
        if text not in self._entries:
            self._chars += len(text)
        self._entries[text] = value
        self.trim()

    def trim(self, max_entries: int | None = None, max_chars: int | None = None) -> None:
        """Drop the least recently used unpinned entries until within the bounds (the
        cache's own, or others given for this call: `trim(0, 0)` keeps the pinned only)."""
        entries = self.max_entries if max_entries is None else max_entries
        chars = self.max_chars if max_chars is None else max_chars

        def over() -> bool:
            return len(self._entries) > entries or (chars is not None and self._chars > chars)

        passed = 0  # pinned entries moved past; once all are, only pinned ones are left
        while over() and passed < len(self._entries):
            text = next(iter(self._entries))  # the least recently used
            if text in self.pinned:
                self._entries.move_to_end(text)
                passed += 1
            else:
                del self._entries[text]
                self._chars -= len(text)

    def clear(self) -> None:
        self._entries.clear()
        self._chars = 0


def candidate_starts(text: str) -> list[int]:
    """Offsets where a top-level statement may start (always includes 0)."""
    masked: list[tuple[int, int]] = [
        (m.start(), m.end())
        for m in _MULTILINE_STRING.finditer(text)
        if text.count("\n", m.start(), m.end())
    ]
    starts = [0]
    mi = 0
    end = len(text)
    for m in _START.finditer(text):
        pos = m.end()
        if pos >= end:
            continue
        while mi < len(masked) and masked[mi][1] <= pos:
            mi += 1
        if mi < len(masked) and masked[mi][0] < pos < masked[mi][1]:
            continue
        starts.append(pos)
    return starts


def _attach_decorators_and_comments(text: str, starts: list[int]) -> list[int]:
    """Decorator lines start the block of the def they decorate."""
    out: list[int] = []
    for pos in starts:
        if out and text.startswith("@", out[-1]) and _is_decorator_only(text, out[-1], pos):
            continue  # still within the decorated statement
        out.append(pos)
    return out


def _is_decorator_only(text: str, start: int, end: int) -> bool:
    segment = text[start:end]
    return all(
        (not line.strip()) or line.lstrip().startswith(("@", "#")) or line[:1] in " \t)]}"
        for line in segment.splitlines()
    )


def _parse(text: str, cache: ParseCache) -> _Entry:
    cached = cache.get(text)
    if cached is not None:
        return cached
    try:
        value: _Entry = (cst.parse_module(text), None, {})  # within unvalidated_nodes()
    except Exception as exc:  # ParserSyntaxError; RecursionError for pathological nesting
        value = (None, _detached(exc), {})
    cache.put(text, value)
    return value


def _detached(exc: BaseException) -> BaseException:
    """The error without its traceback or chained errors, for keeping in the cache.

    A kept traceback holds the parser's frames and their locals, and a cycle through this
    function's frame (its `value` holds the error): every cached syntax error would keep
    its partial parse alive until a full garbage collection. Only the message and
    position are read later (`_error_info`).
    """
    exc.__traceback__ = None
    exc.__context__ = None
    exc.__cause__ = None
    return exc


def split_blocks(text: str, cache: ParseCache) -> list[Block]:
    """Split `text` into parsed top-level blocks (see the module docstring)."""
    if not text:
        return []
    starts = _attach_decorators_and_comments(text, candidate_starts(text))
    with unvalidated_nodes():  # once per file, not per block
        blocks = _split(text, starts, cache)
        if any(b.module is None for b in blocks):
            exact = statement_starts(text)
            if exact is not None:
                # CPython parses the file: the line scan cut through a bracket or a string
                # (more than _MAX_MERGE column-0 lines). Split where the statements are.
                blocks = _split(text, exact, cache)
    return blocks


def statement_starts(text: str) -> list[int] | None:
    """Offsets of the top-level statements (decorators included) from CPython's parser,
    or None when the file is not valid Python."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    line_offsets = line_starts(text)
    starts = [0]
    for stmt in tree.body:
        decorators = getattr(stmt, "decorator_list", ())
        line = min([stmt.lineno, *(d.lineno for d in decorators)])
        if line > 1:
            starts.append(line_offsets[line - 1])
    return sorted(set(starts))


def _split(text: str, starts: list[int], cache: ParseCache) -> list[Block]:
    starts = [*starts, len(text)]
    blocks: list[Block] = []
    line = 1
    i = 0
    n = len(starts) - 1
    while i < n:
        begin = starts[i]
        j = i + 1
        module, err, memo = _parse(text[begin : starts[j]], cache)
        while module is None and j < n and j - i <= _MAX_MERGE:
            j += 1
            module, err, memo = _parse(text[begin : starts[j]], cache)
        chunk_end = starts[j] if module is not None else starts[i + 1]
        chunk = text[begin:chunk_end]
        if module is None:
            # Report the error of the smallest chunk: it is where the user is typing.
            _, err, memo = _parse(chunk, cache)
            info = _error_info(err, line, chunk)
            blocks.append(Block(chunk, line, begin, None, info, memo))
            i += 1
        else:
            blocks.append(Block(chunk, line, begin, module, None, memo))
            i = j
        line += chunk.count("\n")
    return blocks


def _error_info(err: Any, start_line: int, chunk: str) -> SyntaxErrorInfo:
    # CPython's own message and position are the ones users know ("expected ':'").
    try:
        ast.parse(chunk)
    except SyntaxError as exc:
        if exc.lineno is not None:
            return SyntaxErrorInfo(start_line + exc.lineno - 1, max(exc.offset or 1, 1), exc.msg)
    except (ValueError, RecursionError, MemoryError):
        pass
    if isinstance(err, cst.ParserSyntaxError):
        # libcst reports 1-based lines and 0-based columns within the chunk.
        message = err.message.strip().splitlines()[0] if err.message else "invalid syntax"
        return SyntaxErrorInfo(start_line + err.raw_line - 1, err.raw_column + 1, message)
    if isinstance(err, RecursionError):
        return SyntaxErrorInfo(start_line, 1, "too deeply nested to parse")
    return SyntaxErrorInfo(start_line, 1, "could not parse this statement")
