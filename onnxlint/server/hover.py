"""Hover: a short summary of the rule, over a finding or over a code in a suppression comment.

VS Code already shows the diagnostic's message above the hover, so the hover does not repeat
it: the rule's code and name, two or three lines of why, the "Use instead" snippet, the fix
on offer and a link to the full page (`onnxlint rule OLXnnn`, docs/rules/OLXnnn.md). A
summary stays under `MAX_SUMMARY` characters for every rule (a test checks them all).
"""

from __future__ import annotations

import re
from typing import Any

from lsprotocol import types

from onnxlint.server.app import OnnxlintServer
from onnxlint.server.convert import Lines, contains, diagnostic

# A code inside an `onnxlint: ignore[...]`, `onnxlint: ignore-file[...]` or noqa comment.
_COMMENT_RE = re.compile(r"#\s*(?:onnxlint:\s*ignore(?:-file)?\[[^\]]*\]|noqa:[^#]*)", re.I)
_CODE_RE = re.compile(r"\b[A-Z]{3}\d{3}\b", re.I)
_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")

MAX_SUMMARY = 900
WHY_CHARS = 330
SNIPPET_LINES = 8
SNIPPET_CHARS = 330


_TRACED_RE = re.compile(r"\btrac(?:ing|ed|e)\b|TorchScript|jit\.trace", re.I)


def _paragraph(text: str, message: str | None) -> str:
    """The paragraph of "Why is this bad?" that is about the finding's exporter: a rule
    whose why has one paragraph for tracing and one for the dynamo exporter (OLX104)
    explains the one its message names."""
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    if message is None or len(paragraphs) < 2:
        return paragraphs[0] if paragraphs else ""
    traced = _TRACED_RE.search(message) is not None
    for p in paragraphs:
        about_tracing = _TRACED_RE.match(p.strip()) is not None
        if about_tracing == traced:
            return p
    return paragraphs[0]


def _why(text: str, message: str | None = None) -> str:
    """The first sentences of "Why is this bad?" (of its paragraph about the finding's
    exporter), up to WHY_CHARS."""
    paragraph = " ".join(_paragraph(text, message).split())
    out = ""
    for sentence in _SENTENCE_RE.split(paragraph):
        if out and len(out) + len(sentence) + 1 > WHY_CHARS:
            break
        out = f"{out} {sentence}".strip()
    if len(out) > WHY_CHARS:
        out = out[: WHY_CHARS - 3].rsplit(" ", 1)[0] + "..."
        if out.count("`") % 2:
            out += "`"
    return out


def _snippet(text: str) -> str:
    """The "Use instead" code block, cut to SNIPPET_LINES lines and SNIPPET_CHARS."""
    m = re.search(r"```(\w*)\n(.*?)```", text, re.S)
    if m is None:
        return ""
    lines: list[str] = []
    for line in m.group(2).rstrip("\n").split("\n"):
        if len(lines) >= SNIPPET_LINES or sum(map(len, lines)) + len(line) > SNIPPET_CHARS:
            lines.append("...")
            break
        lines.append(line if len(line) <= 88 else line[:85] + "...")
    return f"```{m.group(1) or 'python'}\n" + "\n".join(lines) + "\n```"


def _fix_line(rule: Any, fix: Any) -> str:
    from onnxlint.core.violation import FixSafety

    if fix is not None and fix.changes and fix.safety is not FixSafety.DISPLAY:
        kind = "safe, also in Fix all" if fix.safety is FixSafety.SAFE else "unsafe: review it"
        return f"**Quick fix:** {fix.title} ({kind})"
    safety = getattr(rule, "fix_safety", None)
    if safety is FixSafety.SAFE:
        return "**Fix:** available where the code allows it (also in Fix all)"
    if safety is FixSafety.UNSAFE:
        return "**Fix:** a quick fix where the code allows it (unsafe: review it)"
    return "**Fix:** none automatic"


def rule_summary(code: str, fix: Any = None, message: str | None = None) -> str | None:
    """The hover's Markdown for a rule: code and name, why (about the exporter `message`,
    the finding's, names), use instead, fix, link."""
    from onnxlint.core.violation import DOCS_BASE_URL
    from onnxlint.rules import rule_by_code

    rule = rule_by_code(code)
    if rule is None:
        return None
    sections = rule.doc_sections()
    parts = [f"**{rule.code}** `{rule.name}` · {rule.severity.value}"]
    why = _why(sections.get("Why is this bad?", "") or sections.get("What it does", ""), message)
    if why:
        parts.append(why)
    snippet = _snippet(sections.get("Use instead", ""))
    if snippet:
        parts.append("**Use instead:**\n" + snippet)
    parts.append(_fix_line(rule, fix))
    parts.append(f"[Full rule page]({DOCS_BASE_URL}{rule.code}/)")
    text = "\n\n".join(parts)
    if len(text) > MAX_SUMMARY and snippet:  # never cut the link: drop the snippet
        text = "\n\n".join(p for p in parts if not p.startswith("**Use instead:**"))
    return text


def _confirmed_by(v: Any) -> str:
    """For a static finding the deep analysis confirmed: one line naming the deep rules."""
    from onnxlint.core.violation import DOCS_BASE_URL

    codes = [r.message.split(" ", 1)[0] for r in v.related if re.match(r"OLX8\d\d ", r.message)]
    if not codes:
        return ""
    links = ", ".join(f"[{c}]({DOCS_BASE_URL}{c}/)" for c in dict.fromkeys(codes))
    return f"\n\nConfirmed by the deep analysis: {links}"


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
            page = rule_summary(code)
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
        page = rule_summary(v.code, v.fix, v.message)
        if page is not None:
            pages.append(page + _confirmed_by(v))
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
    path, module = ls.module_of(uri, source)  # a notebook cell: its notebook
    config, _, _ = ls.config_for(uri)

    def lookup() -> list[str] | None:
        reach = ls.engine.project_model.for_file(path, module, config)
        sites = reach.functions.get((name, "forward")) or reach.classes.get(name)
        if sites is None:
            return None if not is_forward and name not in _module_classes(ls, path, module) else []
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
    return {c.name for c in facts.semantic.module_classes()} if facts is not None else set()


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
