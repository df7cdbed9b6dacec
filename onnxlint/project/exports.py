"""Export sites: every place the project exports a model, what it exports and how.

An export site is a `torch.onnx.export` / `torch.onnx.utils.export` / `torch.onnx._export`
/ `torch.export.export` / `torch.jit.trace` / `torch.jit.script` call (or a declared
deep-analysis target). For each: the model class(es) it exports, found through the
file's data flow (`analysis.exported_model`: variables, `Net().eval()`, builder
functions), imported project classes and builder functions, and one level of project
wrapper functions whose parameter goes to the export (`def export(model): torch.onnx
.export(model, ...)` called as `export(Net())`); its exporter path; whether it declares
dynamic dims.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import libcst as cst

from onnxlint.analysis.exported_model import exported_model
from onnxlint.analysis.exporter import effective_kind
from onnxlint.core.config import Config
from onnxlint.project.facts import FileFacts
from onnxlint.project.index import ProjectIndex
from onnxlint.semantic.calls import ExportCall, ExportKind, keyword_arg, positional_args
from onnxlint.semantic.index import ClassInfo, FunctionInfo
from onnxlint.source.positions import node_span
from onnxlint.source.walker import dotted, iter_descendants

ClassRef = tuple[FileFacts, ClassInfo]

_EXPORTER_WORDS = {
    ExportKind.ONNX_DYNAMO: "dynamo exporter",
    ExportKind.ONNX_TORCHSCRIPT: "TorchScript exporter",
    ExportKind.ONNX_DYNAMO_EXPORT: "torch.onnx.dynamo_export",
    ExportKind.TORCH_EXPORT: "torch.export",
    ExportKind.JIT_TRACE: "tracing",
    ExportKind.JIT_SCRIPT: "scripting",
}


@dataclass(frozen=True)
class ExportSite:
    """One export in the project (a plain value: no trees, comparable, picklable)."""

    path: str  # absolute path of the file holding the call
    line: int
    kind: ExportKind
    dynamic: bool  # declares dynamic dims (dynamic_shapes / dynamic_axes)
    dims: str  # the declared dynamic dims, short (`batch, seq`), "" when none or unreadable
    model: str  # the exported class's name
    dim_names: tuple[tuple[int, str], ...] = ()  # (index, name) of the dims it names literally

    def where(self, root: str | None, here: str | None = None) -> str:
        """`tools/export.py:41`, relative to the project root (`line 41` in `here`); in a
        notebook `export.ipynb:cell 5:2` (`cell 5, line 2` in `here`)."""
        line = str(self.line)
        if self.path.endswith(".ipynb"):
            from onnxlint.source.cells import cell_line

            found = cell_line(self.path, self.line)
            if found is not None:
                if here is not None and os.path.abspath(here) == self.path:
                    return f"cell {found[0]}, line {found[1]}"
                line = f"cell {found[0]}:{found[1]}"
        if here is not None and os.path.abspath(here) == self.path:
            return f"line {line}"
        base = root or os.getcwd()
        try:
            rel = os.path.relpath(self.path, base)
        except ValueError:
            rel = self.path
        if rel.startswith(".."):
            rel = self.path
        return f"{rel.replace(os.sep, '/')}:{line}"

    @property
    def exporter(self) -> str:
        return _EXPORTER_WORDS[self.kind]

    @property
    def traced(self) -> bool:
        """Values become constants of the graph (tracing, the TorchScript exporter)."""
        return self.kind in (ExportKind.JIT_TRACE, ExportKind.ONNX_TORCHSCRIPT)


def export_sites(index: ProjectIndex, facts: FileFacts) -> list[tuple[ExportSite, list[ClassRef]]]:
    """The export calls of one file with the classes each exports."""
    out: list[tuple[ExportSite, list[ClassRef]]] = []
    for call in facts.semantic.export_calls:
        classes = _exported_classes(index, facts, call)
        line = call_line(facts, call.node)
        if line is None:
            continue
        kind = effective_kind(facts.analysis, call)
        dims = _dims(call)
        dynamic = dims is not None
        names = sorted({c.name for _, c in classes})
        site = ExportSite(
            facts.path, line, kind, dynamic, dims or "", ", ".join(names), _dim_names(call)
        )
        out.append((site, classes))
    return out


# `# onnxlint: target` on a factory's `def` line or the line above it (see deep.targets).
TARGET_MARKER = re.compile(r"#\s*onnxlint:\s*target\b")


def target_sites(
    index: ProjectIndex, config: Config, marked: list[str]
) -> list[tuple[ExportSite, list[ClassRef]]]:
    """The declared deep-analysis targets as export sites: each factory's `def` line,
    with the classes it returns (`return Net().eval(), (x,)`), the dynamo path, and the
    dynamic dims of the target's `dynamic-shapes`."""
    root = str(config.root) if config.root is not None else None
    found: dict[tuple[str, int], tuple[ExportSite, list[ClassRef]]] = {}
    for raw in config.targets:
        factory = raw.get("factory")
        if not isinstance(factory, str) or ":" not in factory or root is None:
            continue
        module, _, name = factory.rpartition(":")
        if module.endswith(".py"):
            facts = index.facts(os.path.join(root, module))
        else:
            facts = index.module(os.path.join(root, "pyproject.toml"), module)
        func = facts.semantic.functions.get(name) if facts is not None else None
        if facts is None or func is None:
            continue
        shapes = raw.get("dynamic-shapes", raw.get("dynamic_shapes"))
        dims = _target_dims(shapes)
        _add_target(index, facts, func, bool(shapes), dims, found, _target_dim_names(shapes))
    for path in marked:
        facts = index.facts(path)
        if facts is None:
            continue
        lines = facts.analysis.text.splitlines()
        for func in facts.semantic.functions.values():
            line = def_line(facts, func)
            if line is None:
                continue
            around = lines[max(0, line - 2) : line]
            if any(TARGET_MARKER.search(t) for t in around):
                _add_target(index, facts, func, False, "", found)
    return list(found.values())


def _add_target(
    index: ProjectIndex,
    facts: FileFacts,
    func: FunctionInfo,
    dynamic: bool,
    dims: str,
    found: dict[tuple[str, int], tuple[ExportSite, list[ClassRef]]],
    dim_names: tuple[tuple[int, str], ...] = (),
) -> None:
    line = def_line(facts, func)
    if line is None:
        return
    key = (facts.path, line)
    previous = found.get(key)
    if previous is not None and (previous[0].dynamic or not dynamic):
        return  # a marker on a pyproject target: one site, with the declared dims
    classes = returned_classes(index, facts, func, depth=2)
    names = ", ".join(sorted({c.name for _, c in classes}))
    site = ExportSite(facts.path, line, ExportKind.ONNX_DYNAMO, dynamic, dims, names, dim_names)
    found[key] = (site, classes)


def _target_dim_names(shapes: object) -> tuple[tuple[int, str], ...]:
    """(dim index, name) of a target's `dynamic-shapes` (`{ x = { 0 = "batch" } }`)."""
    out: list[tuple[int, str]] = []
    stack = [shapes]
    while stack:
        item = stack.pop(0)
        if isinstance(item, dict):
            for k, v in item.items():
                key = str(k)
                if key.isdigit() and isinstance(v, str):
                    if (int(key), v) not in out:
                        out.append((int(key), v))
                else:
                    stack.append(v)
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return tuple(out)


def _target_dims(shapes: object) -> str:
    out: list[str] = []
    stack = [shapes]
    while stack and len(out) < 4:
        item = stack.pop(0)
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, str) and item not in out:
            out.append(item)
    return ", ".join(out)


def def_line(facts: FileFacts, func: FunctionInfo) -> int | None:
    """The line of a module-level function's `def`."""
    for b in facts.blocks:
        if b.module is not None and any(stmt is func.node for stmt in b.module.body):
            span = node_span(b, func.node.name)
            return span.line if span is not None else None
    return None


def call_line(facts: FileFacts, node: cst.CSTNode) -> int | None:
    """The 1-based line of a call of the file (an export call)."""
    block = facts.block_of(node)
    if block is None:
        return None
    span = node_span(block, node)
    return span.line if span is not None else None


def _dims(call: ExportCall) -> str | None:
    """The dynamic dims a call declares: their names when literal, "" when present but
    unreadable, None when it declares none."""
    for name in ("dynamic_shapes", "dynamic_axes"):
        arg = keyword_arg(call.node, name)
        if arg is None or (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
            continue
        found: list[str] = []
        for node in iter_descendants(arg.value):
            text = None
            if isinstance(node, cst.DictElement) and isinstance(node.key, cst.Integer):
                if isinstance(node.value, cst.SimpleString):
                    text = node.value.value.strip("'\"")
            elif isinstance(node, cst.Call) and node.args:
                d = dotted(node.func) or ""
                first = node.args[0].value
                if d.endswith("Dim") and isinstance(first, cst.SimpleString):
                    text = first.value.strip("'\"")
            if text and text not in found and len(found) < 4:
                found.append(text)
        return ", ".join(found)
    return None


def _dim_names(call: ExportCall) -> tuple[tuple[int, str], ...]:
    """(dim index, name) of each dynamic dim the call names literally (`{0: "batch"}`,
    `{0: Dim("batch")}`), in any of its inputs."""
    out: list[tuple[int, str]] = []
    for name in ("dynamic_shapes", "dynamic_axes"):
        arg = keyword_arg(call.node, name)
        if arg is None:
            continue
        for node in iter_descendants(arg.value):
            if not (isinstance(node, cst.DictElement) and isinstance(node.key, cst.Integer)):
                continue
            value = node.value
            if isinstance(value, cst.Call) and value.args:
                if not (dotted(value.func) or "").endswith("Dim"):
                    continue
                value = value.args[0].value
            if isinstance(value, cst.SimpleString):
                pair = (int(node.key.value, 0), value.value.strip("'\""))
                if pair not in out:
                    out.append(pair)
    return tuple(out)


def _exported_classes(index: ProjectIndex, facts: FileFacts, call: ExportCall) -> list[ClassRef]:
    ref = exported_model(facts.analysis, call)
    if ref is None:
        return []
    if ref.class_info is not None:
        return [(facts, ref.class_info)]
    if ref.imported_class is not None:
        found = index.find_class(facts.path, ref.imported_class)
        return [found] if found is not None else []
    # A builder: `model = build_model(cfg)` with `build_model` local or imported.
    for assign in ref.assignments:
        value = getattr(assign, "value", None)
        if isinstance(value, cst.Call):
            found_classes = called_classes(index, facts, value, depth=2)
            if found_classes:
                return found_classes
    # A derived model: `patched = patch_model(model)`, `m = copy.deepcopy(model)`: the
    # model it is derived from (its first argument that holds a project class).
    for assign in ref.assignments:
        value = getattr(assign, "value", None)
        if isinstance(value, cst.Call):
            for arg in value.args:
                if arg.keyword is None and dotted(arg.value) not in (None, ref.name):
                    derived = _value_classes(index, facts, value, arg.value)
                    if derived:
                        return derived
    # A wrapper: the model is a parameter of the function holding the export call.
    if ref.function is not None and ref.name is not None:
        position = _param_position(ref.function, ref.name)
        if position is not None:
            return _wrapper_callers(index, facts, ref.function.name.value, ref.name, position)
    return []


def called_classes(
    index: ProjectIndex, facts: FileFacts, call: cst.Call, depth: int
) -> list[ClassRef]:
    """The project classes a call builds: `Net(...)`, `models.Net(...)`, or what a
    project builder function returns (`build_head(cfg)`), `depth` builders deep."""
    inner: cst.BaseExpression = call
    while isinstance(inner, cst.Call) and isinstance(inner.func, cst.Attribute):
        if inner.func.attr.value not in ("eval", "to", "cuda", "cpu", "float", "half"):
            break
        inner = inner.func.value
    if not isinstance(inner, cst.Call):
        return []
    name = dotted(inner.func)
    if name is None:
        return []
    model = facts.semantic
    if name in model.classes:
        return [(facts, model.classes[name])]
    if name in model.functions:
        return returned_classes(index, facts, model.functions[name], depth - 1)
    q = model.resolve(name)
    if q is None or q.startswith(("torch.", "builtins.")):
        return []
    found = index.find_class(facts.path, q)
    if found is not None:
        return [found]
    func = index.find_function(facts.path, q)
    if func is not None:
        return returned_classes(index, func[0], func[1], depth - 1)
    return []


def returned_classes(
    index: ProjectIndex, facts: FileFacts, func: FunctionInfo, depth: int
) -> list[ClassRef]:
    """The project classes a builder function returns (`return Net(cfg)`, or a name
    assigned from such a call, or a registry `return MODELS[name](...)` is not followed)."""
    if depth < 0:
        return []
    out: list[ClassRef] = []
    assigned: dict[str, list[cst.Call]] = {}
    for node in iter_descendants(func.node.body):
        if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
            for t in node.targets:
                if isinstance(t.target, cst.Name):
                    assigned.setdefault(t.target.value, []).append(node.value)
    for node in iter_descendants(func.node.body):
        if not isinstance(node, cst.Return) or node.value is None:
            continue
        value = node.value
        calls: list[cst.Call] = []
        if isinstance(value, cst.Call):
            calls.append(value)
            receiver: cst.BaseExpression = value
            while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
                receiver = receiver.func.value
            if isinstance(receiver, cst.Name):
                calls += assigned.get(receiver.value, [])
        elif isinstance(value, cst.Name):
            calls += assigned.get(value.value, [])
        elif isinstance(value, cst.Tuple) and value.elements:
            first = value.elements[0].value  # a factory's `return model, (x,)`
            if isinstance(first, cst.Call):
                calls.append(first)
                receiver = first
                while isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Attribute):
                    receiver = receiver.func.value
                if isinstance(receiver, cst.Name):
                    calls += assigned.get(receiver.value, [])
            elif isinstance(first, cst.Name):
                calls += assigned.get(first.value, [])
        for c in calls:
            for ref in called_classes(index, facts, c, depth):
                if all(ref[1] is not o[1] for o in out):
                    out.append(ref)
    return out


def _param_position(func: cst.FunctionDef, name: str) -> int | None:
    params = [*func.params.posonly_params, *func.params.params]
    for i, p in enumerate(params):
        if p.name.value == name:
            return i
    return None


def _wrapper_callers(
    index: ProjectIndex, facts: FileFacts, func_name: str, param: str, position: int
) -> list[ClassRef]:
    """Classes passed to a project wrapper `func_name(model, ...)` by its callers in the
    files the project model has read (the export scripts and their modules)."""
    out: list[ClassRef] = []
    for other in index.known_facts():
        if func_name not in other.analysis.text:
            continue
        local = other is facts
        for site in _calls_ending(other, func_name):
            q = other.semantic.qualname(site.func)
            target = func_name if local else None
            if not local:
                if q is None or not q.endswith("." + func_name):
                    continue
                found = index.find_function(other.path, q)
                if found is None or found[0] is not facts:
                    continue
                target = func_name
            if target is None:
                continue
            arg = keyword_arg(site, param)
            if arg is None:
                pos = positional_args(site)
                arg = pos[position] if position < len(pos) else None
            if arg is None:
                continue
            for ref in _value_classes(index, other, site, arg.value):
                if all(ref[1] is not o[1] for o in out):
                    out.append(ref)
    return out


def _value_classes(
    index: ProjectIndex, facts: FileFacts, at: cst.Call, value: cst.BaseExpression
) -> list[ClassRef]:
    """The classes a model argument holds at a call: a direct `Net()`, or a variable
    assigned from one in the same file."""
    if isinstance(value, cst.Call):
        return called_classes(index, facts, value, depth=2)
    name = dotted(value)
    if name is None:
        return []
    assigns = [
        node
        for node in _walk_body(facts)
        if isinstance(node, cst.Assign)
        and isinstance(node.value, cst.Call)
        and any(dotted(t.target) == name for t in node.targets)
    ]
    # In a function, the assignments before the call, the last that names a class first:
    # `model = AsrModel()` then `model = OnnxModel(model.encoder)` passes an OnnxModel.
    # (The file's nodes are listed in source order.)
    scope = next(
        (
            stmt
            for stmt in facts.semantic.module_body
            if isinstance(stmt, cst.FunctionDef) and any(n is at for n in iter_descendants(stmt))
        ),
        None,
    )
    if scope is not None:
        order = {id(n): i for i, n in enumerate(_walk_body(facts))}
        inside = {id(n) for n in iter_descendants(scope)}
        here = order.get(id(at), -1)
        before = [a for a in assigns if id(a) in inside and order.get(id(a), here) < here]
        for a in sorted(before, key=lambda a: -order[id(a)]):
            assert isinstance(a.value, cst.Call)
            found = called_classes(index, facts, a.value, depth=2)
            if found:
                return found
    out: list[ClassRef] = []
    for node in assigns:
        assert isinstance(node.value, cst.Call)
        out += called_classes(index, facts, node.value, depth=2)
    return out


def _walk_body(facts: FileFacts) -> list[cst.CSTNode]:
    """Every node of the file, listed once per check of the facts (memoised)."""
    memo = facts.semantic.memo
    nodes = memo.get("all nodes")
    if nodes is None:
        nodes = memo["all nodes"] = [
            n for stmt in facts.semantic.module_body for n in iter_descendants(stmt)
        ]
    return nodes  # type: ignore[return-value]


def _calls_ending(facts: FileFacts, tail: str) -> list[cst.Call]:
    """Calls whose callee is `tail` or ends with `.tail`."""
    out = []
    for node in _walk_body(facts):
        if isinstance(node, cst.Call):
            d = dotted(node.func)
            if d is not None and (d == tail or d.endswith("." + tail)):
                out.append(node)
    return out
