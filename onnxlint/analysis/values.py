"""Configuration values an export call reads from elsewhere, never running anything.

`opset_version=args.opset` where `args = ExportSettings()` and the dataclass says
`opset: int = 11` in another module; `cfg.export.opset` of a module-level
`SimpleNamespace`/dict imported from a config module; `Settings.OPSET`; `CFG["opset"]`;
`args.opset` of `parser.parse_args()` with `add_argument("--opset", default=11)`.

`config_value(view, expr, function)` follows the object an attribute or subscript reads
(assignments in the function or at module level, imports through the project), then the
attribute: a keyword of the constructor call (`ExportSettings(opset=17)`), a class-level
default (`opset: int = 11`, `field(default=11)`), a key of a dict literal, an argparse
default. The answer is the value's expression, the file it is in, and the chain of links
that leads there (for the finding's message and related locations). None when unsure: a
value a caller passes, an attribute `__init__` computes, a file that cannot be read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.chains import Chain, Link, analysis_of
from onnxlint.semantic.calls import keyword_arg
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.walker import code_of, dotted, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileAnalysis, FileView

# Calls that build a plain attribute or key container from keywords.
_NAMESPACES = frozenset(
    {
        "types.SimpleNamespace",
        "argparse.Namespace",
        "builtins.dict",
        "easydict.EasyDict",
        "addict.Dict",
        "munch.Munch",
        "attrdict.AttrDict",
        "ml_collections.ConfigDict",
        "omegaconf.OmegaConf.create",
    }
)
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Found:
    """A value read from elsewhere: its expression, the file holding it, how it got there."""

    value: cst.BaseExpression
    view: FileAnalysis
    chain: Chain


def config_value(
    view: FileView, expr: cst.BaseExpression, function: FunctionInfo | None
) -> Found | None:
    """The value `expr` (an attribute or subscript: `args.opset`, `cfg["opset"]`) reads,
    when it can be told from the project's text; see the module docstring."""
    if not isinstance(expr, (cst.Attribute, cst.Subscript)):
        return None
    found = _Values(analysis_of(view)).value(analysis_of(view), expr, function, 0)
    return _literal(found) if found is not None else None


class _Values:
    def __init__(self, start: FileAnalysis) -> None:
        self.start = start

    def value(
        self,
        view: FileAnalysis,
        expr: cst.BaseExpression,
        function: FunctionInfo | None,
        depth: int,
    ) -> Found | None:
        """The expression `expr` evaluates to: itself for a literal, else followed."""
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Name):
            return self._name(view, expr, function, depth)
        if isinstance(expr, cst.Attribute):
            found = self._member(view, expr.value, expr.attr.value, function, depth, attr=True)
        elif isinstance(expr, cst.Subscript):
            key = _subscript_key(expr)
            if key is None:
                return None
            found = self._member(view, expr.value, key, function, depth, attr=False)
        else:
            return Found(expr, view, ())
        if found is None or not isinstance(found.value, (cst.Name, cst.Attribute, cst.Subscript)):
            return found
        if isinstance(found.value, cst.Name) and found.value.value in ("True", "False", "None"):
            return found
        inner = self.value(found.view, found.value, None, depth + 1)  # `opset=OPSET`
        return Found(inner.value, inner.view, (*found.chain, *inner.chain)) if inner else None

    def _name(
        self, view: FileAnalysis, name: cst.Name, function: FunctionInfo | None, depth: int
    ) -> Found | None:
        if function is not None and _is_param(function, name.value):
            return None  # the caller's value
        values = _assigned(view, name.value, function)
        if len(values) == 1:
            inner = self.value(
                view, values[0], function if _local(view, name, function) else None, depth + 1
            )
            return inner
        if values:
            return None
        q = view.semantic.resolve(name.value)
        project = view.project
        if q is None or project is None or "." not in q or q.startswith(("torch.", "builtins.")):
            return None
        found = project.constant_at(view.path, q)
        if found is None:
            return None
        other, value = found
        return self.value(other, value, None, depth + 1)

    def _member(
        self,
        view: FileAnalysis,
        owner: cst.BaseExpression,
        member: str,
        function: FunctionInfo | None,
        depth: int,
        attr: bool,
    ) -> Found | None:
        # `Settings.OPSET`: a class attribute of a class of the project.
        cls = _class_of(view, owner) if attr else None
        if cls is not None:
            home, info = cls
            return _class_default(home, info, member)
        obj = self.value(view, owner, function, depth + 1)
        if obj is None:
            return None
        value = obj.value
        if isinstance(value, cst.Dict):
            return _dict_key(obj, member)
        if not isinstance(value, cst.Call):
            return None
        q = obj.view.semantic.qualname(value.func) or ""
        if q in _NAMESPACES:
            if value.args and value.args[0].keyword is None:
                first = value.args[0].value
                if isinstance(first, cst.Dict):  # `EasyDict({"opset": 11})`
                    return _dict_key(Found(first, obj.view, obj.chain), member)
                return None
            kw = keyword_arg(value, member)
            if kw is None:
                return None
            link = Link(f"`{member}` {{at}} is set to `{code_of(kw.value)}`", obj.view, kw)
            return Found(kw.value, obj.view, (link,))
        if isinstance(value.func, cst.Attribute) and value.func.attr.value == "parse_args":
            if not attr:
                return None
            return _argparse_default(obj.view, member)
        made = _class_of(obj.view, value.func)
        if made is None or not attr:
            return None
        home, info = made
        kw = keyword_arg(value, member)
        if kw is not None:
            link = Link(f"`{member}` {{at}} is set to `{code_of(kw.value)}`", obj.view, kw)
            return Found(kw.value, obj.view, (link,))
        if any(a.keyword is None for a in value.args):
            return None  # positional arguments: which field they fill is not followed
        found = _class_default(home, info, member)
        if found is None:
            return None
        return found


def _literal(found: Found) -> Found | None:
    """`found` when its value is a literal (a value the constructor got from elsewhere
    is not followed further)."""
    if isinstance(found.value, (cst.Integer, cst.Float, cst.SimpleString, cst.Name)):
        if isinstance(found.value, cst.Name) and found.value.value not in ("True", "False", "None"):
            return None
        return found
    return None


def _subscript_key(expr: cst.Subscript) -> str | None:
    if len(expr.slice) != 1:
        return None
    index = expr.slice[0].slice
    if not isinstance(index, cst.Index) or not isinstance(index.value, cst.SimpleString):
        return None
    key = index.value.evaluated_value
    return key if isinstance(key, str) else None


def _dict_key(obj: Found, key: str) -> Found | None:
    assert isinstance(obj.value, cst.Dict)
    for el in obj.value.elements:
        if not isinstance(el, cst.DictElement):
            return None  # `**other`: the key may come from there
        if isinstance(el.key, cst.SimpleString) and el.key.evaluated_value == key:
            link = Link(f"`{key!r}` {{at}} is set to `{code_of(el.value)}`", obj.view, el)
            return Found(el.value, obj.view, (link,))
    return None


def _is_param(function: FunctionInfo, name: str) -> bool:
    p = function.node.params
    return any(x.name.value == name for x in (*p.posonly_params, *p.params, *p.kwonly_params))


def _local(view: FileAnalysis, name: cst.Name, function: FunctionInfo | None) -> bool:
    return function is not None and bool(_assignments_in(function.node.body, name.value))


def _assigned(
    view: FileAnalysis, name: str, function: FunctionInfo | None
) -> list[cst.BaseExpression]:
    """The values `name` is assigned in `function` (else at module level)."""
    if function is not None:
        found = _assignments_in(function.node.body, name)
        if found:
            return found
    out: list[cst.BaseExpression] = []
    for stmt in view.semantic.module_body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign) and small.value is not None:
                    targets = [small.target]
                else:
                    continue
                value = small.value
                if value is not None and any(
                    isinstance(t, cst.Name) and t.value == name for t in targets
                ):
                    out.append(value)
    return out


def _assignments_in(body: cst.CSTNode, name: str) -> list[cst.BaseExpression]:
    out: list[cst.BaseExpression] = []
    for n in iter_descendants(body):
        if isinstance(n, cst.Assign):
            for t in n.targets:
                if isinstance(t.target, cst.Name) and t.target.value == name:
                    out.append(n.value)
                elif isinstance(t.target, (cst.Tuple, cst.List)) and any(
                    dotted(e.value) == name for e in t.target.elements
                ):
                    return [n.value, n.value]  # unpacked: not followed
        elif isinstance(n, cst.AnnAssign) and n.value is not None:
            if isinstance(n.target, cst.Name) and n.target.value == name:
                out.append(n.value)
        elif isinstance(n, (cst.For, cst.AugAssign)):
            target = n.target
            if dotted(target) == name:
                return [n.target, n.target]  # rebound in a loop or in place: not one value
    return out


def _class_of(
    view: FileAnalysis, expr: cst.BaseExpression
) -> tuple[FileAnalysis, ClassInfo] | None:
    """The project class `expr` names (of `view`'s file, or imported from the project)."""
    d = dotted(expr)
    if d is None:
        return None
    if d in view.semantic.classes:
        return view, view.semantic.classes[d]
    q = view.semantic.resolve(d)
    project = view.project
    if q is None or project is None or "." not in q or q.startswith(("torch.", "builtins.")):
        return None
    return project.class_at(view.path, q)


def _class_default(view: FileAnalysis, info: ClassInfo, attr: str) -> Found | None:
    """A class-level default of `attr` (`opset: int = 11`, `OPSET = 11`, `opset: int =
    field(default=11)`), unless `__init__` assigns `self.attr` from elsewhere."""
    init = info.methods.get("__init__")
    if init is not None:
        for node in iter_descendants(init.node.body):
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                targets = node.targets if isinstance(node, cst.Assign) else [node]
                for t in targets:
                    if dotted(t.target) == f"self.{attr}":
                        return None
    body = info.node.body
    stmts: Sequence[cst.BaseStatement] = body.body if isinstance(body, cst.IndentedBlock) else ()
    for stmt in stmts:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            value: cst.BaseExpression | None = None
            if isinstance(small, cst.AnnAssign):
                names = [small.target]
            elif isinstance(small, cst.Assign):
                names = [t.target for t in small.targets]
            else:
                continue
            if not any(dotted(n) == attr for n in names):
                continue
            value = small.value
            if isinstance(value, cst.Call) and (dotted(value.func) or "").endswith("field"):
                kw = keyword_arg(value, "default")
                value = kw.value if kw is not None else None
            if value is None:
                return None
            text = f"`{info.name}.{attr}` {{at}} defaults to `{code_of(value)}`"
            return Found(value, view, (Link(text, view, small),))
    return None


def _argparse_default(view: FileAnalysis, attr: str) -> Found | None:
    """The `default=` of the argparse option whose destination is `attr` in the file
    (`add_argument("--opset", type=int, default=11)`); None when several define it."""
    found: list[tuple[cst.Call, cst.BaseExpression]] = []
    for stmt in view.semantic.module_body:
        if "add_argument" not in view.text:
            break
        for node in iter_descendants(stmt):
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                continue
            if node.func.attr.value != "add_argument":
                continue
            if _dest(node) != attr:
                continue
            kw = keyword_arg(node, "default")
            if kw is None:
                return None
            found.append((node, kw.value))
    if len(found) != 1:
        return None
    call, value = found[0]
    flag = call.args[0].value if call.args else call
    option = code_of(flag).strip(chr(34) + chr(39))
    text = f"the `{option}` option {{at}} defaults to `{code_of(value)}`"
    return Found(value, view, (Link(text, view, call),))


def _dest(call: cst.Call) -> str | None:
    """The attribute an `add_argument(...)` call stores to."""
    kw = keyword_arg(call, "dest")
    if kw is not None:
        v = kw.value
        return (
            v.evaluated_value
            if isinstance(v, cst.SimpleString) and isinstance(v.evaluated_value, str)
            else None
        )
    names = [
        a.value.evaluated_value
        for a in call.args
        if a.keyword is None
        and isinstance(a.value, cst.SimpleString)
        and isinstance(a.value.evaluated_value, str)
    ]
    long = [n for n in names if n.startswith("--")]
    name = long[0] if long else (names[0] if names else None)
    if name is None:
        return None
    return name.lstrip("-").replace("-", "_")
