"""Suppression comments: `# onnxlint: ignore[OLX201]`, `# noqa: OLX201`, `# onnxlint: ignore-file`.

A bare `# onnxlint: ignore` or `# noqa` silences every onnxlint code on its line. A
finding is silenced by a comment on the line where it starts or ends, or on the last line
of the (multi-line) statement it is in: a `torch.onnx.export(...)` spread over lines can
carry the comment after its closing parenthesis, whichever argument the finding is on.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from onnxlint.core.codes import SYNTAX_ERROR_CODE
from onnxlint.core.violation import Violation

_LINE_RE = re.compile(
    r"#\s*(?:onnxlint:\s*ignore(?!-file)(?:\[(?P<codes1>[^\]]*)\])?"
    r"|noqa(?::\s*(?P<codes2>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?)",
    re.I,
)
_FILE_RE = re.compile(r"#\s*onnxlint:\s*ignore-file(?:\[(?P<codes>[^\]]*)\])?", re.I)
ALL = frozenset({"*"})


def _split_codes(raw: str | None) -> frozenset[str]:
    if raw is None:
        return ALL
    codes = frozenset(c.strip().upper() for c in re.split(r"[\s,]+", raw) if c.strip())
    return codes or ALL


def line_suppressions(text: str, statements: bool = True) -> dict[int, frozenset[str]]:
    """1-based line -> codes silenced there (`{"*"}` for all). With `statements`, a comment
    on the last line of a multi-line statement counts on each of its lines."""
    out: dict[int, frozenset[str]] = {}
    if "noqa" not in text and "onnxlint:" not in text:
        return out
    for lineno, line in enumerate(text.splitlines(), start=1):
        if "#" not in line:
            continue
        for m in _LINE_RE.finditer(line):
            raw = m.group("codes1") if m.group("codes1") is not None else m.group("codes2")
            codes = _split_codes(raw)
            if m.group(0).lower().lstrip("# ").startswith("noqa") and codes != ALL:
                codes = frozenset(c for c in codes if c.startswith("OLX")) or frozenset()
                if not codes:
                    continue  # `# noqa: E501` is about another tool
            out[lineno] = out.get(lineno, frozenset()) | codes
    if out and statements:
        _spread_to_statements(text, out)
    return out


def _spread_to_statements(text: str, per_line: dict[int, frozenset[str]]) -> None:
    """A comment on the last line of a logical line (a statement spread over lines by
    brackets or backslashes) covers each of its lines."""
    wanted = set(per_line)
    start: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.COMMENT, tokenize.NL) and start is None:
                continue
            if start is None:
                start = tok.start[0]
            if tok.type == tokenize.NEWLINE or tok.type == tokenize.ENDMARKER:
                end = tok.start[0]
                if end in wanted and end > start:
                    for line in range(start, end):
                        per_line[line] = per_line.get(line, frozenset()) | per_line[end]
                start = None
            elif tok.type in (tokenize.INDENT, tokenize.DEDENT):
                start = None
    except (tokenize.TokenError, SyntaxError):
        pass  # unparsable text: the comment covers its own line only


def file_suppression(text: str) -> frozenset[str]:
    """Codes silenced for the whole file (`{"*"}` for all, empty for none)."""
    if "ignore-file" not in text:
        return frozenset()
    out: frozenset[str] = frozenset()
    for m in _FILE_RE.finditer(text):
        out |= _split_codes(m.group("codes"))
    return out


def _silenced(code: str, codes: frozenset[str]) -> bool:
    return "*" in codes or any(code.startswith(c) for c in codes)


def _covered(v: Violation, per_line: dict[int, frozenset[str]]) -> bool:
    codes = per_line.get(v.span.line, frozenset()) | per_line.get(v.span.end_line, frozenset())
    return bool(codes) and _silenced(v.code, codes)


def apply_suppressions(text: str, violations: Iterable[Violation]) -> list[Violation]:
    per_file = file_suppression(text)
    per_line = line_suppressions(text, statements=False)
    spread = False  # the statements' spans are read (tokenized) only when needed
    out = []
    for v in violations:
        if v.code == "OLX000":
            out.append(v)  # a syntax error cannot be silenced
            continue
        if per_file and _silenced(v.code, per_file):
            continue
        if _covered(v, per_line):
            continue
        if per_line and not spread:
            _spread_to_statements(text, per_line)
            spread = True
            if _covered(v, per_line):
                continue
        out.append(v)
    return out


# --------------------------------------------------------------------------- --add-noqa

_NOQA_CODES = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)
_IGNORE_CODES = re.compile(r"#\s*onnxlint:\s*ignore\[(?P<codes>[^\]]*[^\s\]][^\]]*)\]", re.I)
# Tokens that open and close a string whose parts are tokens of their own (Python 3.12+).
_STRING_OPEN = {
    getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)
}
_STRING_CLOSE = {
    getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)
}


@dataclass(frozen=True)
class _Layout:
    """Where a comment can go in a text: by 1-based line."""

    blocked: frozenset[int]  # lines that end inside a string or with a backslash continuation
    statement_end: dict[int, int]  # line -> the last line of the statement it is in
    comment: dict[int, int]  # line -> the column (0-based) where its comment starts


def _layout(python: str) -> _Layout | None:
    """The text's layout, from Python's tokenizer; None when it cannot be tokenized."""
    blocked: set[int] = set()
    ends: dict[int, int] = {}
    comment: dict[int, int] = {}
    opened: list[int] = []
    start: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(python).readline):
            if tok.type == tokenize.COMMENT:
                comment[tok.start[0]] = tok.start[1]
            elif tok.type == tokenize.STRING and tok.end[0] > tok.start[0]:
                blocked.update(range(tok.start[0], tok.end[0]))
            elif tok.type in _STRING_OPEN:
                opened.append(tok.start[0])
            elif tok.type in _STRING_CLOSE and opened:
                blocked.update(range(opened.pop(), tok.end[0]))
            # the statements, as _spread_to_statements reads them
            if tok.type in (tokenize.COMMENT, tokenize.NL) and start is None:
                continue
            if start is None:
                start = tok.start[0]
            if tok.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                for line in range(start, tok.start[0] + 1):
                    ends[line] = tok.start[0]
                start = None
            elif tok.type in (tokenize.INDENT, tokenize.DEDENT):
                start = None
    except (tokenize.TokenError, SyntaxError):
        return None
    for number, text in enumerate(python.split("\n"), start=1):
        if text.endswith("\\") and number not in blocked and number not in comment:
            blocked.add(number)
    return _Layout(frozenset(blocked), ends, comment)


def _code_tokens(python: str) -> list[tuple[int, str]] | None:
    try:
        return [
            (t.type, t.string)
            for t in tokenize.generate_tokens(io.StringIO(python).readline)
            if t.type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE)
        ]
    except (tokenize.TokenError, SyntaxError):
        return None


def _with_codes(line: str, column: int | None, codes: list[str]) -> str | None:
    """`line` with `codes` suppressed: merged into the suppression comment it has, else a
    `# noqa: ...` after its code (and after any other comment); None when nothing is new."""
    if column is not None:
        for pattern in (_NOQA_CODES, _IGNORE_CODES):
            m = pattern.search(line, column)
            if m is None:
                continue
            have = {c.upper() for c in re.split(r"[\s,]+", m.group("codes")) if c}
            new = [c for c in codes if c not in have]
            if not new:
                return None
            at = m.end("codes")
            return f"{line[:at]}, {', '.join(new)}{line[at:]}"
    code = line.rstrip(" \t")
    return f"{code}  # noqa: {', '.join(codes)}"


def add_noqa(
    text: str, violations: Iterable[Violation], python: str | None = None
) -> tuple[str, int, list[Violation]]:
    """`onnxlint check --add-noqa` for one text: (the text with a suppression comment for each
    finding, how many lines got one or had theirs extended, the findings left without one).

    A finding's comment goes at the end of the line where it starts or, when that line ends
    inside a string or with a backslash, of the last line of its statement (which covers the
    statement's lines). It is merged into a `# noqa: CODES` or `# onnxlint: ignore[CODES]` the
    line has. `python` is the text as Python when it differs (a notebook cell with its IPython
    lines masked), line for line. Only comments change: the result is checked token for token
    (else the text is returned as it was, every finding left), and each finding must be
    suppressed by what was written (else it is left)."""
    python = text if python is None else python
    found = list(violations)
    layout = _layout(python)
    if layout is None:
        return text, 0, found
    lines, py_lines = text.split("\n"), python.split("\n")
    codes: dict[int, list[str]] = {}
    placed: list[Violation] = []
    left: list[Violation] = []
    for v in found:
        line = v.span.line
        target = line if line not in layout.blocked else layout.statement_end.get(line)
        if (
            v.code == SYNTAX_ERROR_CODE
            or target is None
            or target in layout.blocked
            or target > len(lines)
        ):
            left.append(v)
            continue
        placed.append(v)
        codes.setdefault(target, [])
        if v.code not in codes[target]:
            codes[target].append(v.code)
    added = 0
    for target, line_codes in codes.items():
        column = layout.comment.get(target)
        new = _with_codes(lines[target - 1], column, sorted(line_codes))
        if new is None:
            continue
        # the same comment on the Python text (a masked cell line is never a target)
        py_new = _with_codes(py_lines[target - 1], column, sorted(line_codes))
        lines[target - 1] = new
        py_lines[target - 1] = py_new if py_new is not None else py_lines[target - 1]
        added += 1
    new_text, new_python = "\n".join(lines), "\n".join(py_lines)
    if added == 0:
        return text, 0, found
    if _code_tokens(new_python) != _code_tokens(python):
        return text, 0, found
    left += apply_suppressions(new_python, placed)
    return new_text, added, sorted(left, key=Violation.sort_key)
