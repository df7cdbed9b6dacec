"""Hover: the rule's page as Markdown, over a finding or over a code in a suppression comment.

The page is `onnxlint.docs.rule_markdown` (the same text as `docs/rules/OLXnnn.md` and
`onnxlint rule OLXnnn`); if that module is unavailable, it is rendered here from the rule
class's docstring sections.
"""

from __future__ import annotations

import re

from lsprotocol import types

from onnxlint.server.convert import contains, diagnostic
from onnxlint.server.server import OnnxlintServer

# A code inside an `onnxlint: ignore[...]`, `onnxlint: ignore-file[...]` or noqa comment.
_COMMENT_RE = re.compile(r"#\s*(?:onnxlint:\s*ignore(?:-file)?\[[^\]]*\]|noqa:[^#]*)", re.I)
_CODE_RE = re.compile(r"\b[A-Z]{3}\d{3}\b", re.I)


def rule_page(code: str) -> str | None:
    from onnxlint.rules import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        return None
    try:
        from onnxlint.docs import rule_markdown
    except ImportError:  # pragma: no cover - the docs module ships with the package
        pass
    else:
        return rule_markdown(rule)
    sections = rule.doc_sections()
    parts = [f"# {rule.code}: {rule.name}", ""]
    for name, body in sections.items():
        parts += [f"## {name}", "", body, ""]
    return "\n".join(parts)


def code_in_comment(line: str, character: int) -> tuple[str, int, int] | None:
    """(code, start, end) of the rule code under `character` in a suppression comment."""
    for m in _COMMENT_RE.finditer(line):
        for c in _CODE_RE.finditer(m.group(0)):
            start, end = m.start() + c.start(), m.start() + c.end()
            if start <= character <= end:
                return c.group(0).upper(), start, end
    return None


async def hover(ls: OnnxlintServer, params: types.HoverParams) -> types.Hover | None:
    uri = params.text_document.uri
    res = await ls.current(uri)
    lines = ls.lines(res.text)
    pos = params.position
    line_no, col = lines.code_point_column(pos)
    text = lines.line_text(line_no)
    if "#" in text:
        found = code_in_comment(text, col - 1)
        if found is not None:
            code, start, end = found
            page = rule_page(code)
            if page is not None:
                return types.Hover(
                    contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=page),
                    range=lines.range(line_no, start + 1, line_no, end + 1),
                )
    settings = ls.settings_for(uri)
    pages: list[str] = []
    rng: types.Range | None = None
    for v in ls.violations(uri):
        d = diagnostic(v, lines, settings.severity_for(v.code))
        if not contains(d.range, pos):
            continue
        page = rule_page(v.code)
        header = f"**{v.code}**: {v.message}"
        pages.append(header + ("\n\n---\n\n" + page if page else ""))
        rng = rng or d.range
    if not pages:
        return None
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(dict.fromkeys(pages))
        ),
        range=rng,
    )


def register(server: OnnxlintServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
