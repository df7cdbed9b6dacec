"""What the rules know about a file beyond the syntax: imports, modules, reachability, kinds.

Built once per check from small per-block indexes (cached with each parsed block), so an
edit inside one method re-indexes one block. The model answers the questions every rule
family asks:

- `qualname(expr)`: the name an expression resolves to through the file's imports
  (`tox.export` -> `torch.onnx.export`), never by spelling alone;
- which classes are `nn.Module` subclasses (also through local subclasses of subclasses);
- which functions run when a module's `forward` runs (methods reached through `self.m()`,
  module-level functions called from them), not through calls in the parts of a function
  an export never runs (`FunctionInfo.live`, onnxlint.branches);
- which export calls the file makes, and through which exporter (`export_calls`);
- a cheap, flow-insensitive guess of what kind of value an expression holds inside a
  function (`kinds`): a tensor, a shape, a Python number taken from a tensor, ...
"""

from __future__ import annotations

import builtins
import enum
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from onnxlint.branches import (
    DEPLOY_FLAG,
    EXPORT_GUARDS,
    TRAINING_FLAGS,
    iter_live,
    optional_targets,
)
from onnxlint.frameworks import TORCH_MODULE_BASES, base_verdict, imports_other_framework
from onnxlint.source.blocks import Block
from onnxlint.source.walker import dotted as dotted  # re-exported: most rules import it from here
from onnxlint.source.walker import iter_children, iter_descendants

_BUILTINS = frozenset(dir(builtins))


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
        parts an export never runs (`onnxlint.branches`: `if self.training:`, `if labels
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
    is_module: bool = False  # filled in by FileModel
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
            _index_node(node, idx, target, top)
        return
    # Any other statement: walk it (module level or class body level).
    _index_node(stmt, idx, func, top)
    for node in iter_descendants(stmt, leaves=False):
        if type(node) in _DEF_TYPES:
            continue  # defs nested in if/try at module level: handled below
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
_DEF_TYPES = frozenset({cst.FunctionDef, cst.ClassDef})


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


class ExportKind(str, enum.Enum):
    """Which exporter a call goes through: it decides how findings are rated."""

    ONNX_DYNAMO = "onnx-dynamo"  # torch.onnx.export (dynamo=True, the default since 2.9)
    ONNX_TORCHSCRIPT = "onnx-torchscript"  # torch.onnx.export(..., dynamo=False)
    ONNX_DYNAMO_EXPORT = "onnx-dynamo-export"  # torch.onnx.dynamo_export (removed in 2.9)
    TORCH_EXPORT = "torch-export"  # torch.export.export
    JIT_TRACE = "jit-trace"  # torch.jit.trace / trace_module
    JIT_SCRIPT = "jit-script"  # torch.jit.script

    @property
    def is_torchscript(self) -> bool:
        return self in (ExportKind.ONNX_TORCHSCRIPT, ExportKind.JIT_TRACE, ExportKind.JIT_SCRIPT)


_EXPORT_QUALNAMES = {
    "torch.onnx.export": ExportKind.ONNX_DYNAMO,
    "torch.onnx.utils.export": ExportKind.ONNX_TORCHSCRIPT,
    "torch.onnx._export": ExportKind.ONNX_TORCHSCRIPT,  # removed (OLX409); was TorchScript
    "torch.onnx.dynamo_export": ExportKind.ONNX_DYNAMO_EXPORT,
    "torch.export.export": ExportKind.TORCH_EXPORT,
    "torch.export.export_for_training": ExportKind.TORCH_EXPORT,
    "torch.export.draft_export": ExportKind.TORCH_EXPORT,
    "torch.jit.trace": ExportKind.JIT_TRACE,
    "torch.jit.trace_module": ExportKind.JIT_TRACE,
    "torch.jit.script": ExportKind.JIT_SCRIPT,
}


def keyword_arg(call: cst.Call, name: str) -> cst.Arg | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg
    return None


def positional_args(call: cst.Call) -> list[cst.Arg]:
    return [a for a in call.args if a.keyword is None and not a.star]


def literal_int(expr: cst.BaseExpression) -> int | None:
    """The value of an integer literal, also negative (`-1`), else None."""
    if isinstance(expr, cst.Integer):
        return int(expr.value, 0)
    if (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, cst.Integer)
    ):
        return -int(expr.expression.value, 0)
    return None


def strip_method_calls(expr: cst.BaseExpression, methods: Collection[str]) -> cst.BaseExpression:
    """`expr` without trailing calls of `methods`: `torch.zeros(2).to(dev).float()` with
    {"to", "float"} gives `torch.zeros(2)`."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in methods
    ):
        expr = expr.func.value
    return expr


def literal_bool(expr: cst.BaseExpression) -> bool | None:
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return expr.value == "True"
    return None


@dataclass
class ExportCall:
    """A call that exports or traces a model."""

    node: cst.Call
    qualname: str
    kind: ExportKind
    statement: cst.CSTNode | None = None  # the top-level statement that holds the call

    def arg(self, name: str, position: int | None = None) -> cst.Arg | None:
        found = keyword_arg(self.node, name)
        if found is None and position is not None:
            pos = positional_args(self.node)
            if position < len(pos):
                found = pos[position]
        return found

    @property
    def model_expr(self) -> cst.BaseExpression | None:
        arg = self.arg("model", 0) or self.arg("mod", 0) or self.arg("func", 0)
        return arg.value if arg is not None else None


def classify_export(call: cst.Call, qualname: str) -> ExportKind | None:
    kind = _EXPORT_QUALNAMES.get(qualname)
    if kind is ExportKind.ONNX_DYNAMO:
        dyn = keyword_arg(call, "dynamo")
        if dyn is not None and literal_bool(dyn.value) is False:
            return ExportKind.ONNX_TORCHSCRIPT
    return kind


# --------------------------------------------------------------------------- file model


@dataclass
class FileModel:
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
    # Per-check memo for file-level analyses (e.g. `onnxlint.exportflow`); never cached.
    memo: dict[object, object] = field(default_factory=dict)
    # Whether an imported base class (qualified name) is a torch module, as the project
    # model resolves it across files (None: unknown). Set by the engine.
    resolve_base: Callable[[str], bool | None] | None = None
    # An export in another file of the project exports a class of this file with dynamic
    # dims (set by the engine from the project model).
    exported_dynamic_elsewhere: bool = False
    # What an imported project function returns ("tensor", "other", None: unknown), as the
    # project model reads it from module summaries. Set by the engine.
    imported_return_kind: Callable[[str], str | None] | None = None

    @classmethod
    def build(
        cls,
        indexes: Iterable[BlockIndex],
        module_body: list[cst.BaseStatement],
        default_exporter: str = "auto",
        resolve_base: Callable[[str], bool | None] | None = None,
    ) -> FileModel:
        imports: dict[str, str] = {}
        classes: dict[str, ClassInfo] = {}
        functions: dict[str, FunctionInfo] = {}
        call_sites: list[CallSite] = []
        assigned: set[str] = set()
        for idx in indexes:
            for bound, full in idx.imports:
                imports[bound] = full
            for c in idx.classes:
                classes[c.name] = c
            for f in idx.functions:
                functions[f.name] = f
            call_sites.extend(idx.call_sites)
            assigned |= idx.assigned_names
        model = cls(imports, classes, functions, call_sites, assigned, module_body=module_body)
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
                if arg is not None and not _is_none(arg.value):
                    return True
        return False

    def export_call_for(self, call: cst.Call) -> ExportCall | None:
        for e in self.export_calls:
            if e.node is call:
                return e
        return None


# --------------------------------------------------------------------------- value kinds


class Kind(str, enum.Enum):
    """What a value is, as far as a cheap local guess can tell."""

    TENSOR = "tensor"
    SHAPE = "shape"  # torch.Size / x.shape
    SIZE = "size"  # one dimension: x.shape[0], x.size(1) (a SymInt under export)
    DATA = "data"  # a Python number/list taken out of a tensor (.item(), .tolist())
    NDARRAY = "ndarray"
    BOOL = "bool"
    NONE = "none"
    OTHER = "other"  # known not to be a tensor
    UNKNOWN = "unknown"


# torch functions that do not return tensors.
_TORCH_NON_TENSOR = {
    "torch.is_tensor": Kind.BOOL,
    "torch.is_floating_point": Kind.BOOL,
    "torch.is_complex": Kind.BOOL,
    "torch.is_grad_enabled": Kind.BOOL,
    "torch.is_inference_mode_enabled": Kind.BOOL,
    "torch.numel": Kind.SIZE,
    "torch.Size": Kind.SHAPE,
    "torch.device": Kind.OTHER,
    "torch.dtype": Kind.OTHER,
    "torch.finfo": Kind.OTHER,
    "torch.iinfo": Kind.OTHER,
    "torch.get_default_dtype": Kind.OTHER,
    "torch.no_grad": Kind.OTHER,
    "torch.enable_grad": Kind.OTHER,
    "torch.inference_mode": Kind.OTHER,
    "torch.autocast": Kind.OTHER,
    "torch.equal": Kind.DATA,
    "torch.broadcast_shapes": Kind.SHAPE,
}
_TORCH_NON_TENSOR_PREFIXES = (
    "torch.jit.",
    "torch.onnx.",
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.compiler.",
    "torch._dynamo.",
    "torch.export.",
    "torch.library.",
    "torch.utils.",
    "torch.fx.",
    "torch.nn.init.",
    "torch.nn.utils.",
    "torch.autograd.",
    "torch.testing.",
    "torch.overrides.",
    "torch.cond",
    "torch._check",
)
_TORCH_TENSOR_PREFIXES = (
    "torch.nn.functional.",
    "torch.linalg.",
    "torch.fft.",
    "torch.special.",
    "torch.ops.",
)
# Methods that only tensors have (so the receiver is a tensor and so is the result).
TENSOR_METHODS = frozenset(
    [
        "sum",
        "mean",
        "max",
        "min",
        "abs",
        "norm",
        "any",
        "all",
        "argmax",
        "argmin",
        "std",
        "var",
        "prod",
        "float",
        "half",
        "double",
        "long",
        "bool",
        "int",
        "view",
        "reshape",
        "permute",
        "transpose",
        "contiguous",
        "squeeze",
        "unsqueeze",
        "matmul",
        "softmax",
        "log_softmax",
        "sigmoid",
        "tanh",
        "relu",
        "exp",
        "log",
        "sqrt",
        "rsqrt",
        "pow",
        "clamp",
        "clamp_min",
        "clamp_max",
        "clip",
        "masked_fill",
        "masked_fill_",
        "eq",
        "ne",
        "gt",
        "lt",
        "ge",
        "le",
        "nonzero",
        "to",
        "type_as",
        "expand",
        "expand_as",
        "repeat",
        "flatten",
        "unflatten",
        "detach",
        "clone",
        "cumsum",
        "cumprod",
        "sort",
        "topk",
        "gather",
        "scatter",
        "index_select",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "new_tensor",
        "narrow",
        "chunk",
        "split",
        "unbind",
        "flip",
        "roll",
        "masked_select",
        "where",
        "triu",
        "tril",
        "bmm",
        "mm",
        "sign",
        "floor",
        "ceil",
        "round",
        "fill_",
        "zero_",
        "add_",
        "mul_",
        "sub_",
        "div_",
        "copy_",
        "masked_scatter_",
        "index_put_",
        "scatter_",
        "add",
        "mul",
        "sub",
        "div",
        "neg",
        "reciprocal",
        "logical_not",
        "logical_and",
        "logical_or",
        "isnan",
        "isinf",
        "isfinite",
        "nan_to_num",
        "cos",
        "sin",
        "amax",
        "amin",
        "logsumexp",
        "square",
        "baddbmm",
        "addmm",
        "einsum",
        "repeat_interleave",
        "t",
    ]
)
_DATA_METHODS = {"item": Kind.DATA, "tolist": Kind.DATA, "numpy": Kind.NDARRAY}
# Methods of dicts, strings and lists that tensors do not have.
_NOT_TENSOR_METHODS = frozenset(
    {
        *("get", "keys", "items", "values", "setdefault", "update", "pop", "popitem"),
        *("append", "extend", "insert", "remove", "count", "index", "copy"),
        *("startswith", "endswith", "lower", "upper", "strip", "format", "join", "replace"),
    }
)
_SIZE_METHODS = frozenset({"dim", "ndimension", "numel", "nelement", "element_size", "ndim"})
_BOOL_METHODS = frozenset({"is_contiguous", "is_floating_point", "is_complex", "equal"})
_TENSOR_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data", "grad"})
# Literals and displays: values that are never tensors.
_OTHER_VALUE_TYPES = frozenset(
    {
        cst.Integer,
        cst.Float,
        cst.Imaginary,
        cst.SimpleString,
        cst.ConcatenatedString,
        cst.FormattedString,
        cst.List,
        cst.Dict,
        cst.Set,
        cst.ListComp,
        cst.DictComp,
        cst.Tuple,
    }
)
_TENSOR_ANNOTATIONS = ("Tensor", "FloatTensor", "LongTensor", "BoolTensor", "HalfTensor")


def annotation_kind(ann: cst.Annotation | None) -> Kind | None:
    """TENSOR for `Tensor`-like annotations (also inside Optional/Union), OTHER for plain
    scalars and containers, None when there is no annotation or it says nothing."""
    if ann is None:
        return None
    code = _plain_dotted(ann.annotation) or cst.Module([]).code_for_node(ann.annotation)
    tensorish = any(
        code.endswith(t) or f"{t}]" in code or f"{t} |" in code for t in _TENSOR_ANNOTATIONS
    )
    containers = ("list", "List", "tuple", "Tuple", "dict", "Dict", "Sequence")
    if tensorish and not code.startswith(containers):
        if re.search(r"\b(int|float)\b", code):
            return Kind.UNKNOWN  # `int | torch.Tensor`: either, callers decide
        return Kind.TENSOR
    return Kind.OTHER


def _plain_dotted(expr: cst.BaseExpression) -> str | None:
    """The code of `a.b.c` written without parentheses or spaces (most annotations:
    `torch.Tensor`), without libcst's code generation; None for anything else."""
    parts: list[str] = []
    node = expr
    while type(node) is cst.Attribute:
        dot = node.dot
        if (
            node.lpar
            or node.rpar
            or not (_no_space(dot.whitespace_before) and _no_space(dot.whitespace_after))
        ):
            return None
        parts.append(node.attr.value)
        node = node.value
    if type(node) is not cst.Name or node.lpar or node.rpar:
        return None
    parts.append(node.value)
    return ".".join(reversed(parts))


def _no_space(ws: cst.BaseParenthesizableWhitespace) -> bool:
    return type(ws) is cst.SimpleWhitespace and ws.value == ""


_LEARN_TYPES = frozenset({cst.Assign, cst.AnnAssign, cst.AugAssign, cst.For})


class Kinds:
    """Flow-insensitive kinds of the local names of one function (or a module body)."""

    def __init__(
        self,
        model: FileModel,
        func: FunctionInfo | None,
        param_kinds: dict[str, Kind] | None = None,
    ) -> None:
        self.model = model
        self.func = func
        self.names: dict[str, Kind] = {}
        if func is not None:
            is_forward = func.name == "forward"
            for p in func.params():
                kind = annotation_kind(p.annotation)
                if kind in (None, Kind.UNKNOWN) and param_kinds:
                    kind = param_kinds.get(p.name.value, kind)  # what every caller passes
                if kind is None:
                    if p.default is not None:
                        kind = Kind.UNKNOWN if _is_none(p.default) else Kind.OTHER
                    else:
                        kind = Kind.TENSOR if is_forward else Kind.UNKNOWN
                self.names[p.name.value] = kind
            if func.node.params.star_arg and isinstance(func.node.params.star_arg, cst.Param):
                self.names[func.node.params.star_arg.name.value] = Kind.OTHER
            if func.node.params.star_kwarg is not None:
                self.names[func.node.params.star_kwarg.name.value] = Kind.OTHER
            self._learn(func.node.body)

    def _assign(self, target: cst.BaseExpression, kind: Kind) -> None:
        if isinstance(target, cst.Name):
            name = target.value
            old = self.names.get(name)
            if old is None or old == kind:
                self.names[name] = kind
            elif {old, kind} <= {Kind.TENSOR, Kind.UNKNOWN}:
                self.names[name] = Kind.TENSOR if kind is Kind.TENSOR else old
            elif old is Kind.NONE:
                self.names[name] = kind
            elif kind is not Kind.NONE:
                self.names[name] = Kind.UNKNOWN
        elif isinstance(target, (cst.Tuple, cst.List)):
            elem = Kind.SIZE if kind is Kind.SHAPE else Kind.UNKNOWN
            for el in target.elements:
                if isinstance(el, cst.Element):
                    self._assign(el.value, elem)

    def _learn(self, body: cst.CSTNode) -> None:
        for node in iter_descendants(body):
            if type(node) not in _LEARN_TYPES:  # cheap skip of most nodes
                continue
            if isinstance(node, cst.Assign):
                value = node.value
                for t in node.targets:
                    target = t.target
                    if (
                        type(target) in (cst.Tuple, cst.List)
                        and type(value) in (cst.Tuple, cst.List)
                        and len(target.elements) == len(value.elements)  # type: ignore[attr-defined]
                    ):
                        # `H, W = x.shape[2], x.shape[3]`: element by element.
                        for te, ve in zip(target.elements, value.elements, strict=True):  # type: ignore[attr-defined]
                            self._assign(te.value, self.of(ve.value))
                    else:
                        self._assign(target, self.of(value))
            elif isinstance(node, cst.AnnAssign) and node.value is not None:
                self._assign(node.target, annotation_kind(node.annotation) or self.of(node.value))
            elif isinstance(node, cst.AugAssign):
                if self.of(node.value) is Kind.TENSOR:
                    self._assign(node.target, Kind.TENSOR)
            elif isinstance(node, cst.For):
                it = self.of(node.iter)
                if isinstance(node.iter, cst.Call) and self.model.qualname(node.iter.func) in (
                    "builtins.range",
                ):
                    self._assign(node.target, Kind.SIZE)
                elif it is Kind.TENSOR:
                    self._assign(node.target, Kind.TENSOR)
                else:
                    self._assign(node.target, Kind.UNKNOWN)

    def of(self, expr: cst.BaseExpression) -> Kind:
        """The kind of value `expr` evaluates to."""
        # Exact types, not isinstance(): libcst's classes are ABCs, whose isinstance() runs
        # Python code, and these are concrete classes (this is called ~400 times a file).
        if type(expr) is cst.Name:
            if expr.value == "None":
                return Kind.NONE
            if expr.value in ("True", "False"):
                return Kind.BOOL
            return self.names.get(expr.value, Kind.UNKNOWN)
        if type(expr) in _OTHER_VALUE_TYPES:
            return Kind.OTHER
        if type(expr) is cst.Attribute:
            base = self.of(expr.value)
            attr = expr.attr.value
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return Kind.BOOL if attr == "training" else Kind.UNKNOWN
            if base is Kind.TENSOR:
                if attr == "shape":
                    return Kind.SHAPE
                if attr in _TENSOR_ATTRS:
                    return Kind.TENSOR
                if attr == "ndim":
                    return Kind.SIZE
                return Kind.OTHER
            return Kind.UNKNOWN
        if type(expr) is cst.Subscript:
            base = self.of(expr.value)
            if base is Kind.TENSOR:
                return Kind.TENSOR
            if base is Kind.SHAPE:
                one = len(expr.slice) == 1 and isinstance(expr.slice[0].slice, cst.Index)
                return Kind.SIZE if one else Kind.SHAPE
            return Kind.UNKNOWN
        if type(expr) is cst.Call:
            return self._call(expr)
        if type(expr) is cst.BinaryOperation:
            left, right = self.of(expr.left), self.of(expr.right)
            if Kind.TENSOR in (left, right):
                return Kind.TENSOR
            if Kind.DATA in (left, right):
                return Kind.DATA
            if Kind.SIZE in (left, right) and {left, right} <= {Kind.SIZE, Kind.OTHER}:
                return Kind.SIZE
            return Kind.UNKNOWN
        if type(expr) is cst.UnaryOperation:
            inner = self.of(expr.expression)
            if isinstance(expr.operator, cst.Not):
                return Kind.BOOL if inner is not Kind.TENSOR else Kind.TENSOR
            return inner
        if type(expr) is cst.Comparison:
            kinds = [self.of(expr.left)] + [self.of(c.comparator) for c in expr.comparisons]
            ops = [c.operator for c in expr.comparisons]
            if all(isinstance(op, (cst.Is, cst.IsNot, cst.In, cst.NotIn)) for op in ops):
                return Kind.BOOL
            if Kind.TENSOR in kinds:
                return Kind.TENSOR
            if Kind.DATA in kinds:
                return Kind.DATA
            return Kind.BOOL
        if type(expr) is cst.BooleanOperation:
            sides = {self.of(expr.left), self.of(expr.right)}
            if Kind.TENSOR in sides:
                return Kind.TENSOR
            return Kind.BOOL if sides <= {Kind.BOOL} else Kind.UNKNOWN
        if type(expr) is cst.IfExp:
            a, b = self.of(expr.body), self.of(expr.orelse)
            return a if a == b else Kind.UNKNOWN
        return Kind.UNKNOWN

    def _call(self, call: cst.Call) -> Kind:
        func = call.func
        callee = self._project_callee(func)
        if callee is not None:
            return return_kind(self.model, callee)
        q = self.model.qualname(func)
        if q is not None and self.model.imported_return_kind is not None:
            imported = imported_return_kind(self.model, q)
            if imported is not None:
                return imported
        if q is not None:
            if q in _TORCH_NON_TENSOR:
                return _TORCH_NON_TENSOR[q]
            if q.startswith("builtins."):
                if q in _CONVERTERS and call.args:
                    inner = self.of(call.args[0].value)
                    if inner in (Kind.TENSOR, Kind.DATA):
                        return Kind.DATA  # `int(t)`, `float(t.sum())`: a value out of a tensor
                return {
                    "builtins.len": Kind.SIZE,
                    "builtins.int": Kind.SIZE,
                    "builtins.float": Kind.OTHER,
                    "builtins.bool": Kind.BOOL,
                    "builtins.isinstance": Kind.BOOL,
                    "builtins.hasattr": Kind.BOOL,
                    "builtins.callable": Kind.BOOL,
                }.get(q, Kind.UNKNOWN)
            if q.startswith(_TORCH_TENSOR_PREFIXES):
                return Kind.TENSOR
            if q.startswith("torch.is_") and q.count(".") == 1:
                return Kind.BOOL  # torch.is_autocast_enabled(), torch.is_nonzero() reads data
            if q.startswith(("torch.get_", "torch.set_", "torch.use_")) and q.count(".") == 1:
                return Kind.OTHER
            if q.startswith(_TORCH_NON_TENSOR_PREFIXES):
                return Kind.OTHER
            if q.startswith("torch.") and q.count(".") == 1 and q[6:7].islower():
                return Kind.TENSOR
            if q.startswith(("numpy.", "math.")):
                return Kind.OTHER
            return Kind.UNKNOWN
        if isinstance(func, cst.Attribute):
            method = func.attr.value
            base = self.of(func.value)
            if base in (Kind.TENSOR, Kind.UNKNOWN):
                if method in _DATA_METHODS:
                    return _DATA_METHODS[method]  # whatever has `.numpy()` gives NumPy
                if method == "size" and (base is Kind.TENSOR or len(call.args) <= 1):
                    return Kind.SIZE if call.args else Kind.SHAPE
                if method in _NOT_TENSOR_METHODS:
                    return Kind.UNKNOWN  # a dict/str/list method: not a tensor after all
                if base is Kind.TENSOR:
                    if method in _SIZE_METHODS:
                        return Kind.SIZE
                    if method in _BOOL_METHODS:
                        return Kind.BOOL
                    return Kind.TENSOR
                if method in TENSOR_METHODS:
                    return Kind.TENSOR
            if base is Kind.SHAPE and method == "numel":
                return Kind.SIZE
            if base is Kind.NDARRAY:
                return Kind.NDARRAY  # `.cumsum(0)`, `.astype(...)`: NumPy in, NumPy out
        return Kind.UNKNOWN

    def _project_callee(self, func: cst.BaseExpression) -> FunctionInfo | None:
        """The function of this file a call runs: `helper(x)`, or `self.method(x)` of
        the enclosing class."""
        if type(func) is cst.Name:
            return self.model.functions.get(func.value)
        if (
            type(func) is cst.Attribute
            and type(func.value) is cst.Name
            and func.value.value == "self"
            and self.func is not None
            and self.func.class_name is not None
        ):
            cls = self.model.classes.get(self.func.class_name)
            return cls.methods.get(func.attr.value) if cls is not None else None
        return None


def return_kind(model: FileModel, func: FunctionInfo) -> Kind:
    """What a function of the file returns: its annotation (`-> torch.Tensor`), else
    the kind every `return` agrees on (UNKNOWN when they differ or none returns)."""
    key = ("return kind", func.class_name, func.name)
    found = model.memo.get(key)
    if not isinstance(found, Kind):
        model.memo[key] = Kind.UNKNOWN  # recursion guard: a recursive helper is unknown
        found = annotation_kind(func.node.returns)
        if found is None:
            inner = Kinds(model, func)
            kinds = {inner.of(r.value) for r in _returns(func.node.body) if r.value is not None}
            found = kinds.pop() if len(kinds) == 1 else Kind.UNKNOWN
        model.memo[key] = found
    used = model.memo.get(RETURN_KINDS_USED)
    if isinstance(used, set):
        used.add((func.class_name, func.name, found))
    return found


_LIBRARY_PREFIXES = ("torch.", "builtins.", "numpy.", "math.", "typing.", "os.", "re.")
_IMPORTED = "<import>"  # the class slot of an imported function in RETURN_KINDS_USED


def imported_return_kind(model: FileModel, qualname: str) -> Kind | None:
    """The kind an imported project function returns, None when unknown."""
    if model.imported_return_kind is None or qualname.startswith(_LIBRARY_PREFIXES):
        return None
    answer = model.imported_return_kind(qualname)
    kind = {"tensor": Kind.TENSOR, "other": Kind.OTHER}.get(answer or "")
    used = model.memo.get(RETURN_KINDS_USED)
    if isinstance(used, set):
        used.add((_IMPORTED, qualname, kind))
    return kind


# model.memo key of the set of (class, function, kind) return kinds a block's check used:
# the block's cached findings stay valid while those functions return the same kinds.
RETURN_KINDS_USED = "return kinds used"


def still_returns(model: FileModel, used: Collection[tuple[str | None, str, Kind | None]]) -> bool:
    """Whether every function in `used` still exists and returns the kind recorded."""
    for cls_name, name, kind in used:
        if cls_name == _IMPORTED:
            if imported_return_kind(model, name) is not kind:
                return False
            continue
        if cls_name is None:
            func = model.functions.get(name)
        else:
            cls = model.classes.get(cls_name)
            func = cls.methods.get(name) if cls is not None else None
        if func is None or return_kind(model, func) is not kind:
            return False
    return True


def _returns(node: cst.CSTNode) -> list[cst.Return]:
    """The `return` statements of a function body (not of nested defs or lambdas)."""
    from onnxlint.source.walker import iter_children

    out: list[cst.Return] = []
    stack = [node]
    while stack:
        for child in iter_children(stack.pop()):
            t = type(child)
            if t is cst.Return:
                out.append(child)  # type: ignore[arg-type]
            elif t not in _NO_RETURN_INSIDE:
                stack.append(child)
    return out


# Nodes the walk for a function's `return`s does not descend into: nested scopes, and
# expressions (no statement hides in them).
_NO_RETURN_INSIDE = frozenset(
    {
        cst.FunctionDef,
        cst.Lambda,
        cst.ClassDef,
        cst.Call,
        cst.Attribute,
        cst.Name,
        cst.Subscript,
        cst.BinaryOperation,
        cst.Comparison,
        cst.SimpleString,
        cst.Integer,
        cst.Float,
        cst.Tuple,
        cst.List,
        cst.Dict,
    }
)


_CONVERTERS = frozenset({"builtins.int", "builtins.float", "builtins.bool"})


def narrowed_kind(
    model: FileModel, ancestors: Sequence[cst.CSTNode], name: cst.Name
) -> Kind | None:
    """The kind an enclosing `if isinstance(name, T):` (or its `else`, or an `elif`
    after it) gives `name`, innermost first; None when no test narrows it."""
    for i in range(len(ancestors) - 1, 0, -1):
        parent, child = ancestors[i - 1], ancestors[i]
        if type(parent) is not cst.If or child is parent.test:
            continue
        tensor = _isinstance_tensor(model, parent.test, name.value)
        if tensor is None:
            continue
        in_body = child is parent.body
        if in_body:
            return Kind.TENSOR if tensor else Kind.OTHER
        if tensor:  # the else/elif of `isinstance(x, torch.Tensor)`
            return Kind.OTHER
    return None


def _isinstance_tensor(model: FileModel, test: cst.BaseExpression, name: str) -> bool | None:
    """For `isinstance(name, T)`: True when T is a tensor type, False when it names only
    other types; None when the test is something else."""
    if not (
        type(test) is cst.Call
        and model.qualname(test.func) == "builtins.isinstance"
        and len(test.args) == 2
        and type(test.args[0].value) is cst.Name
        and test.args[0].value.value == name
    ):
        return None
    types = test.args[1].value
    elems = (
        [e.value for e in types.elements] if type(types) in (cst.Tuple, cst.List) else [types]  # type: ignore[attr-defined]
    )
    names = [model.qualname(e) or dotted(e) or "" for e in elems]
    if any(n.rsplit(".", 1)[-1] in _TENSOR_ANNOTATIONS for n in names):
        return True if len(names) == 1 else None
    return False


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
