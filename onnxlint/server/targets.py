"""Which target an "Analyze export" runs: the lenses over export calls, model classes and
target factories (the code lens feature, code_lens.py, shows them; the deep service runs them).

A lens over an export call analyses that call: its model, its arguments, its exporter, opset
and dynamic dims. Its title names the model (the class the project index's export sites,
`onnxlint.project.exports.export_sites`, say the call exports), the call's exporter, opset and
dynamic dims, and how it is analysed:

- `runs this script`: the call is reached when the file runs as a script (at module level,
  or in a function the module-level code calls); the worker runs the script up to it
  (`onnxlint.deep.scripts`, no set-up);
- `runs name()`: the call is in a module-level function that takes no required argument
  (`export_to_memory()`); the worker imports the module and calls it, up to the call;
- `target NAME`: else, a declared deep target (`onnxlint.deep.targets`) whose factory builds
  the call's model (`returned_classes`), run with the call's opset and dynamic shapes where
  the call gives them literally.

An export call none of these can analyse gets a lens that offers to create a target
(`onnxlint.createTarget`). Lenses over model classes and target factories run the target.
"""

from __future__ import annotations

import ast
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.server.protocol import ANALYZE_EXPORT, CREATE_TARGET
from onnxlint.server.session import Session

log = logging.getLogger("onnxlint.server")

ClassKey = tuple[str, str]  # (real path of the defining file, class name)


@dataclass(frozen=True)
class Lens:
    """One lens: its 1-based line, title, command and argument object."""

    line: int
    title: str
    command: str
    argument: dict[str, Any] = field(default_factory=dict)


def shown_at(lenses: list[Lens], version: int | None) -> list[Lens]:
    """The lenses with where they were shown (`shown`: the document's version, the title and
    its rank among the lenses of that title), so a click on a lens the editor has not yet
    refreshed after an edit runs (or builds a target for) the export call it showed, not
    the one now at its old line (`current_lens`)."""
    seen: dict[str, int] = {}
    out = []
    for lens in lenses:
        if version is None:
            out.append(lens)
            continue
        nth = seen[lens.title] = seen.get(lens.title, -1) + 1
        shown = {"version": version, "title": lens.title, "nth": nth}
        out.append(Lens(lens.line, lens.title, lens.command, {**lens.argument, "shown": shown}))
    return out


def current_lens(spec: dict[str, Any], version: int | None, lenses: list[Lens]) -> Any:
    """The argument of the lens `spec` was shown as, in the document as it is now: `spec`
    itself when nothing changed since, the lens of the same title and rank when the document
    changed, None when that lens is gone."""
    shown = spec.get("shown")
    if not isinstance(shown, dict) or shown.get("version") == version:
        return spec
    same = [x for x in lenses if x.title == shown.get("title")]
    nth = shown.get("nth")
    if not isinstance(nth, int) or not 0 <= nth < len(same):
        return None
    return {**same[nth].argument, "shown": {**shown, "version": version}}


class LensGone(Exception):
    """The lens a click's stale argument was shown as is not in the document any more."""

    def __init__(self) -> None:
        super().__init__(
            "the file changed since this code lens was shown, and its export call is gone; "
            "use the lens again once it is redrawn"
        )


def lens_now(
    ls: Session, uri: str, spec: dict[str, Any], targets_of: Callable[[str], list[Any]] | None
) -> dict[str, Any]:
    """On the engine thread: a lens command's argument for the document as it is now
    (`current_lens`; the lenses are computed again only when it changed since the lens was
    shown), or LensGone."""
    from onnxlint.server import documents

    shown = spec.get("shown")
    version = documents.lens_version(ls, uri)
    if not isinstance(shown, dict) or shown.get("version") == version:
        return spec
    now = current_lens(spec, version, lenses_of(ls, uri, targets_of))
    if now is None:
        raise LensGone
    return dict(now)


def lenses_of(ls: Session, uri: str, targets_of: Callable[[str], list[Any]] | None) -> list[Lens]:
    """On the engine thread: the lenses of the file (or of the cell's notebook) as its text
    is now (the open document's, else the file's on disk)."""
    from onnxlint.server import documents

    notebook = documents.notebook_of(ls, uri)
    if notebook is not None:  # a cell: its notebook's lenses there
        return cell_lenses(ls, uri, notebook, targets_of)
    doc = ls.workspace.text_documents.get(uri)
    text = doc.source if doc is not None else Path(ls.path_of(uri)).read_text()
    return lenses_for(ls, uri, text, targets_of)


def deep_targets_of(ls: Any) -> Callable[[str], list[Any]] | None:
    """The deep targets of the project holding a file (`lenses_for`'s `targets_of`), None
    without the deep service."""
    deep = ls.deep
    if deep is None:
        return None
    return lambda uri: list(deep.targets(uri)[0])


def _real(path: str | Path) -> str:
    return os.path.realpath(str(path))


def target_classes(index: Any, target: Any) -> set[ClassKey]:
    """The project classes a deep target's factory returns, as the static engine reads them
    (through local builders and imports, like the export sites)."""
    from onnxlint.deep.targets import factory_location
    from onnxlint.project.exports import returned_classes

    loc = factory_location(target)
    if loc is None:
        return set()
    facts = index.facts(str(loc[0]))
    func = facts.semantic.functions.get(target.factory.partition(":")[2]) if facts else None
    if facts is None or func is None:
        return set()
    return {(_real(f.path), c.name) for f, c in returned_classes(index, facts, func, depth=2)}


@dataclass(frozen=True)
class ScriptReach:
    """What runs a line of a file: running it as a script, or calling a function of it."""

    reached: frozenset[int]  # lines that run when the file runs as a script
    functions: tuple[tuple[int, int, str], ...]  # (first, last line, name) of no-argument defs

    def function_at(self, line: int) -> str | None:
        return next((n for a, b, n in self.functions if a <= line <= b), None)


def script_reach(text: str, script: bool) -> ScriptReach:
    """The lines a run of the file reaches (module-level code and the module-level functions
    it calls, transitively, by name) and its module-level functions callable with no
    argument. Static and approximate: a function called through a variable is not seen."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ScriptReach(frozenset(), ())
    defs: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    top: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defs[node.name] = node
        elif not isinstance(node, ast.ClassDef):
            top.append(node)

    def called(nodes: list[ast.stmt]) -> set[str]:
        return {
            n.func.id
            for stmt in nodes
            for n in ast.walk(stmt)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in defs
        }

    reached: set[int] = set()
    if script:
        todo, seen = called(top), set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            todo |= called(defs[name].body)
        for stmt in top + [defs[n] for n in seen]:
            reached.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))

    def no_arguments(f: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        a = f.args
        required = len(a.posonlyargs) + len(a.args) - len(a.defaults)
        return required == 0 and all(d is not None for d in a.kw_defaults)

    functions = tuple(
        (f.lineno, f.end_lineno or f.lineno, f.name)
        for f in defs.values()
        if isinstance(f, ast.FunctionDef) and no_arguments(f)
    )
    return ScriptReach(frozenset(reached), functions)


def call_settings(facts: Any, site: Any) -> dict[str, Any]:
    """What the export call at `site` states literally: its opset, and its `dynamic_shapes`
    when it is a dict of `{dim index: name}` dicts (what a target's dynamic-shapes takes)."""
    from onnxlint.project.exports import call_line

    out: dict[str, Any] = {}
    for call in facts.semantic.export_calls:
        if call_line(facts, call.node) != site.line:
            continue
        for name in ("opset_version", "opset"):
            arg = call.arg(name)
            if arg is not None:
                value = _literal(arg.value)
                if isinstance(value, int) and not isinstance(value, bool):
                    out["opset"] = value
        arg = call.arg("dynamic_shapes")
        value = _literal(arg.value) if arg is not None else None
        if isinstance(value, dict) and all(
            isinstance(k, str) and isinstance(v, dict) and all(isinstance(i, int) for i in v)
            for k, v in value.items()
        ):
            out["dynamic_shapes"] = value
        break
    return out


def _literal(node: Any) -> Any:
    import libcst as cst

    try:
        code = cst.Module([]).code_for_node(node)
        return ast.literal_eval(code)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def call_words(site: Any, settings: dict[str, Any]) -> str:
    """`TorchScript exporter, opset 13, dynamic batch, width`: the call, as the lens names it."""
    words = [site.exporter]
    if "opset" in settings:
        words.append(f"opset {settings['opset']}")
    if site.dims:
        words.append(f"dynamic {site.dims}")
    return ", ".join(words)


def _class_line(facts: Any, cls: Any) -> int | None:
    from onnxlint.source.positions import node_span

    for b in facts.blocks:
        if b.module is not None and any(stmt is cls.node for stmt in b.module.body):
            span = node_span(b, cls.node.name)
            return span.line if span is not None else None
    return None


def cell_lenses(
    ls: Session, cell_uri: str, nb_uri: str, targets_of: Callable[[str], list[Any]] | None
) -> list[Lens]:
    """On the engine thread: a notebook cell's lenses, at the cell's lines. They are the
    notebook's (its code cells as one module, which the deep analysis runs as one script:
    `onnxlint.deep.notebooks`) on the cell's lines; each names its export call by its line in
    that module. No "create a target" lens: a notebook always runs as it is."""
    from onnxlint.server import documents

    module = documents.cell_module_of(ls, nb_uri)
    index = documents.cell_index(ls, cell_uri)
    place = module.place_of_cell(index) if module is not None and index is not None else None
    if module is None or place is None:
        return []
    out = []
    for lens in lenses_for(ls, nb_uri, module.text, targets_of, notebook=True):
        line = lens.line - place.start_line + 1
        if lens.command == ANALYZE_EXPORT and 1 <= line <= place.line_count:
            out.append(Lens(line, lens.title, lens.command, lens.argument))
    return out


def lenses_for(
    ls: Session,
    uri: str,
    text: str,
    targets_of: Callable[[str], list[Any]] | None,
    *,
    notebook: bool = False,
) -> list[Lens]:
    """On the engine thread: the file's lenses, sorted by line (`targets_of`: the deep
    targets of the project holding a file, None without the deep service). `notebook`: `uri`
    is a notebook, `text` its code cells as one module, run as one script."""
    from onnxlint.deep.scripts import is_script
    from onnxlint.deep.targets import factory_location
    from onnxlint.project.exports import export_sites

    path = ls.path_of(uri)
    index = ls.engine.project
    cfg, _, _ = ls.config_for(uri)
    saved = index.deps  # not a check: what is read here is no check's dependency
    index.deps = {}
    try:
        index.use_config(cfg)
        facts = index.facts(os.path.abspath(path), text)
        if facts is None:
            return []
        targets: list[Any] = []
        if targets_of is not None and ls.is_file(uri):
            targets = list(targets_of(uri))
        builds = {t.name: target_classes(index, t) for t in targets}
        out: list[Lens] = []
        here = _real(path)

        def analyze(line: int, name: str) -> Lens:
            return Lens(
                line, f"Analyze export ({name})", ANALYZE_EXPORT, {"line": line, "target": name}
            )

        for t in targets:
            loc = factory_location(t)
            if t.origin == "exportable" and t.decl_path is not None:
                loc = (t.decl_path, t.decl_line)  # the class is its own target
            if loc is not None and _real(loc[0]) == here:
                out.append(analyze(loc[1], t.name))
        for cls in facts.semantic.module_classes():
            line = _class_line(facts, cls)
            key = (here, cls.name)
            for t in targets:
                if line is not None and key in builds[t.name]:
                    out.append(analyze(line, t.name))
        script = (notebook or is_script(text)) and ls.is_file(uri)
        runs = "runs this notebook" if notebook else "runs this script"
        reach = script_reach(text, script) if ls.is_file(uri) else ScriptReach(frozenset(), ())
        for site, classes in export_sites(index, facts):
            what = classes[0][1].name if classes else "the model"
            settings = call_settings(facts, site)
            call = call_words(site, settings)
            keys = {(_real(f.path), c.name) for f, c in classes}
            chosen = [t.name for t in targets if keys & builds[t.name]]
            function = reach.function_at(site.line)
            arg: dict[str, Any] = {"line": site.line}
            if site.line in reach.reached:  # no set-up: the lens runs this script up to it
                how, arg = runs, {**arg, "script": here}
            elif function is not None:  # it calls the function that exports
                how = f"runs this notebook, then {function}()" if notebook else f"runs {function}()"
                arg = {**arg, "script": here, "function": function}
            elif chosen:  # a declared target builds its model: with the call's settings
                how, arg = f"target {chosen[0]}", {**arg, "target": chosen[0], "call": settings}
            else:
                how = ""
            if how:
                out.append(
                    Lens(site.line, f"Analyze export ({what}, {call}: {how})", ANALYZE_EXPORT, arg)
                )
            if chosen or not classes:
                continue
            f, c = classes[0]
            title = (
                f"Create a target for {c.name}"
                if how
                else f"No analysis target builds {c.name}: create one"
            )
            out.append(
                Lens(
                    site.line,
                    title,
                    CREATE_TARGET,
                    {"line": site.line, "class": c.name, "path": f.path},
                )
            )
        unique = {(lens.line, lens.title): lens for lens in out}
        return sorted(unique.values(), key=lambda lens: (lens.line, lens.title))
    finally:
        index.deps = saved
