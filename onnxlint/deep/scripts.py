"""Export scripts as deep-analysis targets: the user's own export code, no factory to write.

A script target names an export script and one export call in it (by line); the worker
(`worker/script.py`) runs the script under fake tensors up to that call and analyses what
the call exports. This module finds, without importing or running anything, which files
are scripts and which export calls they make (the static engine's export calls), and makes
the targets, with the `argv` a `[[tool.onnxlint.scripts]]` entry gives.
(`torch.onnx.ExportableModule` classes, targets by themselves, are found with the declared
ones: `targets.discover_targets`.)
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from onnxlint.deep.targets import Target, notebook_files, python_texts
from onnxlint.source.notebook import is_notebook

if TYPE_CHECKING:
    from onnxlint.project.index import ProjectIndex


def export_call_lines(
    path: Path, text: str | None = None, index: ProjectIndex | None = None
) -> list[int]:
    """The lines of the export calls the file makes (any exporter), in order. `index`: the
    project index to read it with (one for many files), else a new one. A notebook's lines
    are lines of its code cells as one module (`onnxlint.deep.notebooks`); `text` is then
    that module's text, or the notebook file's JSON."""
    from onnxlint.project.exports import call_line
    from onnxlint.project.index import ProjectIndex
    from onnxlint.source.blocks import ParseCache

    if text is None:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return []
    if is_notebook(str(path)) and text.lstrip().startswith("{"):
        from onnxlint.source.cells import notebook_module_text

        text = notebook_module_text(text)
        if text is None:
            return []
    if "export" not in text and "jit" not in text and "onnx" not in text:
        return []
    index = index or ProjectIndex(ParseCache())
    facts = index.facts(str(path.resolve()), text)
    lines: set[int | None] = set(library_export_lines(text))
    if facts is not None:
        lines |= {call_line(facts, e.node) for e in facts.semantic.export_calls}
    found = sorted(line for line in lines if line is not None)
    return sorted({n for line in found for n in invocation_lines(text, line, found)})


def invocation_lines(text: str, line: int, calls: Sequence[int] = ()) -> list[int]:
    """The lines whose run makes the export call at `line`, one per model it exports. A call
    in a function of the script that the run calls from several places (EfficientSAM's
    `export_onnx(model, ...)`, called for the model, its encoder and its decoder) exports a
    model for each: each caller's line is a target of its own (the worker captures the
    export that the statement at the target's line makes), followed up through functions
    called several times in turn; calls from functions the run does not reach are left
    out. `[line]` for a call made once, and for one of several export calls of one function
    (`calls`: the file's export call lines; a caller's line would name only the first)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [line]
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    sites: dict[str, list[tuple[int, str | None]]] = {name: [] for name in defs}
    for node in tree.body:
        owner = node.name if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
        if isinstance(node, ast.ClassDef):
            continue
        for n in ast.walk(node):
            if not (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)):
                continue
            if n.func.id in sites and n.func.id != owner:
                sites[n.func.id].append((n.lineno, owner))
    reached: set[str] = set()
    todo = [name for name, at in sites.items() for _l, owner in at if owner is None]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += [callee for callee, at in sites.items() for _l, owner in at if owner == name]

    def owner_of(n: int) -> str | None:
        return next(
            (name for name, d in defs.items() if d.lineno <= n <= (d.end_lineno or d.lineno)),
            None,
        )

    def expand(n: int, depth: int) -> list[int]:
        owner = owner_of(n)
        if owner is None or depth > 4:
            return [n]
        if depth == 0 and any(c != n and owner_of(c) == owner for c in calls):
            return [n]
        callers = [(c, o) for c, o in sites.get(owner, []) if o is None or o in reached]
        if len(callers) < 2 and not (callers and owner_of(callers[0][0]) is not None):
            return [n]
        out = [m for c, _o in callers for m in expand(c, depth + 1)]
        return sorted(set(out)) if len(set(out)) > 1 else [n]

    return expand(line, 0)


def library_export_lines(text: str) -> list[int]:
    """The lines of the script's calls that export to ONNX inside a library: a model's
    `.export(format="onnx")` (ultralytics and the like) or `.to_onnx(...)` (Lightning).
    The torch.onnx.export call they make is inside an installed package; the script's call
    is where the analysis finds it (the run captures the export its call makes)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[int] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        if node.func.attr == "to_onnx":
            out.append(node.lineno)
        elif node.func.attr == "export":
            for kw in node.keywords:
                value = kw.value
                if (
                    kw.arg == "format"
                    and isinstance(value, ast.Constant)
                    and isinstance(value.value, str)
                    and value.value.lower() == "onnx"
                ):
                    out.append(node.lineno)
    return out


def is_script(text: str) -> bool:
    """A file run as a program: an `if __name__ == "__main__":` block, or statements at
    module level that call something (not only definitions and imports)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and "__name__" in ast.unparse(node.test):
            return True
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            return True
    return False


def script_argv(path: Path, root: Path, scripts: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    """The `argv` of the [[tool.onnxlint.scripts]] entry for this script, else none."""
    want = path.resolve()
    for entry in scripts:
        p = Path(str(entry.get("path", "")))
        if (p if p.is_absolute() else root / p).resolve() == want:
            return tuple(str(a) for a in entry.get("argv") or ())
    return ()


def _rel(path: Path, root: Path) -> str:
    try:
        return str(path.resolve().relative_to(root.resolve()))
    except ValueError:
        return str(path)


def script_target(
    path: Path, line: int | None, root: Path, argv: Sequence[str] = (), origin: str = "script"
) -> Target:
    """The target that runs `path` up to its export call at `line` (None: the first reached).
    A notebook's `line` is a line of its cells as one module; its name says the cell
    (`export.ipynb:cell 5:2`)."""
    rel = _rel(path, root)
    name = f"{rel}:{line}" if line else rel
    if line and is_notebook(str(path)):
        from onnxlint.source.cells import cell_line

        at = cell_line(str(path), line)
        if at is not None:
            name = f"{rel}:cell {at[0]}:{at[1]}"
    return Target(
        name=name,
        factory=name,
        root=root,
        decl_path=path.resolve(),
        decl_line=line or 1,
        origin=origin,
        script=path.resolve(),
        script_line=line,
        argv=tuple(argv),
    )


def script_targets(
    path: Path,
    root: Path,
    line: int | None = None,
    scripts: Iterable[Mapping[str, Any]] = (),
) -> list[Target]:
    """One target per export call of the script (or the one on `line`); a script whose
    export calls the static engine does not see (they are in an imported helper) gets one
    target for the first export call it reaches."""
    argv = script_argv(path, root, scripts)
    if line is not None:
        return [script_target(path, line, root, argv)]
    lines = export_call_lines(path)
    if not lines:
        return [script_target(path, None, root, argv)]
    return [script_target(path, n, root, argv) for n in lines]


def project_scripts(
    paths: Iterable[Path], scripts: Iterable[Mapping[str, Any]], root: Path
) -> list[Target]:
    """Script targets for every export call of every script under `paths` (what
    `check --deep` and a bare `analyze` run when the project declares no targets), and of
    every Jupyter notebook (its code cells run in order, as one script)."""
    from onnxlint.project.index import ProjectIndex
    from onnxlint.source.blocks import ParseCache
    from onnxlint.source.cells import notebook_module_text

    entries = list(scripts)
    index = ProjectIndex(ParseCache())
    out: list[Target] = []
    notebooks = (
        (path, module)
        for path, text in notebook_files(paths)
        if (module := notebook_module_text(text)) is not None
    )
    for path, text in [*python_texts(paths), *notebooks]:
        if not is_notebook(str(path)) and not is_script(text):
            continue  # (ast: cheaper than the export calls' libcst parse)
        lines = export_call_lines(path, text, index)
        if not lines:
            continue
        argv = script_argv(path, root, entries)
        out += [script_target(path, n, root, argv) for n in lines]
    return out
