"""The report a person reads: Markdown and self-contained HTML from DeepResults.

Sections per target: status, model summary (parameters by dtype and what real
weights would weigh), findings with a code excerpt, unsupported ops with
workarounds, the ONNX signature and op histogram, phase timings and the
worker's peak memory. HTML has inline CSS only (no scripts, no fetches), so
the file can be mailed or attached to CI.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from onnxlint.core.violation import Violation
from onnxlint.deep.result import DeepResult, gb


def _size(n: float | None) -> str:
    """Bytes in decimal units (kB, MB, GB), as every memory figure of the reports."""
    if n is None:
        return "?"
    return f"{n:.0f} B" if n < 1000 else gb(n)


def _excerpt(path: str, line: int, context: int = 2) -> list[tuple[int, str, bool]]:
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return []
    lo, hi = max(1, line - context), min(len(lines), line + context)
    return [(i, lines[i - 1], i == line) for i in range(lo, hi + 1)]


def _rel(path: str, root: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(root.resolve()))
    except ValueError:
        return path


def _loc(path: str, line: int, root: Path, cell: int | None = None) -> str:
    """A finding's place in the HTML report: a link to the file (`file:///...#L16`), which
    VS Code's report view turns into a jump to that line in the editor (a notebook cell's
    place, `nb.ipynb:cell 3:8`, links to the notebook)."""
    text = f"<code>{_e(_rel(path, root))}:{_cell(cell)}{line}</code>"
    if not path.endswith((".py", ".ipynb")) or not Path(path).is_absolute():
        return text
    anchor = f"#L{line}" if cell is None else ""
    return f'<a class="loc" href="{_e(Path(path).as_uri())}{anchor}">{text}</a>'


def _cell(cell: int | None) -> str:
    return f"cell {cell}:" if cell is not None else ""


def _shape(sig: dict[str, Any]) -> str:
    shape = sig.get("shape")
    dims = "?" if shape is None else ", ".join(str(d) for d in shape)
    return f"{sig.get('dtype', '?')}[{dims}]"


FOLD_ROWS = 12  # op tables longer than this are folded (<details>)


def _counts(r: DeepResult) -> str:
    """`2 errors, 1 warning` (what a reader wants before the details)."""
    n = {
        sev: sum(1 for v in r.violations if v.severity.value == sev)
        for sev in ("error", "warning", "info")
    }
    parts = [f"{k} {sev}{'s' * (k != 1)}" for sev, k in n.items() if k]
    return ", ".join(parts) or "no findings"


def _frozen_dims(r: DeepResult) -> dict[tuple[str, int], Any]:
    """(input name, dim index) -> the constant the model's code forces a dim asked to be
    dynamic to (OLX804), so the report shows that, not the dim's name."""
    out: dict[tuple[str, int], Any] = {}
    for f in (r.data or {}).get("findings") or []:
        dim = f.get("dim") if isinstance(f, dict) else None
        if isinstance(dim, dict) and dim.get("input") is not None and dim.get("dim") is not None:
            out[(str(dim["input"]), int(dim["dim"]))] = dim.get("value")
    return out


def _input_shape(sig: dict[str, Any], frozen: dict[tuple[str, int], Any]) -> str:
    shape = sig.get("shape")
    if shape is None:
        return _shape(sig)
    dims = []
    for i, d in enumerate(shape):
        key = (str(sig.get("name")), i)
        if key in frozen and isinstance(d, str):
            dims.append(f"{frozen[key]} (asked: {d}; forced, OLX804)")
        else:
            dims.append(str(d))
    return f"{sig.get('dtype', '?')}[{', '.join(dims)}]"


def _onnx_caveat(r: DeepResult) -> str | None:
    """Why the ONNX section describes a model the real export would not give."""
    if r.succeeded or not (r.data or {}).get("onnx"):
        return None
    if r.outcome.startswith("fails at step 1/3"):
        return (
            f"The export {r.outcome}. The model below was translated for this report by "
            "assuming each data-dependent condition holds; `torch.onnx.export` does not "
            "produce it."
        )
    return f"The export {r.outcome}; the model below is what the analysis got that far."


def _sections(r: DeepResult) -> dict[str, Any]:
    d = r.data or {}
    return {
        "model": d.get("model") or {},
        "onnx": d.get("onnx") or {},
        "unsupported": d.get("unsupported_ops") or [],
        "skipped": d.get("skipped") or {},
        "verify": d.get("verify"),
        "explain": d.get("explain") or {},
    }


# ---------------------------------------------------------------------- Markdown


def to_markdown(results: list[DeepResult]) -> str:
    out = ["# onnxlint deep analysis", ""]
    for r in results:
        out += _md_target(r)
    return "\n".join(out).rstrip() + "\n"


def _md_target(r: DeepResult) -> list[str]:
    s = _sections(r)
    root = r.target.root
    out = [f"## {r.target.name}: {r.outcome} ({_counts(r)})", ""]
    out.append(
        f"- status: **{r.outcome}**{' (cached)' if r.cached else ''}"
        + (f" — {r.detail}" if r.detail else "")
    )
    n = len(r.violations)
    out.append(f"- findings: {n} finding{'s' * (n != 1)} ({_counts(r)})")
    out.append(f"- {_source_md(r)}; torch {r.data.get('torch', '?')}")
    m = s["model"]
    if m:
        out.append(
            f"- model: `{m.get('class')}`, {m.get('params', 0):,} parameters; real weights "
            f"would take {_size(m.get('weight_bytes'))}; inputs: {', '.join(m.get('inputs', []))}"
        )
        for dtype, v in sorted((m.get("params_by_dtype") or {}).items()):
            out.append(f"  - {dtype}: {v['count']:,} ({_size(v['bytes'])})")
    out.append("")
    out += _md_memory(r)
    if r.violations:
        out += ["### Findings", ""]
        for v in r.violations:
            out += _md_violation(v, root)
    unsupported = s["unsupported"]
    if unsupported:
        out += [
            "### Unsupported operators",
            "",
            "| op | nodes | where | workaround |",
            "|---|---|---|---|",
        ]
        for u in unsupported:
            where = f"{_rel(u['file'], root)}:{u['line']}" if u.get("file") else "?"
            out.append(f"| `{u['op']}` | {u['count']} | {where} | {u['workaround']} |")
        out.append("")
    onnx = s["onnx"]
    if onnx:
        caveat = _onnx_caveat(r)
        checker = "checker on this model" if caveat else "checker"
        frozen = _frozen_dims(r)
        out += ["### ONNX model", ""]
        if caveat:
            out += [f"> {caveat}", ""]
        out += [
            f"opset {onnx.get('opset')} (requested {onnx.get('requested_opset')}), "
            f"{onnx.get('nodes')} nodes, {onnx.get('initializers')} initializers, {checker}: "
            f"{onnx.get('checker')}",
            "",
            "| input | type |",
            "|---|---|",
        ]
        out += [f"| `{i['name']}` | `{_input_shape(i, frozen)}` |" for i in onnx.get("inputs", [])]
        out += ["", "| output | type |", "|---|---|"]
        out += [f"| `{o['name']}` | `{_shape(o)}` |" for o in onnx.get("outputs", [])]
        hist = onnx.get("op_histogram") or {}
        rows = ["| op type | count |", "|---|---|", *(f"| {k} | {v} |" for k, v in hist.items())]
        if len(hist) > FOLD_ROWS:
            summary = f"{len(hist)} op types, {sum(hist.values())} nodes"
            rows = [f"<details><summary>{summary}</summary>", "", *rows, "", "</details>"]
        out += ["", *rows]
        out.append("")
    if s["verify"]:
        out += [
            "### Verification (onnxruntime vs eager)",
            "",
            "| case | max abs | max rel | status |",
            "|---|---|---|---|",
        ]
        for c in s["verify"]:
            out.append(
                f"| {c.get('case')} | {c.get('max_abs', '')} | {c.get('max_rel', '')} "
                f"| {c.get('status')} |"
            )
        out.append("")
    if s["skipped"]:
        out += ["### Skipped", ""] + [f"- {k}: {v}" for k, v in s["skipped"].items()] + [""]
    out += ["### Phases", "", "| phase | seconds |", "|---|---|"]
    out += [f"| {k} | {v:.2f} |" for k, v in r.phases.items()]
    out += ["", f"Worker peak memory: {_size(r.peak_rss)}; wall time {r.wall:.2f} s.", ""]
    return out


SKIPPED_WHY = "weights, devices and output paths do not matter here"


def script_notes(r: DeepResult) -> list[str]:
    """How the script run reached what it analysed, when a user would not assume it: the
    target's call made directly (the statements before it did not run), a call in a loop
    whose passes export several models (each class analysed)."""
    data = r.data or {}
    return [n for n in (data.get("script_direct"), data.get("script_loop")) if n]


def script_skipped(r: DeepResult, root: Path) -> str:
    """What a script target's run faked, short, one entry per line of the script:
    `required arguments --checkpoint, --out (export.py:8), torch.load, .cuda() (export.py:25)`."""
    items = (r.data or {}).get("script_skipped") or []
    at: dict[str, list[str]] = {}
    for item in items:
        what = str(item.get("what", "")).split(" (")[0]
        try:
            where = str(Path(item["file"]).resolve().relative_to(root.resolve()))
        except (KeyError, ValueError):
            where = str(item.get("file", ""))
        at.setdefault(f"{where}:{item.get('line')}", []).append(what)
    return ", ".join(f"{_joined(whats)} ({where})" for where, whats in at.items())


def _joined(whats: list[str]) -> str:
    """`required argument a`, `required argument b` -> `required arguments a, b`."""
    prefix = "required argument "
    args = [w.removeprefix(prefix) for w in whats if w.startswith(prefix)]
    rest = [w for w in whats if not w.startswith(prefix)]
    if len(args) > 1:
        rest.insert(0, "required arguments " + ", ".join(args))
    elif args:
        rest.insert(0, prefix + args[0])
    return ", ".join(rest)


def _script_words(r: DeepResult) -> str:
    """A script target in words: which call it ran to, and what it faked on the way."""
    call = (r.data or {}).get("script_call") or {}
    script = r.target.name.rpartition(":")[0] or r.target.name
    notebook = r.target.script is not None and str(r.target.script).lower().endswith(".ipynb")
    if notebook:  # `nb.ipynb:cell 5:2`: its code cells, run as one script
        script = _rel(str(r.target.script), r.target.root)
    function = (r.target.extra or {}).get("function")
    if function:  # the editor's lens over a call in a function: it imports and calls it
        text = f"called `{function}()` of `{script}` (imported, not run) up to its export call"
    else:
        text = f"ran `{script}` up to its export call"
    if call and notebook and r.target.name.partition(":cell ")[2]:
        cell, _, line = r.target.name.rpartition(":cell ")[2].partition(":")
        text += f" `{call.get('name')}` in cell {cell}, line {line}"
    elif call:
        text += f" `{call.get('name')}` on line {call.get('line')}"
    for said in script_notes(r):
        text += f"; {said}"
    skipped = script_skipped(r, r.target.root)
    if skipped:
        text += f"; skipped ({SKIPPED_WHY}): {skipped}"
    return text


def _source_md(r: DeepResult) -> str:
    if r.target.script is not None:
        return "script: " + _script_words(r)
    return f"factory: `{r.target.factory}`"


def _md_violation(v: Violation, root: Path) -> list[str]:
    where = f"{_rel(v.path, root)}:{_cell(v.cell)}{v.line}"
    out = [f"- **{v.code}** ({v.severity.value}) `{where}` — {v.message}"]
    for n in v.notes:
        first, _, rest = n.partition("\n")
        out.append(f"  - {first}")
        if rest.strip():
            out += ["", "    ```text", *(f"    {line}" for line in rest.splitlines()), "    ```"]
    ex = _excerpt(v.path, v.line)
    if ex and v.path.endswith(".py"):
        out.append("")
        out.append("  ```python")
        out += [f"  {'>' if mark else ' '}{i:5d} | {text}" for i, text, mark in ex]
        out.append("  ```")
    for link in _chain_links(v):  # the chain from the user's code to the line
        out += ["", f"  {link.message or 'via'}: `{_rel(link.path, root)}:{link.line}`", ""]
        out.append("  ```python")
        out += [
            f"  {'>' if m else ' '}{i:5d} | {t}" for i, t, m in _excerpt(link.path, link.line, 0)
        ]
        out.append("  ```")
    out.append("")
    return out


def _chain_links(v: Violation) -> list[Any]:
    """The related locations of a deep finding that are source lines (its chain)."""
    return [r for r in v.related if r.path.endswith(".py") and _excerpt(r.path, r.line, 0)]


# ---------------------------------------------------------------------- HTML

_CSS = """
:root{color-scheme:light dark;--olx-fg:#1f2328;--olx-bg:#fff;--olx-muted:#57606a;
--olx-border:#d0d7de;--olx-code:#f6f8fa;--olx-hl:#fff3b0;--olx-err:#cf222e;--olx-warn:#9a6700;
--olx-info:#0969da;--olx-ok:#1a7f37;--olx-grid:#eaeef2}
@media (prefers-color-scheme:dark){:root{--olx-fg:#e6edf3;--olx-bg:#0d1117;--olx-muted:#9198a1;
--olx-border:#3d444d;--olx-code:#151b23;--olx-hl:#4d3f00;--olx-err:#ff7b72;--olx-warn:#d29922;
--olx-info:#58a6ff;--olx-ok:#3fb950;--olx-grid:#262c36}}
:root{--fg:var(--vscode-editor-foreground,var(--olx-fg));
--bg:var(--vscode-editor-background,var(--olx-bg));
--muted:var(--vscode-descriptionForeground,var(--olx-muted));
--border:var(--vscode-panel-border,var(--olx-border));
--code:var(--vscode-textCodeBlock-background,var(--olx-code));
--hl:var(--vscode-editor-findMatchHighlightBackground,var(--olx-hl));
--err:var(--vscode-errorForeground,var(--olx-err));
--warn:var(--vscode-editorWarning-foreground,var(--olx-warn));
--info:var(--vscode-editorInfo-foreground,var(--olx-info));
--ok:var(--vscode-testing-iconPassed,var(--olx-ok));
--link:var(--vscode-textLink-foreground,var(--olx-info));
--grid:var(--vscode-editorIndentGuide-background1,var(--olx-grid))}
body{font:14px/1.45 var(--vscode-font-family,system-ui,-apple-system,Segoe UI,sans-serif);
margin:2em auto;max-width:70em;color:var(--fg);background:var(--bg);padding:0 1em}
a{color:var(--link)}
h1{font-size:1.6em}h2{border-bottom:1px solid var(--border);padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid var(--border);
padding:.25em .6em;text-align:left;vertical-align:top}th{background:var(--code)}
code,pre{font-family:var(--vscode-editor-font-family,ui-monospace,SFMono-Regular,Menlo,monospace);
font-size:.92em;color:inherit}
pre{background:var(--code);padding:.5em;overflow-x:auto;margin:.3em 0}
.hl{background:var(--hl);display:block}.sev-error{color:var(--err)}.sev-warning{color:var(--warn)}
.sev-info{color:var(--info)}.finding{border-left:3px solid var(--border);padding-left:.8em;
margin:1em 0}
.status-ok{color:var(--ok)}.status-bad{color:var(--err)}.note{color:var(--muted);margin:.1em 0}
.summary td:first-child{font-weight:600}
.plot svg{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:100%;height:auto}
.plot text{fill:var(--fg)}.plot .frame{fill:var(--bg);stroke:var(--border)}
.plot .grid{stroke:var(--grid)}
"""


def to_html(results: list[DeepResult]) -> str:
    body = ["<h1>onnxlint deep analysis</h1>"]
    body.append('<ul class="targets">')
    for i, r in enumerate(results):
        cls = "status-ok" if r.succeeded else "status-bad"
        body.append(
            f'<li><a href="#t{i}">{_e(r.target.name)}</a>: <span class="{cls}">'
            f"{_e(r.outcome)}</span>, {_e(_counts(r))}</li>"
        )
    body.append("</ul>")
    for i, r in enumerate(results):
        body.append(_html_target(r, i))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        "<title>onnxlint deep analysis</title><style>"
        + _CSS
        + "</style></head><body>\n"
        + "\n".join(body)
        + "\n</body></html>\n"
    )


def _e(x: Any) -> str:
    return html.escape(str(x))


def _html_target(r: DeepResult, index: int) -> str:
    s = _sections(r)
    root = r.target.root
    status_cls = "status-ok" if r.succeeded else "status-bad"
    out = [
        f'<h2 id="t{index}">{_e(r.target.name)} <small class="{status_cls}">'
        f"{_e(r.outcome)}</small> <small>{_e(_counts(r))}</small></h2>",
        '<table class="summary">',
    ]
    out.append(
        f'<tr><td>status</td><td class="{status_cls}">{_e(r.outcome)}'
        f"{' (cached)' if r.cached else ''} {_e(r.detail)}</td></tr>"
    )
    if r.target.script is not None:
        out.append(f"<tr><td>script</td><td>{_inline_md(_script_words(r))}</td></tr>")
    else:
        out.append(f"<tr><td>factory</td><td><code>{_e(r.target.factory)}</code></td></tr>")
    out.append(f"<tr><td>torch</td><td>{_e(r.data.get('torch', '?'))}</td></tr>")
    m = s["model"]
    if m:
        out.append(f"<tr><td>model</td><td><code>{_e(m.get('class'))}</code></td></tr>")
        by_dtype = ", ".join(
            f"{_e(k)}: {v['count']:,} ({_size(v['bytes'])})"
            for k, v in sorted((m.get("params_by_dtype") or {}).items())
        )
        out.append(
            f"<tr><td>parameters</td><td>{m.get('params', 0):,} ({by_dtype or 'none'}); real "
            f"weights would take <b>{_size(m.get('weight_bytes'))}</b></td></tr>"
        )
        out.append(
            f"<tr><td>inputs</td><td><code>{_e(', '.join(m.get('inputs', [])))}</code></td></tr>"
        )
    out.append(
        f"<tr><td>worker peak memory</td><td>{_size(r.peak_rss)}</td></tr>"
        f"<tr><td>wall time</td><td>{r.wall:.2f} s</td></tr></table>"
    )
    memory = _html_memory(r)
    if memory:
        out.append(memory)
    out.append(f"<h3>Findings ({len(r.violations)})</h3>")
    if not r.violations:
        out.append("<p>No findings.</p>")
    for v in r.violations:
        out.append('<div class="finding">')
        out.append(
            f'<div><b class="sev-{v.severity.value}">{_e(v.code)}</b> '
            f'<a href="{_e(v.url)}">{_e(_rule_name(v.code))}</a> '
            f"{_loc(v.path, v.line, root, v.cell)}</div>"
        )
        out.append(f"<div>{_inline_md(v.message)}</div>")
        for n in v.notes:
            first, _, rest = n.partition("\n")
            out.append(f'<div class="note">{_inline_md(first)}</div>')
            if rest.strip():
                out.append(f"<pre>{_e(rest.strip(chr(10)))}</pre>")
        ex = _excerpt(v.path, v.line) if v.path.endswith(".py") else []
        if ex:
            lines = "".join(
                (f'<span class="hl">{i:5d} | {_e(t)}</span>' if mark else f"{i:5d} | {_e(t)}\n")
                for i, t, mark in ex
            )
            out.append(f"<pre>{lines}</pre>")
        for link in _chain_links(v):
            text = "".join(f"{i:5d} | {_e(t)}" for i, t, _m in _excerpt(link.path, link.line, 0))
            out.append(
                f'<div class="note">{_e(link.message or "via")}: '
                f"{_loc(link.path, link.line, root)}</div><pre>{text}</pre>"
            )
        out.append("</div>")
    if s["unsupported"]:
        out.append(
            "<h3>Unsupported operators</h3><table><tr><th>op</th><th>nodes</th>"
            "<th>where</th><th>workaround</th></tr>"
        )
        for u in s["unsupported"]:
            where = f"{_rel(u['file'], root)}:{u['line']}" if u.get("file") else "?"
            out.append(
                f"<tr><td><code>{_e(u['op'])}</code></td><td>{u['count']}</td>"
                f"<td><code>{_e(where)}</code></td><td>{_e(u['workaround'])}</td></tr>"
            )
        out.append("</table>")
    onnx = s["onnx"]
    if onnx:
        caveat = _onnx_caveat(r)
        checker = "checker on this model" if caveat else "checker"
        frozen = _frozen_dims(r)
        out.append("<h3>ONNX model</h3>")
        if caveat:
            out.append(f'<p class="note status-bad">{_inline_md(caveat)}</p>')
        out.append(
            f"<p>opset {_e(onnx.get('opset'))} (requested {_e(onnx.get('requested_opset'))}), "
            f"{_e(onnx.get('nodes'))} nodes, {_e(onnx.get('initializers'))} initializers, "
            f"{checker}: {_e(onnx.get('checker'))}</p>"
        )
        out.append("<table><tr><th>input</th><th>type</th></tr>")
        out += [
            f"<tr><td><code>{_e(i['name'])}</code></td>"
            f"<td><code>{_e(_input_shape(i, frozen))}</code></td></tr>"
            for i in onnx.get("inputs", [])
        ]
        out.append("</table><table><tr><th>output</th><th>type</th></tr>")
        out += [
            f"<tr><td><code>{_e(o['name'])}</code></td><td><code>{_e(_shape(o))}</code></td></tr>"
            for o in onnx.get("outputs", [])
        ]
        out.append("</table>")
        hist = onnx.get("op_histogram") or {}
        table = "<table><tr><th>op type</th><th>count</th></tr>" + "".join(
            f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in hist.items()
        )
        table += "</table>"
        if len(hist) > FOLD_ROWS:
            summary = f"{len(hist)} op types, {sum(hist.values())} nodes"
            table = f"<details><summary>{_e(summary)}</summary>{table}</details>"
        out.append(table)
    if s["verify"]:
        out.append(
            "<h3>Verification (onnxruntime vs eager)</h3><table><tr><th>case</th>"
            "<th>max abs</th><th>max rel</th><th>status</th></tr>"
        )
        for c in s["verify"]:
            out.append(
                f"<tr><td>{_e(c.get('case'))}</td><td>{_e(c.get('max_abs', ''))}</td>"
                f"<td>{_e(c.get('max_rel', ''))}</td><td>{_e(c.get('status'))}</td></tr>"
            )
        out.append("</table>")
    if s["skipped"]:
        out.append("<h3>Skipped</h3><ul>")
        out += [f"<li>{_e(k)}: {_e(v)}</li>" for k, v in s["skipped"].items()]
        out.append("</ul>")
    out.append("<h3>Phases</h3><table><tr><th>phase</th><th>seconds</th></tr>")
    out += [f"<tr><td>{_e(k)}</td><td>{v:.2f}</td></tr>" for k, v in r.phases.items()]
    out.append("</table>")
    return "\n".join(out)


_MD_CODE = re.compile(r"`([^`]+)`")
_MD_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_MD_LINK = re.compile(r"\[([^\]]+)\]\((https?://[^)\s]+)\)")
_URL = re.compile(r"(?<![\"'>=])\bhttps?://[^\s<]+[^\s<.,;:)]")


def _inline_md(text: str) -> str:
    """The inline Markdown of messages and notes (`code`, **bold**, [links](url), bare
    URLs) as HTML; everything else escaped."""
    out: list[str] = []
    pos = 0
    for m in _MD_CODE.finditer(text):
        out.append(_md_span(text[pos : m.start()]))
        out.append(f"<code>{_e(m.group(1))}</code>")
        pos = m.end()
    out.append(_md_span(text[pos:]))
    return "".join(out)


def _md_span(text: str) -> str:
    s = _e(text)
    s = _MD_BOLD.sub(r"<b>\1</b>", s)
    s = _MD_LINK.sub(r'<a href="\2">\1</a>', s)
    return _URL.sub(lambda m: f'<a href="{m.group(0)}">{m.group(0)}</a>', s)


def _rule_name(code: str) -> str:
    try:
        from onnxlint.rules import rule_by_code

        rule = rule_by_code(code)
    except Exception:
        rule = None
    return rule.name if rule is not None else code


def write_report(results: list[DeepResult], path: Path) -> None:
    """HTML for .html/.htm, Markdown otherwise."""
    text = to_html(results) if path.suffix.lower() in (".html", ".htm") else to_markdown(results)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


# ---------------------------------------------------------------------- memory

RUN_PEAK_WHAT = "what tracing and the TorchScript exporter need"


def _memory(r: DeepResult) -> dict[str, Any]:
    mem = (r.data or {}).get("memory")
    return mem if isinstance(mem, dict) else {}


def _peak_where(mem: dict[str, Any], root: Path) -> str:
    at = mem.get("run_peak_op") or {}
    if not at.get("op"):
        return ""
    where = f" at {at['op']}"
    if at.get("file") and at.get("line"):
        line = str(at["line"])
        if str(at["file"]).lower().endswith(".ipynb"):  # a line of its cells as one module
            from onnxlint.source.cells import cell_line

            found = cell_line(str(at["file"]), int(at["line"]))
            line = f"cell {found[0]}:{found[1]}" if found is not None else line
        where += f" ({_rel(str(at['file']), root)}:{line})"
    return where


def memory_lines(r: DeepResult) -> list[str]:
    """The memory figures in two lines of text (the CLI and the editor), or none."""
    mem = _memory(r)
    if not isinstance(mem.get("run_peak_bytes"), int):
        return []
    dtype = f" ({mem['weights_dtype']})" if mem.get("weights_dtype") else ""
    first = (
        f"weights {gb(int(mem.get('weights_bytes') or 0))}{dtype}   running it once at the "
        f"example inputs: peak {gb(mem['run_peak_bytes'])}"
        f"{_peak_where(mem, r.target.root)}"
    )
    second = f"({RUN_PEAK_WHAT})"
    if mem.get("analysis_peak_bytes"):
        second += f"   this analysis: {gb(int(mem['analysis_peak_bytes']))}"
    if mem.get("run_partial"):
        second += f"   (the run stopped early on fake tensors: {mem['run_partial']})"
    if mem.get("uncounted_kernels"):
        second += f"   (under-counted: fused {', '.join(mem['uncounted_kernels'])})"
    return [first, second]


def _md_memory(r: DeepResult) -> list[str]:
    mem = _memory(r)
    if not isinstance(mem.get("run_peak_bytes"), int):
        return []
    out = ["### Memory", "", "| | size | |", "|---|---|---|"]
    for label, value, note in _memory_rows(r):
        out.append(f"| {label} | {gb(value) if value else '?'} | {note} |")
    out.append("")
    sweep = mem.get("ort_sweep")
    if isinstance(sweep, dict):
        out += ["ONNX Runtime's process memory (MB) after each run over the sizes, twice:", ""]
        out += ["| sizes | " + " | ".join(_SERIES_LABEL[k] for k in _series_keys(sweep)) + " |"]
        out += ["|---" * (1 + len(_series_keys(sweep))) + "|"]
        series = _series(sweep)
        for i, label in enumerate(sweep.get("sizes") or []):
            vals = [f"{s[i] / 1e6:.0f}" if i < len(s) else "" for _k, s in series]
            out.append(f"| {label} | " + " | ".join(vals) + " |")
        out.append("")
    return out


def _memory_rows(r: DeepResult) -> list[tuple[str, int | None, str]]:
    mem = _memory(r)
    dtype = f" ({mem['weights_dtype']})" if mem.get("weights_dtype") else ""
    where = _peak_where(mem, r.target.root)
    peak_note = (
        RUN_PEAK_WHAT
        + (f"; the peak is{where}" if where else "")
        + "; tensors only: kernel scratch space and the allocator come on top"
    )
    if mem.get("uncounted_kernels"):
        peak_note += (
            "; **under-counted**: the run goes through fused kernels whose internal buffers "
            "are not tensors (" + ", ".join(f"`{k}`" for k in mem["uncounted_kernels"]) + ")"
        )
    if mem.get("run_partial"):
        peak_note += f"; the run stopped early on fake tensors: {mem['run_partial']}"
    return [
        (f"weights{dtype}", mem.get("weights_bytes"), "parameters and buffers"),
        ("running it once at the example inputs", mem.get("run_peak_bytes"), peak_note),
        (
            "this analysis",
            mem.get("analysis_peak_bytes"),
            "the worker's peak resident memory, fake tensors, before verification",
        ),
    ]


_SERIES_LABEL = {
    "default/1": "defaults, pass 1",
    "default/2": "defaults, pass 2",
    "lean/1": "no arena/pattern, pass 1",
    "lean/2": "no arena/pattern, pass 2",
}
_SERIES_STYLE = {
    "default/1": ("#cf222e", ""),
    "default/2": ("#cf222e", ' stroke-dasharray="5 3"'),
    "lean/1": ("#0969da", ""),
    "lean/2": ("#0969da", ' stroke-dasharray="5 3"'),
}


def _series_keys(sweep: dict[str, Any]) -> list[str]:
    return [k for k, _s in _series(sweep)]


def _series(sweep: dict[str, Any]) -> list[tuple[str, list[int]]]:
    runs = sweep.get("runs") or {}
    out = []
    for name in ("default", "lean"):
        r = runs.get(name)
        if isinstance(r, dict):
            out.append((f"{name}/1", [int(x) for x in r.get("pass1") or []]))
            out.append((f"{name}/2", [int(x) for x in r.get("pass2") or []]))
    return out


def _svg_bars(rows: list[tuple[str, int | None, str]]) -> str:
    """Horizontal bars, one per figure, on one linear scale."""
    width, label_w, bar_h, gap = 640, 150, 22, 10
    plot_w = width - label_w - 90
    top = max((v or 0) for _l, v, _n in rows) or 1
    height = len(rows) * (bar_h + gap) + gap
    colors = ["#8250df", "#cf222e", "#1a7f37"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="memory bars">'
    ]
    for i, (label, value, _note) in enumerate(rows):
        y = gap + i * (bar_h + gap)
        w = max(2.0, plot_w * (value or 0) / top)
        parts.append(
            f'<text x="{label_w - 8}" y="{y + bar_h * 0.7:.1f}" text-anchor="end" '
            f'font-size="12">{_e(label)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{w:.1f}" height="{bar_h}" '
            f'fill="{colors[i % len(colors)]}" rx="2"/>'
            f'<text x="{label_w + w + 6:.1f}" y="{y + bar_h * 0.7:.1f}" font-size="12" '
            f'font-weight="600">{_e(gb(value) if value else "?")}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _svg_sweep(sweep: dict[str, Any]) -> str:
    """Process memory after each run, per option set and pass, over the sweep's sizes."""
    series = _series(sweep)
    sizes = list(sweep.get("sizes") or [])
    n = max((len(s) for _k, s in series), default=0)
    if n < 2 or not sizes:
        return ""
    width, height = 640, 300
    left, right, top, bottom = 76, 16, 16, 92
    pw, ph = width - left - right, height - top - bottom
    values = [v for _k, s in series for v in s]
    lo, hi = min(values) / 1e6, max(values) / 1e6
    lo = max(0.0, lo - (hi - lo) * 0.1 - 1)
    hi = hi + (hi - lo) * 0.05 + 1

    def x(i: int) -> float:
        return left + pw * i / (n - 1)

    def y(v: float) -> float:
        return top + ph * (1 - (v / 1e6 - lo) / (hi - lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="onnxruntime memory sweep">',
        f'<rect x="{left}" y="{top}" width="{pw}" height="{ph}" class="frame" fill="#fff" '
        'stroke="#d0d7de"/>',
    ]
    for k in range(5):  # horizontal grid and MB ticks
        v = lo + (hi - lo) * k / 4
        yy = top + ph * (1 - k / 4)
        parts.append(
            f'<line x1="{left}" x2="{left + pw}" y1="{yy:.1f}" y2="{yy:.1f}" class="grid" '
            'stroke="#eaeef2"/>'
            f'<text x="{left - 6}" y="{yy + 4:.1f}" text-anchor="end" font-size="11">'
            f"{v:.0f}</text>"
        )
    parts.append(
        f'<text x="14" y="{top + ph / 2:.0f}" font-size="11" text-anchor="middle" '
        f'transform="rotate(-90 14 {top + ph / 2:.0f})">process memory (MB)</text>'
    )
    for i, label in enumerate(sizes[:n]):
        parts.append(
            f'<text x="{x(i):.1f}" y="{top + ph + 14}" font-size="10" text-anchor="end" '
            f'transform="rotate(-30 {x(i):.1f} {top + ph + 14})">{_e(label)}</text>'
        )
    for key, s in series:
        color, dash = _SERIES_STYLE[key]
        pts = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(s))
        parts.append(
            f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"{dash}/>'
        )
        parts += [
            f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{color}"/>'
            for i, v in enumerate(s)
        ]
    for j, (key, _s) in enumerate(series):  # legend
        color, dash = _SERIES_STYLE[key]
        ly = height - 34 + (j // 2) * 16  # a row per option set, a column per pass
        lx = left + (j % 2) * 220
        parts.append(
            f'<line x1="{lx}" x2="{lx + 24}" y1="{ly}" y2="{ly}" stroke="{color}" '
            f'stroke-width="2"{dash}/><text x="{lx + 30}" y="{ly + 4}" font-size="11">'
            f"{_e(_SERIES_LABEL[key])}</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _html_memory(r: DeepResult) -> str:
    mem = _memory(r)
    if not isinstance(mem.get("run_peak_bytes"), int):
        return ""
    rows = _memory_rows(r)
    short = ["weights", "one run, real weights", "this analysis"]
    bars = [(short[i], v, n) for i, (_l, v, n) in enumerate(rows)]
    out = ["<h3>Memory</h3>", '<div class="plot">', _svg_bars(bars), "</div>"]
    out.append("<table><tr><th></th><th>size</th><th></th></tr>")
    for label, value, note in rows:
        out.append(
            f"<tr><td>{_e(label)}</td><td><b>{_e(gb(value) if value else '?')}</b></td>"
            f'<td class="note">{_inline_md(note)}</td></tr>'
        )
    out.append("</table>")
    budget = r.target.memory_budget or mem.get("machine_bytes")
    if isinstance(budget, int):
        whose = "budget (memory-budget)" if r.target.memory_budget else "this machine's memory"
        fits = mem["run_peak_bytes"] <= budget
        out.append(
            f'<p class="note">{_e(whose)}: {_e(gb(budget))}: a real run '
            f"{'fits' if fits else '<b>does not fit</b> (OLX819)'}.</p>"
        )
    sweep = mem.get("ort_sweep")
    if isinstance(sweep, dict):
        verdict = sweep.get("verdict") or {}
        out.append("<h4>ONNX Runtime over the dynamic sizes</h4>")
        out.append(
            '<p class="note">Process memory after each run of the exported model (real random '
            "weights), over the sizes and then over the same sizes again (dashed), with the "
            "default <code>SessionOptions</code> and with <code>enable_mem_pattern=False, "
            "enable_cpu_mem_arena=False</code>; each in a fresh process.</p>"
        )
        out.append(f'<div class="plot">{_svg_sweep(sweep)}</div>')
        cells = []
        for name, label in (("default", "defaults"), ("lean", "no arena/pattern")):
            v = verdict.get(name)
            if isinstance(v, dict):
                cells.append(
                    f"<tr><td>{_e(label)}</td><td>{gb(v['high_water'])}</td>"
                    f"<td>+{gb(v['second_pass_growth'])}</td>"
                    f"<td>{'<b class=sev-error>leak</b>' if v.get('leak') else 'flat'}</td></tr>"
                )
        out.append(
            "<table><tr><th>options</th><th>high-water</th><th>second pass</th><th></th></tr>"
            + "".join(cells)
            + "</table>"
        )
    return "\n".join(out)
