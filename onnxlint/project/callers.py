"""Helpers that other files' `forward` code calls: forward code too, exported or not.

A file judged alone knows only its own modules: `count(x)` in `utils.py` is forward code
when `head.py` does `from .utils import count` and calls it from `Head.forward`, even
when no export of the project reaches `Head`. `ImportedNames` lists, from the text the
project scan reads anyway, which files import a name (`from x import a, b`); for the
few files that import one of a file's helpers, `forward_callers` reads their text and ast
summary: the name imported from this file and called from a module class's `forward` (or
a method it calls on `self`).
"""

from __future__ import annotations

import ast
import hashlib
import os
import re

from onnxlint.project.index import ProjectIndex
from onnxlint.project.resolve import candidates
from onnxlint.project.summary import ModuleSummary, summarise
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.files import content_key

# `from pkg.utils import a, b as c` and the parenthesised multi-line form.
_FROM_IMPORT = re.compile(
    r"^[ \t]*from[ \t]+[.\w]+[ \t]+import[ \t]+(\([^)]*\)|[^\n#]*)", re.MULTILINE
)
_NAME = re.compile(r"\b([A-Za-z_]\w*)\b(?:\s+as\s+\w+)?")


def imported_names(text: str) -> frozenset[str]:
    """The names a module's text imports with `from ... import` (their original names)."""
    out: set[str] = set()
    for m in _FROM_IMPORT.finditer(text):
        for n in _NAME.finditer(m.group(1).strip("()")):
            out.add(n.group(1))
    out.discard("as")
    return frozenset(out)


class ImportedNames:
    """name -> the project files that import it (`from ... import name`)."""

    def __init__(self) -> None:
        self._per_file: dict[str, frozenset[str]] = {}
        self._by_name: dict[str, set[str]] | None = None

    def record(self, path: str, text: str | None) -> bool:
        """Record a file's text (None: gone); True when its imported names changed."""
        new = imported_names(text) if text is not None and "import" in text else frozenset()
        old = self._per_file.get(path, frozenset())
        if new == old:
            return False
        if new:
            self._per_file[path] = new
        else:
            self._per_file.pop(path, None)
        self._by_name = None
        return True

    def importers(self, name: str) -> set[str]:
        if self._by_name is None:
            by: dict[str, set[str]] = {}
            for path, names in self._per_file.items():
                for n in names:
                    by.setdefault(n, set()).add(path)
            self._by_name = by
        return self._by_name.get(name, set())

    def digest(self) -> str:
        """Changes when any file's imported names change (the CLI results cache key)."""
        h = hashlib.sha256()
        for path, names in sorted(self._per_file.items()):
            h.update(f"{path}\0{','.join(sorted(names))}\n".encode())
        return h.hexdigest()[:16]


def forward_callers(
    index: ProjectIndex, names: ImportedNames, path: str, model: SemanticModel
) -> set[str]:
    """The top-level functions of `path` (not reachable from its own modules) that a
    forward-reachable function of another project file calls through an import."""
    out: set[str] = set()
    for fname, func in model.functions.items():
        if model.is_reachable(func):
            continue
        for importer in sorted(names.importers(fname) - {path}):
            if _calls_from_forward(index, importer, path, fname):
                out.add(fname)
                break
    return out


def _calls_from_forward(index: ProjectIndex, importer: str, path: str, fname: str) -> bool:
    """Whether `importer` imports `fname` from `path` and calls it in a module class (one
    with `forward`). Read with `ast`, never a libcst parse (in a corpus such as
    transformers a helper is imported by dozens of files)."""
    text = index.read(importer)
    if text is None:
        return False
    digest = content_key(text)
    index.deps.setdefault(importer, digest)
    if f"{fname}(" not in text or "def forward" not in text:
        return False
    summary = summarise(text, digest)
    if summary is None:
        return False
    for bound, qualified in summary.imports.items():
        module, _, name = qualified.rpartition(".")
        if name == fname and f"{bound}(" in text and module:
            here = os.path.abspath(path)
            if any(os.path.abspath(c) == here for c in candidates(importer, module, index.root)):
                return bound in _called_in_module_classes(text)
    return False


def _called_in_module_classes(text: str) -> set[str]:
    """Names called by what runs when a module's `forward` runs: `forward` and the methods
    it reaches through `self.m()`, in classes that define `forward` and derive from
    something (a class without bases is no `nn.Module`: MONAI's `TrtCompiler.forward`
    builds a TensorRT engine). Read with ast, not libcst."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    out: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef) or not any(
            not (isinstance(b, ast.Name) and b.id == "object") for b in node.bases
        ):
            continue
        methods = {
            m.name: m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
        }
        todo = ["forward"] if "forward" in methods else []
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            for inner in ast.walk(methods[name]):
                if not isinstance(inner, ast.Call):
                    continue
                f = inner.func
                if isinstance(f, ast.Name):
                    out.add(f.id)
                elif (
                    isinstance(f, ast.Attribute)
                    and isinstance(f.value, ast.Name)
                    and f.value.id == "self"
                    and f.attr in methods
                ):
                    todo.append(f.attr)
    return out


FuncKey = tuple["str | None", str]
# What inheritance does not make forward code: training-time augmentations, metrics and
# losses, whose base classes' `forward` also dispatches to `self.` methods (kornia's
# `apply_transform`, torchmetrics' `compute`), in classes or folders named so.
_NOT_MODEL_CLASS = re.compile(r"(Random|Augment|Aug[A-Z]|Metric|Loss|Criterion)")
_NOT_MODEL_PATH = re.compile(r"/(augment\w*|transforms?|metrics?|losses?)/", re.IGNORECASE)
# Nor training-only methods a base's `forward` dispatches to (mmdet 2.x's `BaseDetector.forward`
# calls `self.forward_train` when `return_loss` is set; only the test path is exported).
_TRAINING_ONLY = re.compile(
    r"(forward_train|train_step|training_step|losses?|\w+_loss(es)?|loss_\w+)"
)
# Summaries of subclasses' modules by content hash (re-read on every check of the base's
# file: a keystroke there must not parse them again).
_SUMMARIES: dict[str, ModuleSummary | None] = {}


def inherited_callers(
    index: ProjectIndex, names: ImportedNames | None, path: str, model: SemanticModel
) -> set[FuncKey]:
    """Methods of the file's module classes (not reachable from its own `forward`s) that
    forward code of another project module runs, exported or not:

    - a method the `forward` inherited from a project base class of another module calls
      on `self` (`Template.forward` calls `self.step(x)`, the class here defines `step`);
    - with `names` (the project scan is ready), a method a subclass in another module
      calls on `self` from its `forward` (`Head(Cached).forward` calls
      `self.grid_for(x)`, defined here by `Cached`)."""
    out: set[FuncKey] = set()
    if _NOT_MODEL_PATH.search(path.replace(os.sep, "/")):
        return out
    for cls in model.classes.values():
        if not cls.is_module or _NOT_MODEL_CLASS.search(cls.name):
            continue
        if any(_NOT_MODEL_CLASS.search(b.rsplit(".", 1)[-1]) for b in cls.bases):
            continue
        loose = {
            n: m
            for n, m in cls.methods.items()
            if not n.startswith("__")
            and not _TRAINING_ONLY.fullmatch(n)
            and not model.is_reachable(m)
        }
        if not loose:
            continue
        if model.find_method(cls.name, "forward") is None:
            for base in cls.bases:
                if base.split(".", 1)[0] in model.classes:
                    continue
                q = model.resolve(base)
                calls = index.inherited_forward_calls(path, q) if q is not None else None
                if calls is None and q is None:
                    for star in model.star_imports:
                        sep = "" if star.endswith(".") else "."
                        calls = index.inherited_forward_calls(path, f"{star}{sep}{base}")
                        if calls is not None:
                            break
                if calls:
                    out |= {loose[n].key for n in calls if n in loose}
                    break
        if names is not None:
            for n in _called_by_subclasses(index, names, path, cls.name):
                if n in loose:
                    out.add(loose[n].key)
    return out


def _called_by_subclasses(
    index: ProjectIndex, names: ImportedNames, path: str, cls_name: str
) -> set[str]:
    """What subclasses of `cls_name` (defined in `path`) in other project modules call on
    `self` from their `forward`. Read with `ast` summaries, never a libcst parse."""
    out: set[str] = set()
    here = os.path.abspath(path)
    for importer in sorted(names.importers(cls_name) - {path}):
        text = index.read(importer)
        if text is None or "def forward" not in text or f"({cls_name}" not in text:
            continue
        digest = content_key(text)
        index.deps.setdefault(importer, digest)
        if digest not in _SUMMARIES:
            if len(_SUMMARIES) > 1024:
                _SUMMARIES.clear()
            _SUMMARIES[digest] = summarise(text, digest)
        summary = _SUMMARIES[digest]
        if summary is None:
            continue
        bound = {
            b
            for b, q in summary.imports.items()
            if q.rpartition(".")[2] == cls_name
            and q.rpartition(".")[0]
            and any(
                os.path.abspath(c) == here
                for c in candidates(importer, q.rpartition(".")[0], index.root)
            )
        }
        if not bound:
            continue
        for sub, bases in summary.classes.items():
            if any(b in bound for b in bases) and sub in summary.forward_calls:
                out |= summary.forward_calls[sub]
    return out
