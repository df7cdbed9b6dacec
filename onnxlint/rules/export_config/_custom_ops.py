"""Custom operators a file defines, registers fake kernels for, and calls from `forward`.

Read from the file model's indexes (call sites, decorators, the module body), never by
walking every block: OLX503/OLX504 are file-scoped and run on each check.

- definitions: `@torch.library.custom_op("ns::name")` functions, `x = custom_op("ns::name",
  fn)`, `torch.library.define("ns::name", schema)`, `lib.define("name(...) -> ...")` on a
  module-level `lib = torch.library.Library("ns", ...)`;
- fake kernels: `@op.register_fake`, `op.register_fake(fn)`, `torch.library.register_fake(
  "ns::name" | torch.ops.ns.name | op)`, `impl_abstract`, a `Meta` or
  `CompositeImplicitAutograd` kernel (`lib.impl("name", fn, "Meta")`);
- uses: calls of a defined op's Python name and `torch.ops.<ns>.<name>` references in code
  reachable from a module's `forward` (namespaces of torch itself are not custom ops).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import libcst as cst

from onnxlint.rules.base import Context
from onnxlint.rules.exporter_api.api_table import BUILTIN_OP_NAMESPACES
from onnxlint.semantic.calls import positional_args
from onnxlint.semantic.index import FunctionInfo
from onnxlint.semantic.model import SemanticModel
from onnxlint.source.walker import dotted, iter_descendants

_FAKE_KEYS = ("Meta", "CompositeImplicitAutograd")
_FAKE_DECORATOR = re.compile(r"^[ \t]*@[ \t]*([\w.]+)\.register_fake\b", re.M)


@dataclass
class CustomOp:
    qual: str | None  # "ns::name" (None when the name is not a literal)
    py_name: str | None  # the Python name bound to the CustomOpDef, if any
    node: cst.CSTNode  # the decorator or call that defines it (where findings go)

    @property
    def label(self) -> str:
        return self.qual or self.py_name or "?"

    @property
    def ops_expr(self) -> str | None:
        """`torch.ops.ns.name.default`, the translation-table key for this op."""
        if self.qual is None or "::" not in self.qual:
            return None
        ns, name = self.qual.split("::", 1)
        return f"torch.ops.{ns}.{name}.default"


@dataclass
class CustomOps:
    defined: list[CustomOp] = field(default_factory=list)
    fake_quals: set[str] = field(default_factory=set)
    fake_names: set[str] = field(default_factory=set)
    fake_unknown: bool = False  # a registration we could not attribute: assume it covers all

    def has_fake(self, op: CustomOp) -> bool:
        return (
            self.fake_unknown
            or (op.qual is not None and op.qual in self.fake_quals)
            or (op.py_name is not None and op.py_name in self.fake_names)
        )

    def by_name(self, name: str) -> CustomOp | None:
        for op in self.defined:
            if op.py_name == name:
                return op
        return None


def _memo(ctx: Context) -> dict[object, object]:
    memo = getattr(ctx.semantic, "memo", None)
    if isinstance(memo, dict):
        return memo
    fallback: dict[object, object] = ctx.__dict__.setdefault("_olx5_memo", {})
    return fallback


def _str(expr: cst.BaseExpression | None) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def ops_qual(model: SemanticModel, expr: cst.BaseExpression) -> str | None:
    """`torch.ops.ns.name[.overload]` -> "ns::name"."""
    q = model.qualname(expr)
    if q is None or not q.startswith("torch.ops."):
        return None
    parts = q.split(".")
    if len(parts) < 4:
        return None
    return f"{parts[2]}::{parts[3]}"


def _libraries(model: SemanticModel) -> dict[str, str]:
    """Module-level `lib = torch.library.Library("ns", ...)`: {"lib": "ns"}."""
    out: dict[str, str] = {}
    for stmt in model.module_body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and isinstance(small.value, cst.Call)
                and model.qualname(small.value.func) == "torch.library.Library"
            ):
                pos = positional_args(small.value)
                ns = _str(pos[0].value) if pos else None
                for t in small.targets:
                    if ns is not None and isinstance(t.target, cst.Name):
                        out[t.target.value] = ns
    return out


def _first_arg(call: cst.Call, keyword: str) -> cst.BaseExpression | None:
    pos = positional_args(call)
    if pos:
        return pos[0].value
    for a in call.args:
        if a.keyword is not None and a.keyword.value == keyword:
            return a.value
    return None


def custom_ops(ctx: Context) -> CustomOps:
    memo = _memo(ctx)
    found = memo.get("olx5-custom-ops")
    if isinstance(found, CustomOps):
        return found
    result = _collect(ctx.semantic, ctx.text)
    memo["olx5-custom-ops"] = result
    return result


def _collect(model: SemanticModel, text: str) -> CustomOps:
    out = CustomOps()
    libs = _libraries(model)
    if "impl_abstract" in text:  # not in the indexed call tails: be conservative
        out.fake_unknown = True
    # `@op.register_fake` decorators: read from the text, since the decorated functions
    # are usually all named `_` (the model's function table keeps only one of them).
    out.fake_names.update(_FAKE_DECORATOR.findall(text))
    # Decorated module-level functions: definitions and `@op.register_fake`.
    for f in model.functions.values():
        for dec in f.node.decorators:
            expr = dec.decorator
            call = expr if isinstance(expr, cst.Call) else None
            target = call.func if call is not None else expr
            q = model.qualname(target)
            if q == "torch.library.custom_op" and call is not None:
                out.defined.append(CustomOp(_str(_first_arg(call, "name")), f.name, dec))
    # `op = torch.library.custom_op("ns::name", fn, ...)` at module level.
    for stmt in model.module_body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.Assign)
                and isinstance(small.value, cst.Call)
                and model.qualname(small.value.func) == "torch.library.custom_op"
                and len(positional_args(small.value)) >= 2
            ):
                for t in small.targets:
                    if isinstance(t.target, cst.Name):
                        qual = _str(_first_arg(small.value, "name"))
                        out.defined.append(CustomOp(qual, t.target.value, small.value))
    for site in model.call_sites:
        call, d = site.node, site.dotted
        tail = d.rsplit(".", 1)[-1]
        q = model.qualname(call.func)
        if tail == "define":
            if q == "torch.library.define":
                out.defined.append(CustomOp(_str(_first_arg(call, "qualname")), None, call))
            elif d.count(".") == 1 and d.split(".")[0] in libs:
                schema = _str(_first_arg(call, "schema"))
                if schema:
                    name = schema.split("(", 1)[0].split(".", 1)[0].strip()
                    out.defined.append(CustomOp(f"{libs[d.split('.')[0]]}::{name}", None, call))
        elif tail == "register_fake":
            if q == "torch.library.register_fake":
                first = _first_arg(call, "op")
                qual = _str(first) if first is not None else None
                if qual is None and first is not None:
                    qual = ops_qual(model, first)
                if qual is not None:
                    out.fake_quals.add(qual.split(".", 1)[0])
                elif isinstance(first, cst.Name):
                    out.fake_names.add(first.value)
                else:
                    out.fake_unknown = True
            elif isinstance(call.func, cst.Attribute):
                base = dotted(call.func.value)
                if base is not None:
                    out.fake_names.add(base)
                else:
                    out.fake_unknown = True
        elif tail == "impl":
            strings = [s for a in call.args if (s := _str(a.value)) is not None]
            if not any(k in strings for k in _FAKE_KEYS):
                continue
            names = [s for s in strings if s not in _FAKE_KEYS]
            if not names:
                out.fake_unknown = True
                continue
            name = names[0].split(".", 1)[0]
            if "::" in name:
                out.fake_quals.add(name)
            else:
                lib = None
                if isinstance(call.func, cst.Attribute):
                    lib = libs.get(dotted(call.func.value) or "")
                pos = positional_args(call)
                if lib is None and pos and isinstance(pos[0].value, cst.Name):
                    lib = libs.get(pos[0].value.value)
                if lib is None:
                    out.fake_unknown = True
                else:
                    out.fake_quals.add(f"{lib}::{name}")
    return out


# --------------------------------------------------------------------------- uses in forward


@dataclass(frozen=True)
class OpUse:
    qual: str | None
    py_name: str | None
    node: cst.CSTNode

    @property
    def label(self) -> str:
        return self.qual or self.py_name or "?"


def _function_infos(model: SemanticModel) -> dict[tuple[str | None, str], FunctionInfo]:
    out: dict[tuple[str | None, str], FunctionInfo] = {}
    for f in model.functions.values():
        out[f.key] = f
    for c in model.classes.values():
        for m in c.methods.values():
            out[m.key] = m
    return out


def reachable_from(model: SemanticModel, class_name: str) -> set[tuple[str | None, str]]:
    """Functions that run when `class_name`'s forward runs (through submodules of this file
    used as `self.x(...)` too coarse to follow: every module class of the file counts)."""
    start = model.find_method(class_name, "forward")
    if start is None:
        return set()
    # Submodules are attributes set in __init__: following them needs types we do not have,
    # so the classes the model's __init__ builds are added as roots.
    roots = [start]
    init = model.find_method(class_name, "__init__")
    if init is not None:
        for n in iter_descendants(init.node):
            if isinstance(n, cst.Call):
                d = dotted(n.func)
                if d in model.classes and model.classes[d].is_module:
                    fwd = model.find_method(d, "forward")
                    if fwd is not None:
                        roots.append(fwd)
    return model.reachable_from(roots, into_module_classes=True)


# A use is a `torch.ops.<ns>.<op>` attribute (the file's text names `ops`) or a call of an
# op this file defines (`custom_op`, `Library.define`, `torch.library.define`).
_USE_WORDS = ("ops", "custom_op", "define")


def op_uses(ctx: Context, keys: set[tuple[str | None, str]] | None = None) -> list[OpUse]:
    """Custom-op uses in the given functions (default: all forward-reachable code)."""
    if not any(word in ctx.text for word in _USE_WORDS):
        return []  # no `torch.ops.` attribute and no op defined here: nothing to walk
    model = ctx.semantic
    ops = custom_ops(ctx)
    memo = _memo(ctx)
    infos = _function_infos(model)
    out: list[OpUse] = []
    for key in keys if keys is not None else model.reachable:
        info = infos.get(key)
        if info is None:
            continue
        mkey = ("olx5-op-uses", id(info.node))
        uses = memo.get(mkey)
        if not isinstance(uses, list):
            uses = _uses_in(model, ops, info)
            memo[mkey] = uses
        out.extend(uses)
    return out


def _uses_in(model: SemanticModel, ops: CustomOps, info: FunctionInfo) -> list[OpUse]:
    uses: list[OpUse] = []
    for n in iter_descendants(info.node.body):
        if isinstance(n, cst.Attribute):
            d = dotted(n)
            if d is None:
                continue
            q = model.resolve(d)
            if q is None or not q.startswith("torch.ops."):
                continue
            parts = q.split(".")
            if len(parts) == 4 and parts[2] not in BUILTIN_OP_NAMESPACES:
                uses.append(OpUse(f"{parts[2]}::{parts[3]}", None, n))
        elif isinstance(n, cst.Call) and isinstance(n.func, cst.Name):
            op = ops.by_name(n.func.value)
            if op is not None:
                uses.append(OpUse(op.qual, op.py_name, n))
    return uses
