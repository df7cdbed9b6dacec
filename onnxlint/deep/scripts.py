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
    return sorted(line for line in lines if line is not None)


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
