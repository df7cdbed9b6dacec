"""Hover: the rule's page as Markdown, over a finding or over a code in a suppression comment.

The page is `onnxlint.docs.rule_markdown` (the same text as `docs/rules/OLXnnn.md` and
`onnxlint rule OLXnnn`); if that module is unavailable, it is rendered here from the rule
class's docstring sections.
"""

from __future__ import annotations

import re

from lsprotocol import types

from onnxlint.server.convert import Lines, contains, diagnostic
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
        return await _export_hover(ls, uri, res.text, text, line_no, lines)
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value="\n\n---\n\n".join(dict.fromkeys(pages))
        ),
        range=rng,
    )


_CLASS_RE = re.compile(r"^(\s*)class\s+(\w+)")
_FORWARD_RE = re.compile(r"^(\s*)(?:async\s+)?def\s+forward\b")


async def _export_hover(
    ls: OnnxlintServer, uri: str, source: str, line: str, line_no: int, lines: Lines
) -> types.Hover | None:
    """Over a class line or its `def forward`: which exports of the project reach it."""
    cls = _class_at(source, line, line_no)
    if cls is None:
        return None
    name, is_forward = cls
    path = ls.path_of(uri)
    config, _, _ = ls.config_for(uri)

    def lookup() -> list[str] | None:
        reach = ls.engine.project_model.for_file(path, source, config)
        sites = reach.functions.get((name, "forward")) or reach.classes.get(name)
        if sites is None:
            return None if not is_forward and name not in _module_classes(ls, path, source) else []
        root = str(config.root) if config.root is not None else None
        out = []
        for s in sorted(sites, key=lambda s: (s.path, s.line)):
            dims = f", dynamic: {s.dims}" if s.dims else (", dynamic dims" if s.dynamic else "")
            out.append(f"- `{s.where(root)}` ({s.exporter}{dims})")
        return out

    found = await ls.run_check(lookup)
    if found is None:
        return None
    what = f"`{name}.forward`" if is_forward else f"`{name}`"
    if found:
        n = len(found)
        body = f"{what} is exported by {n} export{'s' if n > 1 else ''} of this project:\n\n"
        body += "\n".join(found)
    else:
        body = (
            f"No export in this project reaches {what}: its findings are judged as code "
            "that may be exported elsewhere."
        )
    start = len(line) - len(line.lstrip())
    return types.Hover(
        contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=body),
        range=lines.range(line_no, start + 1, line_no, len(line.rstrip()) + 1),
    )


def _module_classes(ls: OnnxlintServer, path: str, source: str) -> set[str]:
    """Names of the file's torch module classes, from the project index's facts of this
    text (kept per content, with bases resolved across files as the checks do)."""
    facts = ls.engine.project.facts(path, source)
    return {c.name for c in facts.model.module_classes()} if facts is not None else set()


def _class_at(source: str, line: str, line_no: int) -> tuple[str, bool] | None:
    """(class name, on its forward) when `line` is a `class X` line or the `def forward`
    of a class."""
    m = _CLASS_RE.match(line)
    if m is not None:
        return m.group(2), False
    m = _FORWARD_RE.match(line)
    if m is None:
        return None
    indent = len(m.group(1))
    for above in reversed(source.splitlines()[: line_no - 1]):
        c = _CLASS_RE.match(above)
        if c is not None and len(c.group(1)) < indent:
            return c.group(2), True
        dedented = above.strip() and len(above) - len(above.lstrip()) < indent
        if dedented and not above.lstrip().startswith(("@", "#")):
            return None
    return None


def register(server: OnnxlintServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
