"""Find the user's own `torch.onnx.export` call for a target's model class (static, no torch).

Verification (OLX810/OLX811) re-runs the export the user would run; its findings have no
line in the model's code, so they belong on the user's export call. This scans the project's
Python files with the static engine's semantic model (`onnxlint.semantic` over
`onnxlint.source.blocks`), resolves each export call's model
(`onnxlint.analysis.exported_model`) and keeps the first one whose model is an
instance of the target's class: built inline (`Net()`), or assigned from `Net(...)`
(possibly `.eval()`-chained) in the call's scope, with the class imported or defined in that
file. When there is none, the caller keeps the target's declaration.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

import libcst as cst

from onnxlint.core.config import Config
from onnxlint.semantic.calls import ExportKind
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.blocks import ParseCache, split_blocks
from onnxlint.source.files import SKIP_DIRS

MAX_FILES = 2000
"""Project files scanned at most (a monorepo must not stall the report)."""

_ONNX_KINDS = {ExportKind.ONNX_DYNAMO, ExportKind.ONNX_TORCHSCRIPT}


def export_call_for_class(
    root: Path, class_qualname: str, class_file: str | None = None
) -> tuple[str, int] | None:
    """(path, 1-based line) of the first ONNX export call of an instance of the class."""
    found = export_calls_for_class(root, class_qualname, class_file, _ONNX_KINDS, first=True)
    return (found[0][0], found[0][1]) if found else None


def export_calls_for_class(
    root: Path,
    class_qualname: str,
    class_file: str | None = None,
    kinds: frozenset[ExportKind] | set[ExportKind] = frozenset(ExportKind),
    *,
    first: bool = False,
) -> list[tuple[str, int, ExportKind]]:
    """(path, 1-based line, exporter) of the export calls (of the given kinds: ONNX, trace,
    script...) whose model is an instance of the class, in file order."""
    simple = class_qualname.rsplit(".", 1)[-1]
    if not simple:
        return []
    out: list[tuple[str, int, ExportKind]] = []
    for path in _project_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if simple not in text or ("export" not in text and "jit" not in text):
            continue
        module = ".".join(path.relative_to(root).with_suffix("").parts)
        local = (
            os.path.realpath(class_file) == os.path.realpath(path)
            if class_file
            else class_qualname == f"{module}.{simple}"
        )
        for line, kind in _in_file(str(path), text, class_qualname, local, kinds):
            out.append((str(path), line, kind))
            if first:
                return out
    return out


def _project_files(root: Path) -> list[Path]:
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        dirnames[:] = sorted(
            d
            for d in dirnames
            if d not in SKIP_DIRS
            and not d.startswith(".")
            and not d.endswith(".egg-info")
            and not (here / d / "pyvenv.cfg").is_file()
        )
        for name in sorted(filenames):
            if name.endswith(".py"):
                out.append(here / name)
                if len(out) >= MAX_FILES:
                    return out
    return out


def _in_file(
    path: str, text: str, class_qualname: str, same_file: bool, kinds: Collection[ExportKind]
) -> list[tuple[int, ExportKind]]:
    from onnxlint.analysis.exported_model import exported_model
    from onnxlint.project.facts import file_analysis
    from onnxlint.source.positions import node_span

    parsed = [b for b in split_blocks(text, ParseCache()) if b.module is not None]
    ctx = file_analysis(path, text, Config(), parsed)
    model = ctx.semantic
    calls = [e for e in model.export_calls if e.kind in kinds]
    out: list[tuple[int, ExportKind]] = []
    simple = class_qualname.rsplit(".", 1)[-1]
    for call in calls:
        try:
            ref = exported_model(ctx, call)
        except Exception:  # a file the flow analysis cannot follow: try the next call
            continue
        if ref is None:
            continue
        hit = ref.class_info is not None and same_file and ref.class_info.name == simple
        if not hit:
            exprs = [ref.expr, *(_value(a) for a in ref.assignments)]
            hit = any(
                _builds(model, e, class_qualname, simple if same_file else None)
                for e in exprs
                if e is not None
            )
        if not hit:
            continue
        for b in parsed:
            span = node_span(b, call.node)
            if span is not None:
                out.append((span.line, call.kind))
                break
    return out


def _value(assign: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(assign, (cst.Assign, cst.AnnAssign)):
        return assign.value
    return None


def _builds(
    model: SemanticModel, expr: cst.BaseExpression, qualname: str, local: str | None
) -> bool:
    """`Net(...)`, `Net(...).eval()`, `pkg.Net(...).to(...)`: an instance of the class."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        if expr.func.attr.value not in ("eval", "train", "to", "cpu", "float", "half", "double"):
            break
        expr = expr.func.value
    if not isinstance(expr, cst.Call):
        return False
    q = model.qualname(expr.func)
    if q is not None and (q == qualname or (q.startswith(".") and qualname.endswith(q))):
        return True
    return local is not None and isinstance(expr.func, cst.Name) and expr.func.value == local
