"""Reach: for every function and method, the export sites whose model runs it.

From each export site's model class, the walk follows what runs when its `forward` runs:
methods called on `self` (through base classes in any file), the `forward` of the
submodules the class builds (`self.backbone = ResNet(...)`, `nn.ModuleList([Block(...)
...])`, `nn.Sequential(...)`, a project factory `build_head(cfg)`), module functions
called by name or through an imported module, in any project file, never into the parts
of a function an export skips (`if self.training:`, `if labels is not None:`, see
onnxlint.semantic.branches). Along the way it
records what each submodule call passes to the callee's `forward` parameters (a Python
int such as Swin's `H, W`, a string, a tensor), so rules do not take every `forward`
parameter for a tensor.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial

import libcst as cst

from onnxlint.analysis.chains import locate
from onnxlint.analysis.dims import (
    Taint,
    TaintFlow,
    calls_in,
    declared_dims,
    layer_attrs,
    passed_taints,
)
from onnxlint.project.exports import ClassRef, ExportSite, call_line, called_classes
from onnxlint.project.facts import FileFacts
from onnxlint.project.index import ProjectIndex
from onnxlint.semantic.calls import ExportKind
from onnxlint.semantic.frameworks import is_autograd_function
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.semantic.kinds import Kind, Kinds
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import code_of, dotted, iter_descendants

FuncKey = tuple["str | None", str]
# Located steps of a chain: (absolute path, line, column, what happens there).
Located = tuple[tuple[str, int, int, str], ...]
# A parameter's dynamic dims, the export declaring them, the calls that pass them there.
TaintedParam = tuple[Taint, "ExportSite", Located]
# (the Function class, the located calls of reached code, the export sites reaching them)
SymbolicAlias = tuple[str, Located, tuple["ExportSite", ...]]
# Functions visited from one export site before the walk gives up (generated code).
_MAX_FUNCTIONS = 20_000
# Kinds a parameter may receive that are certainly not tensors.
NOT_TENSOR = frozenset({Kind.SIZE, Kind.SHAPE, Kind.OTHER, Kind.BOOL, Kind.NONE, Kind.NDARRAY})


@dataclass
class ReachTable:
    """What the project's exports reach, per file (absolute path) and function key."""

    sites: list[ExportSite] = field(default_factory=list)
    reach: dict[str, dict[FuncKey, set[ExportSite]]] = field(default_factory=dict)
    # Classes the exports build, per file: (class name -> sites), for OLX201 and hovers.
    classes: dict[str, dict[str, set[ExportSite]]] = field(default_factory=dict)
    # The classes the sites export themselves (the model's boundary), per file.
    roots: dict[str, dict[str, set[ExportSite]]] = field(default_factory=dict)
    # autograd.Function classes with a `symbolic` that each site's model calls (`.apply`).
    symbolic: dict[ExportSite, set[str]] = field(default_factory=dict)
    deps: dict[str, str | None] = field(default_factory=dict)  # files read: content hash
    # Per file and function: the parameters that get a value with a dynamic dim, the
    # export that declares it and the calls that pass it there (`forward(x)` of a
    # submodule, `shapes_of(feats)` of a helper).
    taints: dict[str, dict[FuncKey, dict[str, TaintedParam]]] = field(default_factory=dict)
    # Per file: module-level aliases of a symbolic Function's `apply` (`roi_pool =
    # RoIPoolFunction.apply`) that reached code calls -> the class, the calls, the sites.
    aliases: dict[str, dict[str, SymbolicAlias]] = field(default_factory=dict)
    # Per file: plain functions that call a symbolic Function's `apply` -> the calls by
    # which reached code gets there (`Head.forward()` calls `roi_align()`).
    via: dict[str, dict[FuncKey, Located]] = field(default_factory=dict)

    def for_file(self, path: str) -> FileReach:
        return FileReach(
            {k: frozenset(v) for k, v in self.reach.get(path, {}).items()},
            {k: frozenset(v) for k, v in self.classes.get(path, {}).items()},
            bool(self.sites),
            path,
            {k: frozenset(v) for k, v in self.roots.get(path, {}).items()},
            {
                site.line: tuple(sorted(names))
                for site, names in self.symbolic.items()
                if site.path == path
            },
            {k: dict(v) for k, v in self.taints.get(path, {}).items()},
            dict(self.aliases.get(path, {})),
            dict(self.via.get(path, {})),
        )


@dataclass(frozen=True)
class FileReach:
    """The part of the reach table one file's rules read (a plain, picklable value)."""

    functions: dict[FuncKey, frozenset[ExportSite]] = field(default_factory=dict)
    classes: dict[str, frozenset[ExportSite]] = field(default_factory=dict)
    project_exports: bool = False  # the project has export sites at all
    path: str = ""  # the file this is about (absolute)
    roots: dict[str, frozenset[ExportSite]] = field(default_factory=dict)  # exported classes
    # export line in this file -> autograd.Function classes with `symbolic` its model calls
    symbolic: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # function -> parameter -> (its dynamic dims, the export declaring them, the calls)
    taints: dict[FuncKey, dict[str, TaintedParam]] = field(default_factory=dict)
    # alias name -> (the Function class, the calls of reached code, the export sites)
    aliases: dict[str, SymbolicAlias] = field(default_factory=dict)
    # plain function calling a symbolic Function's `apply` -> the calls that reach it
    via: dict[FuncKey, Located] = field(default_factory=dict)

    @property
    def exports_dynamic(self) -> bool:
        """Whether an export of the project that reaches this file declares a dynamic dim
        (for a class of this file, or for a parameter of one of its functions)."""
        return bool(self.taints) or any(
            site.dynamic for sites in self.roots.values() for site in sites
        )

    def key(self) -> int:
        """What findings may depend on: the sites without their line when they are in
        this file (an edit above an export call must not invalidate every block)."""

        def site(s: ExportSite) -> tuple[object, ...]:
            line = 0 if s.path == self.path else s.line
            return (s.path, line, s.kind.value, s.dynamic, s.dims, s.model)

        return hash(
            (
                tuple(
                    sorted(
                        (k[0] or "", k[1], tuple(sorted(site(x) for x in v)))
                        for k, v in self.functions.items()
                    )
                ),
                tuple(
                    sorted((k, tuple(sorted(site(x) for x in v))) for k, v in self.classes.items())
                ),
                tuple(sorted(self.roots)),
                tuple(sorted(self.symbolic.items())),
                self.project_exports,
                tuple(
                    sorted(
                        (k[0] or "", k[1], p, taint, site(s), chain)
                        for k, params in self.taints.items()
                        for p, (taint, s, chain) in params.items()
                    )
                ),
                tuple(
                    sorted(
                        (name, cls, calls, tuple(sorted(site(s) for s in sites)))
                        for name, (cls, calls, sites) in self.aliases.items()
                    )
                ),
                tuple(sorted((k[0] or "", k[1], v) for k, v in self.via.items())),
            )
        )


def compute_reach(
    index: ProjectIndex, sites: list[tuple[ExportSite, list[ClassRef]]]
) -> ReachTable:
    table = ReachTable(sites=[s for s, _ in sites])
    for site, classes in sites:
        _walk_site(index, table, site, classes)
        if site.dynamic and site.kind in _DIM_EXPORTS:
            _walk_dims(index, table, site, classes)
    return table


_DIM_EXPORTS = (
    ExportKind.ONNX_DYNAMO,
    ExportKind.ONNX_TORCHSCRIPT,
    ExportKind.ONNX_DYNAMO_EXPORT,
    ExportKind.TORCH_EXPORT,
)
# Functions a site's dynamic dims are carried into before the walk gives up.
_MAX_TAINT_STEPS = 2_000

_DimItem = tuple[FileFacts, FunctionInfo, "ClassRef | None", dict[str, Taint], Located]


def _walk_dims(
    index: ProjectIndex, table: ReachTable, site: ExportSite, classes: list[ClassRef]
) -> None:
    """Carry the dims `site` declares dynamic from the exported class's `forward` into
    what it calls with those values: its methods, its submodules' `forward` (in any
    file), the helpers of the project (`shapes_of(feats)`), argument by argument
    (`onnxlint.analysis.dims`)."""
    facts = index.facts(site.path)
    if facts is None:
        return
    call = next(
        (c for c in facts.semantic.export_calls if call_line(facts, c.node) == site.line), None
    )
    if call is None:
        return
    todo: list[_DimItem] = []
    for ref in classes:
        found = index.find_method(ref[0], ref[1], "forward")
        if found is None:
            continue
        p = found[1].node.params
        if isinstance(p.star_arg, cst.Param) or p.star_kwarg is not None:
            continue
        params = [x.name.value for x in found[1].params()]
        declared = declared_dims(facts.analysis, call, params)
        if declared:
            todo.append((found[0], found[1], ref, declared, ()))
    steps = 0
    while todo and steps < _MAX_TAINT_STEPS:
        steps += 1
        f, func, owner, taints, chain = todo.pop()
        have = table.taints.setdefault(f.path, {}).setdefault(func.key, {})
        new = {k: v for k, v in taints.items() if k not in have}
        if not new:
            continue
        for k, v in new.items():
            have[k] = (v, site, chain)
        layers = layer_attrs(owner[0].analysis, owner[1]) if owner is not None else frozenset()
        flow = TaintFlow(f.analysis, func, {k: v[0] for k, v in have.items()}, layers)
        loops = _loop_vars(func.node) if owner is not None else {}
        for node in calls_in(func.node.body):
            for target in _callees(index, f, owner, node, loops):
                tf, tfunc, towner = target
                passed = passed_taints(flow, node, [x.name.value for x in tfunc.params()])
                if passed:
                    step = _step(f, func, owner, node, tfunc, towner)
                    todo.append((tf, tfunc, towner, passed, (*chain, *step)))


def _step(
    facts: FileFacts,
    func: FunctionInfo,
    owner: ClassRef | None,
    call: cst.Call,
    target: FunctionInfo,
    towner: ClassRef | None,
) -> Located:
    """The call that passes a dynamic dim on, as a located step (plain values: the table
    goes to the CLI's pool workers)."""
    pos = locate(facts.analysis, call)
    if pos is None:
        return ()
    here = f"{owner[1].name}.{func.name}" if owner is not None else func.name
    there = f"{towner[1].name}.{target.name}" if towner is not None else target.name
    return ((facts.path, pos[0], pos[1], f"`{here}()` passes it to `{there}()`"),)


def _loop_vars(func: cst.FunctionDef) -> dict[str, str]:
    """`blk` -> `blocks` for `for blk in self.blocks:` (and `enumerate(self.blocks)`)."""
    out: dict[str, str] = {}
    for node in iter_descendants(func.body):
        if not isinstance(node, cst.For):
            continue
        it: cst.BaseExpression = node.iter
        target: cst.BaseExpression = node.target
        if isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and it.args:
            it = it.args[0].value
            if isinstance(target, cst.Tuple) and len(target.elements) == 2:
                target = target.elements[1].value
        d = dotted(it)
        if isinstance(target, cst.Name) and d is not None and d.startswith("self."):
            out[target.value] = d[5:]
    return out


def _callees(
    index: ProjectIndex,
    facts: FileFacts,
    owner: ClassRef | None,
    call: cst.Call,
    loops: dict[str, str],
) -> list[tuple[FileFacts, FunctionInfo, ClassRef | None]]:
    """What a call of forward code runs, with the class it runs on: a method of `self`,
    the `forward` of a submodule (`self.head(x)`, `self.blocks[i](x)`, `blk(x)` over
    `self.blocks`), a function of the project (local, imported, `mod.f`)."""
    func = call.func
    if isinstance(func, cst.Subscript):
        func = func.value
    d = dotted(func)
    if d is None:
        return []
    out: list[tuple[FileFacts, FunctionInfo, ClassRef | None]] = []
    if owner is not None and d.startswith("self.") and d.count(".") == 1:
        attr = d[5:]
        found = index.find_method(owner[0], owner[1], attr)
        if found is not None:
            return [(found[0], found[1], owner)]
        for sub in composition(index, owner[0], owner[1]).get(attr, ()):
            fwd = index.find_method(sub[0], sub[1], "forward")
            if fwd is not None:
                out.append((fwd[0], fwd[1], sub))
        return out
    if owner is not None and d in loops:
        for sub in composition(index, owner[0], owner[1]).get(loops[d], ()):
            fwd = index.find_method(sub[0], sub[1], "forward")
            if fwd is not None:
                out.append((fwd[0], fwd[1], sub))
        return out
    model = facts.semantic
    if d in model.functions:
        return [(facts, model.functions[d], None)]
    q = model.resolve(d)
    if q is None or q.startswith(("torch.", "builtins.", "numpy.", "math.")):
        return []
    found_f = index.find_function(facts.path, q)
    return [(found_f[0], found_f[1], None)] if found_f is not None else []


# A call on the way to a plain function: the caller's file, function, class, the name.
_Via = tuple[tuple[FileFacts, FunctionInfo, "ClassRef | None", str], ...]
_Item = tuple[FileFacts, FunctionInfo, "ClassRef | None", _Via]
# Calls kept on the way to a function (the first ones say where the model enters).
_MAX_VIA = 4


def _walk_site(
    index: ProjectIndex, table: ReachTable, site: ExportSite, classes: list[ClassRef]
) -> None:
    todo: list[_Item] = []
    seen: set[tuple[str, FuncKey, str]] = set()

    def enter_class(ref: ClassRef) -> None:
        facts, cls = ref
        table.classes.setdefault(facts.path, {}).setdefault(cls.name, set()).add(site)
        found = index.find_method(facts, cls, "forward")
        if found is not None:
            todo.append((found[0], found[1], ref, ()))

    for ref in classes:
        table.roots.setdefault(ref[0].path, {}).setdefault(ref[1].name, set()).add(site)
        enter_class(ref)
    visited = 0
    while todo and visited < _MAX_FUNCTIONS:
        facts, func, owner, via = todo.pop()
        mark = (facts.path, func.key, owner[1].name if owner else "")
        if mark in seen:
            continue
        seen.add(mark)
        visited += 1
        table.reach.setdefault(facts.path, {}).setdefault(func.key, set()).add(site)
        func = func.live()  # not into `if self.training:` and other parts exports skip
        if owner is not None:
            of, oc = owner
            for m in func.self_calls:
                found = index.find_method(of, oc, m)
                if found is not None:
                    todo.append((found[0], found[1], owner, via))
            for attr in func.self_attrs:
                for sub in composition(index, of, oc).get(attr, ()):
                    if sub[1] is not oc:
                        enter_class(sub)
        model = facts.semantic
        step = partial(_step_via, via, facts, func, owner)
        for n in func.name_calls:
            if n in model.functions:
                todo.append((facts, model.functions[n], None, step(n)))
                continue
            if n in model.classes:
                if model.classes[n].is_module:
                    enter_class((facts, model.classes[n]))
                continue
            if _alias_call(index, table, site, facts, func, n):
                continue
            _follow_import(index, facts, model.resolve(n), todo, enter_class, step(n))
        for d in func.attr_calls:
            head = d.split(".", 1)[0]
            if d.endswith(".apply"):
                found_fn = symbolic_function(index, facts, d[: -len(".apply")])
                if found_fn is not None:
                    table.symbolic.setdefault(site, set()).add(found_fn)
                    if owner is None and via:
                        _record_via(table, facts, func, via)
                continue
            if head in model.imports:
                if _alias_call(index, table, site, facts, func, d):
                    continue
                _follow_import(index, facts, model.resolve(d), todo, enter_class, step(d))


def _step_via(
    via: _Via, facts: FileFacts, func: FunctionInfo, owner: ClassRef | None, name: str
) -> _Via:
    """`via` and the call of `name` in `func` (the first calls only)."""
    return (*via, (facts, func, owner, name))[:_MAX_VIA]


def _record_via(table: ReachTable, facts: FileFacts, func: FunctionInfo, via: _Via) -> None:
    """How reached code gets to a plain function that calls a symbolic `apply`, located
    (once per function: the first way the walk found)."""
    have = table.via.setdefault(facts.path, {})
    if func.key in have:
        return
    steps: list[tuple[str, int, int, str]] = []
    for i, (f, caller, owner, name) in enumerate(via):
        callee = via[i + 1][1].name if i + 1 < len(via) else func.name
        here = f"{owner[1].name}.{caller.name}" if owner is not None else caller.name
        for node in iter_descendants(caller.node.body):
            if isinstance(node, cst.Call) and dotted(node.func) == name:
                pos = locate(f.analysis, node)
                if pos is not None:
                    steps.append((f.path, pos[0], pos[1], f"`{here}()` calls `{callee}()`"))
                break
    have[func.key] = tuple(steps)


def _alias_call(
    index: ProjectIndex,
    table: ReachTable,
    site: ExportSite,
    facts: FileFacts,
    func: FunctionInfo,
    name: str,
) -> bool:
    """Record a call of reached code to a module-level alias of a symbolic Function's
    `apply` (`roi_pool(feats, rois)` with `roi_pool = RoIPoolFunction.apply`, in this
    file or imported); True when `name` is one."""
    found = symbolic_alias(index, facts, name)
    if found is None:
        return False
    cls, where, alias = found
    table.symbolic.setdefault(site, set()).add(cls)
    calls: list[tuple[str, int, int, str]] = []
    for node in iter_descendants(func.node.body):
        if isinstance(node, cst.Call) and dotted(node.func) == name:
            pos = locate(facts.analysis, node)
            if pos is not None:
                calls.append((facts.path, pos[0], pos[1], f"`{func.name}()` calls `{name}()`"))
    old = table.aliases.setdefault(where.path, {}).get(alias)
    old_calls, old_sites = (old[1], old[2]) if old is not None else ((), ())
    merged = tuple(sorted({*old_calls, *calls}))
    sites = tuple(sorted({*old_sites, site}, key=lambda s: (s.path, s.line)))
    table.aliases[where.path][alias] = (cls, merged, sites)
    return True


def symbolic_alias(
    index: ProjectIndex, facts: FileFacts, name: str
) -> tuple[str, FileFacts, str] | None:
    """(the Function class, the file, the alias) when `name` (as written in `facts`' file)
    is a module-level `alias = SomeFunction.apply` of a Function with a `symbolic`, in
    the file or imported from another module of the project."""
    where: tuple[FileFacts, str] | None = None
    if "." not in name and name in facts.semantic.assigned_names:
        where = (facts, name)
    else:
        q = facts.semantic.resolve(name)
        if q is None or q.startswith(("torch.", "builtins.", "numpy.", "math.")):
            return None
        where = index.find_name(facts.path, q)
        if where is None:
            return None
    owner, alias = where
    value = _module_value(owner, alias)
    d = dotted(value) if value is not None else None
    if d is None or not d.endswith(".apply"):
        return None
    cls = symbolic_function(index, owner, d[: -len(".apply")])
    return (cls, owner, alias) if cls is not None else None


def _module_value(facts: FileFacts, name: str) -> cst.BaseExpression | None:
    """The one module-level value `name` is assigned in a file."""
    values = [
        small.value
        for stmt in facts.semantic.module_body
        if isinstance(stmt, cst.SimpleStatementLine)
        for small in stmt.body
        if isinstance(small, cst.Assign)
        and any(isinstance(t.target, cst.Name) and t.target.value == name for t in small.targets)
    ]
    return values[0] if len(values) == 1 else None


def symbolic_function(index: ProjectIndex, facts: FileFacts, name: str) -> str | None:
    """`Name` when `name` (as written before `.apply`) is a `torch.autograd.Function`
    subclass of the project with a `symbolic` method (for the TorchScript exporter) whose
    `forward` stands in for it (see `stand_in`)."""
    found = _symbolic_class(index, facts, name)
    return found.name if found is not None and stand_in(found) is not None else None


def _symbolic_class(index: ProjectIndex, facts: FileFacts, name: str) -> ClassInfo | None:
    model = facts.semantic
    found: tuple[FileFacts, ClassInfo] | None = None
    if name in model.classes:
        found = (facts, model.classes[name])
    else:
        q = model.resolve(name)
        if q is not None and not q.startswith(("torch.", "builtins.")):
            found = index.find_class(facts.path, q)
    if found is None:
        return None
    owner, cls = found
    if "symbolic" not in cls.methods:
        return None
    for base in cls.bases:
        q = owner.semantic.resolve(base) or base
        if is_autograd_function(q):
            return cls
    return None


def symbolic_stand_in(index: ProjectIndex, facts: FileFacts, name: str) -> str | None:
    """What the `forward` of the Function `name` does in place of its `symbolic`."""
    found = _symbolic_class(index, facts, name)
    return stand_in(found) if found is not None else None


# What a `forward` that only stands in for its `symbolic` returns: made-up tensors of the
# right shape (an NMS or a TensorRT plugin) or an input unchanged.
_MADE_UP = frozenset(
    {
        "zeros", "ones", "empty", "full", "rand", "randn", "randint", "tensor",
        "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
        "new_zeros", "new_ones", "new_empty", "new_full", "new_tensor",
    }
)  # fmt: skip


_READS_VALUES = ("item", "tolist", "numpy")


def stand_in(cls: ClassInfo) -> str | None:
    """How the Function's `forward` stands in for its `symbolic`, or None when it computes
    the result with traceable ops (RobustVideoMatting's resize and crop: the dynamo exporter
    exports what it computes, correctly, so the ignored `symbolic` is no error there).
    A placeholder: every `return` gives made-up tensors or a parameter unchanged, or a
    branch on being in an ONNX export does. Reading tensor values (`.item()`, `.tolist()`):
    the export fails there or bakes the values in."""
    forward = cls.methods.get("forward")
    if forward is None:
        return None
    params = {p.name.value for p in forward.node.params.params}
    body = list(iter_descendants(forward.node.body))
    values = [n.value for n in body if isinstance(n, cst.Return) and n.value is not None]
    if all(_made_up(v, params) for v in values):
        return "a placeholder"
    if any(
        isinstance(n, cst.If)
        and "onnx" in code_of(n.test)
        and any(
            isinstance(r, cst.Return) and r.value is not None and _made_up(r.value, params)
            for r in iter_descendants(n.body)
        )
        for n in body
    ):
        return "a placeholder in an export"
    for n in body:
        read = n.func if isinstance(n, cst.Call) else None
        reads = isinstance(read, cst.Attribute) and read.attr.value in _READS_VALUES
        if reads and isinstance(read, cst.Attribute) and dotted(read.value) in params:
            return f"code that reads tensor values (`.{read.attr.value}()`)"
    return None


def _made_up(value: cst.BaseExpression, params: set[str]) -> bool:
    if isinstance(value, (cst.Tuple, cst.List)):
        return all(isinstance(e, cst.Element) and _made_up(e.value, params) for e in value.elements)
    if isinstance(value, cst.Name):
        return value.value in params
    if isinstance(value, cst.Call):
        name = dotted(value.func)
        if name is None:
            return False
        head, _, tail = name.rpartition(".")
        if tail == "clone":
            return head in params  # the input, copied
        return tail in _MADE_UP
    return False


def _follow_import(index, facts, q, todo, enter_class, via) -> None:  # type: ignore[no-untyped-def]
    if q is None or q.startswith(("torch.", "builtins.", "numpy.", "math.")):
        return
    found_f = index.find_function(facts.path, q)
    if found_f is not None:
        todo.append((found_f[0], found_f[1], None, via))
        return
    found_c = index.find_class(facts.path, q)
    if found_c is not None and found_c[1].is_module:
        enter_class(found_c)


# --------------------------------------------------------------------------- composition


def composition(index: ProjectIndex, facts: FileFacts, cls: ClassInfo) -> dict[str, list[ClassRef]]:
    """`self.attr` -> the project module classes assigned to it in the class's methods
    (and its project bases'), memoised per file facts."""
    key = ("composition", cls.name)
    memo = facts.semantic.memo
    found = memo.get(key)
    if found is not None:
        return found  # type: ignore[return-value]
    memo[key] = {}  # recursion guard
    out: dict[str, list[ClassRef]] = {}
    base = index.base_class(facts, cls)
    if base is not None and base[1] is not cls:
        for attr, refs in composition(index, *base).items():
            out.setdefault(attr, []).extend(refs)
    for method in cls.methods.values():
        for attr, value in _self_assignments(method.node):
            for call in _calls_in(value):
                for ref in called_classes(index, facts, call, depth=2):
                    if ref[1].is_module and all(ref[1] is not o[1] for o in out.get(attr, [])):
                        out.setdefault(attr, []).append(ref)
    memo[key] = out
    return out


def _self_assignments(func: cst.FunctionDef) -> Iterator[tuple[str, cst.BaseExpression]]:
    """(`attr`, value) for `self.attr = value` / `self.attr: T = value` and
    `self.add_module("attr", value)` / `setattr(self, "attr", value)`."""
    for node in iter_descendants(func.body):
        if isinstance(node, cst.Assign):
            for t in node.targets:
                d = dotted(t.target)
                if d is not None and d.startswith("self.") and d.count(".") == 1:
                    yield d[5:], node.value
        elif isinstance(node, cst.AnnAssign) and node.value is not None:
            d = dotted(node.target)
            if d is not None and d.startswith("self.") and d.count(".") == 1:
                yield d[5:], node.value
        elif isinstance(node, cst.Call) and len(node.args) >= 2:
            d = dotted(node.func)
            first = node.args[0].value
            if d == "self.add_module" and isinstance(first, cst.SimpleString):
                yield first.value.strip("'\""), node.args[1].value
            elif d == "setattr" and len(node.args) >= 3 and dotted(first) == "self":
                name = node.args[1].value
                if isinstance(name, cst.SimpleString):
                    yield name.value.strip("'\""), node.args[2].value


def _calls_in(expr: cst.BaseExpression) -> Iterator[cst.Call]:
    if isinstance(expr, cst.Call):
        yield expr
    for node in iter_descendants(expr):
        if isinstance(node, cst.Call):
            yield node


# --------------------------------------------------------------------------- parameter kinds


def local_param_kinds(
    index: ProjectIndex | None, facts_model: SemanticModel, facts: FileFacts | None
) -> dict[FuncKey, dict[str, Kind]]:
    """For the `forward` of module classes of one file: the parameters that every call
    seen in this file passes a non-tensor to (`blk(x, H, W)` with `H, W = x.shape[2:]`).
    Submodule calls are `self.attr(...)`, `self.attr[i](...)` and `blk(...)` in
    `for blk in self.attr:`; a few rounds let kinds flow down nested blocks.

    The per-class and per-method parts are memoised on the `ClassInfo`/`FunctionInfo`,
    which live as long as their block: after an edit only the edited block's class is
    looked at again (a keystroke in modeling_bert.py)."""
    model = facts_model
    overrides: dict[FuncKey, dict[str, Kind]] = {}
    modules = [c for c in model.classes.values() if c.is_module]
    if len(modules) < 2:
        return overrides
    # What a class's or method's memo depends on outside its block: which classes are
    # modules and the parameters of their `forward`s.
    names = tuple(
        sorted(
            (c.name, tuple(p.name.value for p in fwd.params()) if fwd is not None else None)
            for c in modules
            for fwd in [model.find_method(c.name, "forward")]
        )
    )
    # Only a callee whose `forward` takes a second parameter without annotation or default
    # can get a kind this way (the first is the input tensor; the rest say what they are).
    candidates = {c.name for c in modules if _guessed_params(model, c.name)}
    if not candidates:
        return overrides
    comp: dict[str, dict[str, list[str]]] = {}
    for c in modules:
        key = ("composition", names)
        if key not in c.memo:
            c.memo[key] = _local_composition(model, c)
        full: dict[str, list[str]] = c.memo[key]  # type: ignore[assignment]
        comp[c.name] = {
            a: [x for x in callees if x in candidates]
            for a, callees in full.items()
            if any(x in candidates for x in callees)
        }
    if not any(comp.values()):
        return overrides
    for _ in range(3):
        seen: dict[tuple[str, str], set[Kind]] = {}
        for c in modules:
            attrs = comp[c.name]
            if not attrs:
                continue
            for method in c.methods.values():
                given = overrides.get(method.key)
                seen_key = ("observed", names, tuple(sorted(given.items())) if given else ())
                if seen_key not in method.memo:
                    method.memo[seen_key] = _observe(model, method, attrs, given)
                found: list[tuple[tuple[str, str], Kind]] = method.memo[seen_key]  # type: ignore[assignment]
                for pair, kind in found:
                    seen.setdefault(pair, set()).add(kind)
        new: dict[FuncKey, dict[str, Kind]] = {}
        for (callee, param), ks in seen.items():
            if ks and ks <= NOT_TENSOR:
                fwd = model.find_method(callee, "forward")
                if fwd is not None:
                    kind = next(iter(ks)) if len(ks) == 1 else Kind.OTHER
                    new.setdefault(fwd.key, {})[param] = kind
        if new == overrides:
            break
        overrides = new
    return overrides


def _guessed_params(model: SemanticModel, cls: str) -> bool:
    fwd = model.find_method(cls, "forward")
    if fwd is None:
        return False
    params = fwd.params()[1:]
    return any(p.annotation is None and p.default is None for p in params)


def _observe(
    model: SemanticModel,
    method: FunctionInfo,
    attrs: dict[str, list[str]],
    given: dict[str, Kind] | None,
) -> list[tuple[tuple[str, str], Kind]]:
    """((callee class, parameter), kind passed) for each submodule call in `method`."""
    out: list[tuple[tuple[str, str], Kind]] = []
    calls = list(_submodule_calls(method.node, attrs))
    if not calls:
        return out
    kinds = Kinds(model, method, given)
    for call, callee_classes in calls:
        args = [a for a in call.args if a.keyword is None and not a.star]
        for callee in callee_classes:
            fwd = model.find_method(callee, "forward")
            if fwd is None:
                continue
            params = fwd.params()
            for i, a in enumerate(args):
                if i < len(params):
                    out.append(((callee, params[i].name.value), kinds.of(a.value)))
            for a in call.args:
                if a.keyword is not None:
                    out.append(((callee, a.keyword.value), kinds.of(a.value)))
    return out


def _local_composition(model: SemanticModel, cls: ClassInfo) -> dict[str, list[str]]:
    """`self.attr` -> local module class names built into it."""
    out: dict[str, list[str]] = {}
    init = cls.methods.get("__init__")  # where submodules are built (cheap: one method)
    for method in [init] if init is not None else []:
        for attr, value in _self_assignments(method.node):
            for call in _calls_in(value):
                name = dotted(call.func)
                known = name is not None and name in model.classes
                if known and model.classes[name].is_module and name not in out.get(attr, []):  # type: ignore[index]
                    out.setdefault(attr, []).append(name)  # type: ignore[arg-type]
    return out


def _submodule_calls(
    func: cst.FunctionDef, attrs: dict[str, list[str]]
) -> Iterator[tuple[cst.Call, list[str]]]:
    loop_vars: dict[str, list[str]] = {}
    for node in iter_descendants(func.body):
        if isinstance(node, cst.For) and isinstance(node.target, cst.Name):
            it = node.iter
            if isinstance(it, cst.Call) and dotted(it.func) == "enumerate" and it.args:
                it = it.args[0].value
            d = dotted(it)
            if d is not None and d.startswith("self.") and d[5:] in attrs:
                loop_vars[node.target.value] = attrs[d[5:]]
    for node in iter_descendants(func.body):
        if not isinstance(node, cst.Call):
            continue
        f = node.func
        if isinstance(f, cst.Subscript):
            f = f.value
        d = dotted(f)
        if d is None:
            continue
        if d.startswith("self.") and d[5:] in attrs:
            yield node, attrs[d[5:]]
        elif d in loop_vars:
            yield node, loop_vars[d]
