"""A module's classes and imports, from `ast` (no libcst trees kept): what base-class
resolution across files needs, at a tenth of the cost of the full facts.

`is_module` asks, for a class a file imports, whether its bases lead to `torch.nn.Module`:
answering that from full facts would libcst-parse (and keep) every imported module, such
as transformers' 5,000-line `modeling_utils.py` for each model file. A summary is a plain
value per file content: class name -> bases as written, bound name -> qualified import.

`SummaryStore` shares summaries between the processes of one run (the CLI's pool
workers): each worker would otherwise parse the modules that many files import (a model
library's base modules) once more.
"""

from __future__ import annotations

import ast
import os
import pickle
import re
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ModuleSummary:
    digest: str
    classes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> bases
    imports: dict[str, str] = field(default_factory=dict)  # bound name -> qualified name
    defines: frozenset[str] = frozenset()  # other top-level names (functions, constants)
    # Top-level functions known to return a tensor ("tensor") or something else ("other"):
    # from the return annotation, else when every `return` is a `torch.*` function call.
    returns: dict[str, str] = field(default_factory=dict)
    stars: tuple[str, ...] = ()  # modules imported with `from module import *`
    # Classes that define `forward` -> the methods it calls on `self`, also through the
    # class's own methods it calls (`self.step(x)`, whoever defines `step`).
    forward_calls: dict[str, frozenset[str]] = field(default_factory=dict)


def summarise(text: str, digest: str) -> ModuleSummary | None:
    """The summary of a module's text; None when it does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    classes: dict[str, tuple[str, ...]] = {}
    imports: dict[str, str] = {}
    defines: set[str] = set()
    functions: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    stars: list[str] = []
    forward_calls: dict[str, frozenset[str]] = {}
    for node in _top_level(tree.body):
        if isinstance(node, ast.ClassDef):
            classes[node.name] = tuple(b for b in (_dotted(x) for x in node.bases) if b)
            calls = _forward_self_calls(node)
            if calls is not None:
                forward_calls[node.name] = calls
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            defines.add(node.name)
            functions.append(node)
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    imports[a.asname] = a.name
                else:
                    head = a.name.split(".")[0]
                    imports[head] = head
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            for a in node.names:
                if a.name == "*":
                    stars.append(module)
                    continue
                sep = "" if module.endswith(".") else "."
                imports[a.asname or a.name] = f"{module}{sep}{a.name}" if module else a.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defines.update(t.id for t in targets if isinstance(t, ast.Name))
    returns = {f.name: r for f in functions if (r := _returns(f, imports)) is not None}
    return ModuleSummary(
        digest, classes, imports, frozenset(defines), returns, tuple(stars), forward_calls
    )


def _forward_self_calls(cls: ast.ClassDef) -> frozenset[str] | None:
    """The names `forward` calls on `self` (through the class's methods it calls), None
    when the class has no `forward`."""
    methods = {
        m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
    }
    if "forward" not in methods:
        return None
    out: set[str] = set()
    todo, seen = ["forward"], set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        for inner in ast.walk(methods[name]):
            f = inner.func if isinstance(inner, ast.Call) else None
            if (
                isinstance(f, ast.Attribute)
                and isinstance(f.value, ast.Name)
                and f.value.id == "self"
            ):
                out.add(f.attr)
                if f.attr in methods:
                    todo.append(f.attr)
    return frozenset(out)


_TENSOR_WORDS = re.compile(r"\b(Tensor|FloatTensor|LongTensor|BoolTensor)\b")


def _returns(func: ast.FunctionDef | ast.AsyncFunctionDef, imports: dict[str, str]) -> str | None:
    """ "tensor", "other" or None (unknown) for what a function returns."""
    if func.returns is not None:
        ann = ast.unparse(func.returns)
        if _TENSOR_WORDS.search(ann):
            if re.search(r"\b(int|float|list|List|tuple|Tuple|dict|Dict|Sequence)\b", ann):
                return None
            return "tensor"
        return "other"
    values = [n.value for n in ast.walk(func) if isinstance(n, ast.Return) and n.value is not None]
    if not values:
        return None
    for v in values:
        if not isinstance(v, ast.Call):
            return None
        name = _dotted(v.func)
        head, _, rest = (name or "").partition(".")
        q = imports.get(head, head) + (f".{rest}" if rest else "")
        tail = q.rsplit(".", 1)[-1]
        if not (q.startswith("torch.") and tail[:1].islower() and not tail.startswith("is_")):
            return None
    return "tensor"


def _top_level(body: list[ast.stmt]) -> list[ast.stmt]:
    """Module-level statements, also inside `if`/`try` (`if TYPE_CHECKING:`, fallbacks)."""
    out: list[ast.stmt] = []
    for node in body:
        out.append(node)
        if isinstance(node, ast.If):
            out += _top_level(node.body) + _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            out += _top_level(node.body)
            for h in node.handlers:
                out += _top_level(h.body)
    return out


def _dotted(expr: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


class SummaryStore:
    """Summaries by content hash in a folder that the processes of one run share (the
    CLI's pool workers; the folder lives as long as the run). A summary is written once,
    atomically, by the first process that needs it; a text that does not parse is kept
    as such. Two processes may summarise one text at the same time: both get the same."""

    _UNPARSABLE = b"-"

    def __init__(self, folder: str) -> None:
        self.folder = folder

    def get(self, digest: str) -> tuple[bool, ModuleSummary | None]:
        """(whether a process has summarised the text with this hash, its summary: None
        when it does not parse)."""
        try:
            with open(os.path.join(self.folder, digest), "rb") as fh:
                data = fh.read()
        except OSError:
            return False, None
        if data == self._UNPARSABLE:
            return True, None
        found = pickle.loads(data)
        return (True, found) if isinstance(found, ModuleSummary) else (False, None)

    def put(self, digest: str, summary: ModuleSummary | None) -> None:
        data = self._UNPARSABLE if summary is None else pickle.dumps(summary)
        path = os.path.join(self.folder, digest)
        tmp = f"{path}.{os.getpid()}"
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            pass  # a read-only or vanished folder: the next process summarises it again
