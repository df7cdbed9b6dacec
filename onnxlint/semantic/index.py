"""The per-block index of a file: its defs, classes and interesting call sites.

Built once per parsed block and cached with it, so an edit inside one method re-indexes one
block (`block_index`). `SemanticModel` (onnxlint.semantic.model) is built from these indexes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from onnxlint.semantic.branches import (
    DEPLOY_FLAG,
    EXPORT_GUARDS,
    TRAINING_FLAGS,
    iter_live,
    optional_targets,
)
from onnxlint.source.blocks import Block
from onnxlint.source.walker import dotted, iter_children, iter_descendants


def _module_name(node: cst.BaseExpression | None) -> str:
    if node is None:
        return ""
    return dotted(node) or ""


# --------------------------------------------------------------------------- block index

_ITSELF = "itself"  # FunctionInfo.memo["live"] when the live function is the function


@dataclass
class FunctionInfo:
    """A `def` with what reachability and rules need to know about it."""

    name: str
    node: cst.FunctionDef
    class_name: str | None  # the enclosing class, for methods
    self_calls: set[str] = field(default_factory=set)  # `self.m(...)` names
    name_calls: set[str] = field(default_factory=set)  # `f(...)` names
    attr_calls: set[str] = field(default_factory=set)  # `mod.f(...)` dotted names (not self)
    self_attrs: set[str] = field(default_factory=set)  # `self.x` read anywhere in the body
    decorators: tuple[str, ...] = ()  # dotted decorator names (unresolved)
    # Answers about this function kept as long as its block (see project.reach).
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> tuple[str | None, str]:
        return (self.class_name, self.name)

    def params(self) -> list[cst.Param]:
        """Positional and keyword parameters, in order, without `self`/`cls`."""
        p = self.node.params
        out = [*p.posonly_params, *p.params, *p.kwonly_params]
        bound = self.class_name is not None and "staticmethod" not in self.decorators
        if bound and out and out[0].name.value in ("self", "cls"):
            out = out[1:]
        return out

    def live_targets(self) -> frozenset[str]:
        """The parameters that default to None and hold targets (`branches.optional_targets`)."""
        found = self.memo.get("targets")
        if not isinstance(found, frozenset):
            found = self.memo["targets"] = optional_targets(self.node, self.params())
        return found

    def live(self) -> FunctionInfo:
        """This function as an export runs it: its calls and `self` attributes outside the
        parts an export never runs (`onnxlint.semantic.branches`: `if self.training:`, `if labels
        is not None:`, after `if torch.onnx.is_in_onnx_export(): return`). Reachability
        follows these, so a helper called only there is not forward code."""
        found = self.memo.get("live")
        if found is _ITSELF:
            return self
        if isinstance(found, FunctionInfo):
            return found
        live = self
        if self._may_skip():
            live = FunctionInfo(self.name, self.node, self.class_name, decorators=self.decorators)
            scratch = BlockIndex()
            for node in iter_live(self.node, self.live_targets()):
                _index_node(node, scratch, live, self.node)  # (its call sites are unused)
        # Not `self` itself: a function in a reference cycle keeps its tree alive until a
        # garbage collection, which then walks every node of it.
        self.memo["live"] = _ITSELF if live is self else live
        return live

    def _may_skip(self) -> bool:
        """Cheap test for a part an export never runs (most functions have none)."""
        if "training" in self.self_attrs or self.live_targets():
            return True
        if any(DEPLOY_FLAG.search(a) for a in self.self_attrs):
            return True
        if any(p.name.value in TRAINING_FLAGS for p in self.params()):
            return True
        return any(c.rsplit(".", 1)[-1] in EXPORT_GUARDS for c in self.attr_calls) or bool(
            EXPORT_GUARDS & self.name_calls
        )


@dataclass
class ClassInfo:
    name: str
    node: cst.ClassDef
    bases: tuple[str, ...]  # dotted base expressions as written
    methods: dict[str, FunctionInfo] = field(default_factory=dict)
    is_module: bool = False  # filled in by SemanticModel
    module_reason: str = ""
    # Answers about this class kept as long as its block (see project.reach).
    memo: dict[object, object] = field(default_factory=dict, compare=False, repr=False)


@dataclass
class CallSite:
    """A call whose callee's last name could matter to a file-level rule."""

    node: cst.Call
    dotted: str
    statement: cst.CSTNode  # the top-level statement that holds it (where a search starts)


# Calls collected in the index so file-level rules need not walk every block.
_INTERESTING_CALL_TAILS = frozenset(
    {
        "export",
        "_export",
        "dynamo_export",
        "trace",
        "trace_module",
        "script",
        "eval",
        "train",
        "register_custom_op_symbolic",
        "custom_op",
        "register_fake",
        "define",
        "impl",
    }
)


@dataclass
class BlockIndex:
    """Facts about one block: cheap to build, cached with the parsed block."""

    imports: list[tuple[str, str]] = field(default_factory=list)  # (bound name, qualified)
    classes: list[ClassInfo] = field(default_factory=list)
    functions: list[FunctionInfo] = field(default_factory=list)  # module-level defs
    call_sites: list[CallSite] = field(default_factory=list)
    assigned_names: set[str] = field(default_factory=set)  # module-level assignment targets
    star_imports: list[str] = field(default_factory=list)  # `from .base import *` modules


def block_index(block: Block) -> BlockIndex:
    """The block's index (imports, classes, functions, call sites), memoised with it."""
    idx = block.memo.get("index")
    if idx is None:
        assert block.module is not None
        idx = index_block(block.module)
        block.memo["index"] = idx
    return idx  # type: ignore[no-any-return,unused-ignore]


def index_block(module: cst.Module) -> BlockIndex:
    """One walk over a block collecting imports, classes, functions and their calls."""
    idx = BlockIndex()
    for stmt in module.body:
        _index_statement(stmt, idx, None, None, stmt)
    return idx


def _decorator_names(node: cst.FunctionDef | cst.ClassDef) -> tuple[str, ...]:
    names = []
    for dec in node.decorators:
        expr = dec.decorator
        if isinstance(expr, cst.Call):
            expr = expr.func
        names.append(dotted(expr) or "")
    return tuple(names)


def _index_statement(
    stmt: cst.CSTNode,
    idx: BlockIndex,
    cls: ClassInfo | None,
    func: FunctionInfo | None,
    top: cst.CSTNode,
) -> None:
    if isinstance(stmt, cst.ClassDef):
        info = ClassInfo(
            stmt.name.value,
            stmt,
            tuple(d for d in (dotted(a.value) for a in stmt.bases if a.keyword is None) if d),
        )
        if cls is None and func is None:
            idx.classes.append(info)
        for child in stmt.body.body:
            _index_statement(child, idx, info, None, top)
        return
    if isinstance(stmt, cst.FunctionDef):
        finfo = FunctionInfo(
            stmt.name.value,
            stmt,
            cls.name if cls is not None and func is None else None,
            decorators=_decorator_names(stmt),
        )
        if func is None:
            if cls is not None:
                cls.methods[finfo.name] = finfo
            else:
                idx.functions.append(finfo)
        target = finfo if func is None else func  # nested defs count for their parent
        for node in iter_descendants(stmt, leaves=False):
            if type(node) in _INDEX_TYPES:  # most nodes are not: no call for them
                _index_node(node, idx, target, top)
        return
    # Any other statement: walk it (module level or class body level).
    _index_node(stmt, idx, func, top)
    for node in iter_descendants(stmt, leaves=False):
        if type(node) in _INDEX_TYPES:  # never a def: those nested in if/try come below
            _index_node(node, idx, func, top)
    if cls is None and func is None:
        for node in _nested_defs(stmt):
            _index_statement(node, idx, None, None, top)
        _collect_targets(stmt, idx.assigned_names)


def _nested_defs(stmt: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Defs inside module-level `if`/`try`/`with` blocks (e.g. `if HAS_TORCH:`)."""
    for child in iter_children(stmt):
        if isinstance(child, (cst.FunctionDef, cst.ClassDef)):
            yield child
        elif isinstance(
            child,
            (
                cst.BaseCompoundStatement,
                cst.BaseSuite,
                cst.BaseStatement,
                cst.Else,
                cst.ExceptHandler,
                cst.Finally,
            ),
        ):
            yield from _nested_defs(child)


def _collect_targets(stmt: cst.CSTNode, out: set[str]) -> None:
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign):
                for t in small.targets:
                    if isinstance(t.target, cst.Name):
                        out.add(t.target.value)
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name):
                out.add(small.target.value)


_INDEX_TYPES = frozenset({cst.Import, cst.ImportFrom, cst.Call, cst.Decorator, cst.Attribute})


def _index_node(
    node: cst.CSTNode, idx: BlockIndex, func: FunctionInfo | None, top: cst.CSTNode
) -> None:
    if type(node) not in _INDEX_TYPES:  # type() is much cheaper than libcst's ABC isinstance
        return
    if type(node) is cst.Attribute:
        if func is not None and type(node.value) is cst.Name and node.value.value == "self":
            func.self_attrs.add(node.attr.value)
        return
    if type(node) is cst.Import:
        for alias in node.names:
            full = _module_name(alias.name)
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                idx.imports.append((alias.asname.name.value, full))
            else:
                head = full.split(".")[0]
                idx.imports.append((head, head))
    elif type(node) is cst.ImportFrom:
        mod = "." * len(node.relative) + _module_name(node.module)
        if isinstance(node.names, cst.ImportStar):
            if func is None:
                idx.star_imports.append(mod)
            return
        for alias in node.names:
            name = _module_name(alias.name)
            bound = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                bound = alias.asname.name.value
            sep = "" if mod.endswith(".") else "."
            idx.imports.append((bound, f"{mod}{sep}{name}" if mod else name))
    elif type(node) is cst.Call:
        func_expr = node.func
        if func is not None:
            if type(func_expr) is cst.Name:
                func.name_calls.add(func_expr.value)
            elif (
                type(func_expr) is cst.Attribute
                and type(func_expr.value) is cst.Name
                and func_expr.value.value == "self"
            ):
                func.self_calls.add(func_expr.attr.value)
        d = dotted(func_expr)
        if func is not None and d is not None and "." in d and not d.startswith("self."):
            func.attr_calls.add(d)
        if d is not None and d.rsplit(".", 1)[-1] in _INTERESTING_CALL_TAILS:
            idx.call_sites.append(CallSite(node, d, top))
    elif type(node) is cst.Decorator:
        expr = node.decorator
        call = expr if isinstance(expr, cst.Call) else None
        d = dotted(call.func if call else expr)
        if d is not None and d.rsplit(".", 1)[-1] in _INTERESTING_CALL_TAILS and call:
            idx.call_sites.append(CallSite(call, d, top))


# --------------------------------------------------------------------------- export calls
