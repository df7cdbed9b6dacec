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
