"""Suppression comments: `# onnxlint: ignore[OLX201]`, `# noqa: OLX201`, `# onnxlint: ignore-file`.

A bare `# onnxlint: ignore` or `# noqa` silences every onnxlint code on its line. A
finding is silenced by a comment on the line where it starts or the line where it ends
(so a multi-line call can carry the comment after its closing parenthesis).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from onnxlint.violation import Violation

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


def line_suppressions(text: str) -> dict[int, frozenset[str]]:
    """1-based line -> codes silenced there (`{"*"}` for all)."""
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
    return out


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


def apply_suppressions(text: str, violations: Iterable[Violation]) -> list[Violation]:
    per_file = file_suppression(text)
    per_line = line_suppressions(text)
    out = []
    for v in violations:
        if v.code == "OLX000":
            out.append(v)  # a syntax error cannot be silenced
            continue
        if per_file and _silenced(v.code, per_file):
            continue
        codes = per_line.get(v.span.line, frozenset()) | per_line.get(v.span.end_line, frozenset())
        if codes and _silenced(v.code, codes):
            continue
        out.append(v)
    return out
