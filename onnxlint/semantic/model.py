"""What the rules know about a file beyond the syntax: imports, modules, reachability, kinds.

Built once per check from small per-block indexes (cached with each parsed block), so an
edit inside one method re-indexes one block. The model answers the questions every rule
family asks:

- `qualname(expr)`: the name an expression resolves to through the file's imports
  (`tox.export` -> `torch.onnx.export`), never by spelling alone;
- which classes are `nn.Module` subclasses (also through local subclasses of subclasses);
- which functions run when a module's `forward` runs (methods reached through `self.m()`,
  module-level functions called from them), not through calls in the parts of a function
  an export never runs (`FunctionInfo.live`, onnxlint.semantic.branches);
- which export calls the file makes, and through which exporter (`export_calls`);
- a cheap, flow-insensitive guess of what kind of value an expression holds inside a
  function (`Kinds`, in onnxlint.semantic.kinds): a tensor, a shape, a number from a tensor.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import libcst as cst

from onnxlint.semantic.calls import ExportCall, classify_export, is_none, keyword_arg
from onnxlint.semantic.frameworks import TORCH_MODULE_BASES, base_verdict, imports_other_framework
from onnxlint.semantic.index import BlockIndex, CallSite, ClassInfo, FunctionInfo
from onnxlint.source.walker import dotted

_BUILTINS = frozenset(dir(builtins))


@dataclass
class SemanticModel:
    """The semantic model of one file (see the module docstring)."""

    imports: dict[str, str]
    classes: dict[str, ClassInfo]
    functions: dict[str, FunctionInfo]
    call_sites: list[CallSite]
    assigned_names: set[str]
    export_calls: list[ExportCall] = field(default_factory=list)
    reachable: set[tuple[str | None, str]] = field(default_factory=set)
    module_body: list[cst.BaseStatement] = field(default_factory=list)
    default_exporter: str = "auto"  # from config: auto|dynamo|torchscript
    # Per-check memo for file-level analyses (e.g. `onnxlint.analysis.modes`); never cached.
    memo: dict[object, object] = field(default_factory=dict)
    # Whether an imported base class (qualified name) is a torch module, as the project
    # model resolves it across files (None: unknown). Set by the engine.
    resolve_base: Callable[[str], bool | None] | None = None
    # What an imported project function returns ("tensor", "other", None: unknown), as the
    # project model reads it from module summaries. Set by the engine.
    imported_return_kind: Callable[[str], str | None] | None = None
    # Modules imported with `from module import *` at module level (in order).
    star_imports: list[str] = field(default_factory=list)

    @classmethod
    def build(
        cls,
        indexes: Iterable[BlockIndex],
        module_body: list[cst.BaseStatement],
        default_exporter: str = "auto",
        resolve_base: Callable[[str], bool | None] | None = None,
    ) -> SemanticModel:
        imports: dict[str, str] = {}
        classes: dict[str, ClassInfo] = {}
        functions: dict[str, FunctionInfo] = {}
        call_sites: list[CallSite] = []
        assigned: set[str] = set()
        stars: list[str] = []
        for idx in indexes:
            stars += idx.star_imports
            for bound, full in idx.imports:
                imports[bound] = full
            for c in idx.classes:
                classes[c.name] = c
            for f in idx.functions:
                functions[f.name] = f
            call_sites.extend(idx.call_sites)
            assigned |= idx.assigned_names
        model = cls(imports, classes, functions, call_sites, assigned, module_body=module_body)
        model.star_imports = stars
        model.default_exporter = default_exporter
        model.resolve_base = resolve_base
        model._mark_modules()
        model._compute_reachable()
        model._collect_exports()
        return model

    # -- names

    def qualname(self, expr: cst.BaseExpression) -> str | None:
        """The fully qualified name `expr` resolves to through the imports, if known."""
        d = dotted(expr)
        return None if d is None else self.resolve(d)

    def resolve(self, d: str) -> str | None:
        """Resolve a dotted name as written (`nn.Module`) to its qualified name."""
        head, _, rest = d.partition(".")
        full = self.imports.get(head)
        if full is None:
            if head in self.classes or head in self.functions or head in self.assigned_names:
                return None  # a local definition shadows builtins and is not imported
            if head in _BUILTINS:
                full = f"builtins.{head}"
            else:
                return None
        return f"{full}.{rest}" if rest else full

    def is_torch(self, expr: cst.BaseExpression, *names: str) -> bool:
        q = self.qualname(expr)
        return q is not None and q in names

    # -- modules

    def _mark_modules(self) -> None:
        # ClassInfo objects live with their block (reused while its text is unchanged),
        # but whether a class is a module depends on other blocks (its imports, its bases).
        for c in self.classes.values():
            c.is_module, c.module_reason = False, ""
        changed = True
        while changed:
            changed = False
            for c in self.classes.values():
                if c.is_module:
                    continue
                for base in c.bases:
                    reason = self._module_base_reason(base, c)
                    if reason:
                        c.is_module, c.module_reason = True, reason
                        changed = True
                        break

    def _module_base_reason(self, base: str, c: ClassInfo) -> str:
        head = base.split(".")[0]
        if head in self.classes and head != c.name:
            return "subclass of a module" if self.classes[head].is_module else ""
        q = self.resolve(base) if base else None
        if q is None and head not in self.classes and self.resolve_base is not None:
            for star in self.star_imports:  # `from .base import *` then `class A(Base)`
                sep = "" if star.endswith(".") else "."
                if self.resolve_base(f"{star}{sep}{base}"):
                    return "subclass of a project module"
        if q is None:
            return ""
        verdict = base_verdict(q)
        if verdict is True:
            if q in TORCH_MODULE_BASES:
                return "nn.Module"
            return "torch.nn layer" if q.startswith("torch.nn.") else "library module"
        if verdict is False:
            return ""
        if self.resolve_base is not None:
            found = self.resolve_base(q)
            if found is not None:
                return "subclass of a project module" if found else ""
        if (
            "forward" in c.methods
            and "torch" in {full.split(".", 1)[0] for full in self.imports.values()}
            and not imports_other_framework(self.imports)
        ):
            return "imported base with forward"
        return ""

    def module_classes(self) -> list[ClassInfo]:
        return [c for c in self.classes.values() if c.is_module]

    def find_method(self, class_name: str, name: str) -> FunctionInfo | None:
        """A method looked up through local base classes (single inheritance order)."""
        seen: set[str] = set()
        todo = [class_name]
        while todo:
            cname = todo.pop(0)
            if cname in seen or cname not in self.classes:
                continue
            seen.add(cname)
            c = self.classes[cname]
            if name in c.methods:
                return c.methods[name]
            todo.extend(b.split(".")[0] for b in c.bases)
        return None

    def _compute_reachable(self) -> None:
        roots = [self.find_method(c.name, "forward") for c in self.module_classes()]
        self.reachable = self.reachable_from([f for f in roots if f is not None])

    def reachable_from(
        self, roots: Iterable[FunctionInfo], *, into_module_classes: bool = False
    ) -> set[tuple[str | None, str]]:
        """Keys of the functions that run when `roots` run: methods reached through
        `self.m()`, module-level functions called by name and, with `into_module_classes`,
        the `forward` of a module class of this file called by name (`Block(...)(x)`)."""
        reach: set[tuple[str | None, str]] = set()
        todo = list(roots)
        while todo:
            f = todo.pop()
            if f.key in reach:
                continue
            reach.add(f.key)
            f = f.live()
            if f.class_name is not None:
                for m in f.self_calls:
                    target = self.find_method(f.class_name, m)
                    if target is not None:
                        todo.append(target)
            for n in f.name_calls:
                if n in self.functions:
                    todo.append(self.functions[n])
                elif into_module_classes and n in self.classes and self.classes[n].is_module:
                    fwd = self.find_method(n, "forward")
                    if fwd is not None:
                        todo.append(fwd)
        return reach

    def is_reachable(self, func: FunctionInfo | None) -> bool:
        return func is not None and func.key in self.reachable

    # -- exports

    def _collect_exports(self) -> None:
        for site in self.call_sites:
            q = self.qualname(site.node.func)
            if q is None:
                continue
            kind = classify_export(site.node, q)
            if kind is not None:
                self.export_calls.append(ExportCall(site.node, q, kind, site.statement))

    @property
    def uses_torchscript(self) -> bool:
        """Whether this file's code is exported through TorchScript (trace/script/legacy)."""
        if any(e.kind.is_torchscript for e in self.export_calls):
            return True
        if self.export_calls:
            return False
        return self.default_exporter == "torchscript"

    @property
    def declares_dynamic_dims(self) -> bool:
        """Whether an export call of the file passes `dynamic_shapes` or `dynamic_axes`."""
        for e in self.export_calls:
            for name in ("dynamic_shapes", "dynamic_axes"):
                arg = keyword_arg(e.node, name)
                if arg is not None and not is_none(arg.value):
                    return True
        return False

    def export_call_for(self, call: cst.Call) -> ExportCall | None:
        for e in self.export_calls:
            if e.node is call:
                return e
        return None


# --------------------------------------------------------------------------- value kinds
