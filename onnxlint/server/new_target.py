"""The text of a `# onnxlint: target` factory for an export call ("Create a target").

The factory builds the model the call exports with the constructor arguments the file
passes where it builds it (`DetectorHead(channels=32)`), and the example inputs the call
exports with (`images = torch.randn(1, 3, 32, 32)` before `tox.export(model, (images,))`),
when they are literal values. What is not (a `cfg.channels`, a batch from a data loader),
and a required constructor argument no call gives, is a placeholder: `...` with a comment
above that names it and what the call site passes. The editor saves the file and runs the
new target when there is no placeholder; else it selects the first one.

Plain `ast` on the texts: the export call's file and the class's file.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

PLACEHOLDER = "onnxlint: fill in"
_MODEL_METHODS = {"eval", "to", "cpu", "cuda", "float", "half", "double", "train"}
_EXAMPLE_FUNCS = {
    "randn",
    "rand",
    "randint",
    "zeros",
    "ones",
    "full",
    "empty",
    "tensor",
    "arange",
    "linspace",
}


@dataclass
class Factory:
    """What the factory's body says: the model's construction and the example."""

    model_args: list[str] = field(default_factory=list)  # `3`, `channels=...`
    example: str | None = None  # a tuple expression, or None: a placeholder
    notes: list[str] = field(default_factory=list)  # one comment line per placeholder
    placeholders: list[str] = field(default_factory=list)  # what must be filled in


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def _callee(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner is not None else None
    return None


def _scopes(tree: ast.Module, line: int) -> list[ast.AST]:
    """The module and the functions holding `line`, outermost first."""
    out: list[ast.AST] = [tree]
    node: ast.AST = tree
    while True:
        inner = next(
            (
                n
                for n in ast.iter_child_nodes(node)
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                and n.lineno <= line <= (n.end_lineno or n.lineno)
            ),
            None,
        )
        if inner is None:
            return out
        if not isinstance(inner, ast.ClassDef):
            out.append(inner)
        node = inner


def _own_nodes(scope: ast.AST) -> list[ast.AST]:
    """The nodes of a scope, not those of the functions and classes it defines."""
    out: list[ast.AST] = []
    todo = list(ast.iter_child_nodes(scope))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        out.append(n)
        todo.extend(ast.iter_child_nodes(n))
    return out


def _assigned(scopes: list[ast.AST], name: str, before: int) -> ast.expr | None:
    """The value last assigned to `name` before `line`, innermost scope first."""
    for scope in reversed(scopes):
        found: tuple[int, ast.expr] | None = None
        for n in _own_nodes(scope):
            if not isinstance(n, ast.Assign) or n.lineno >= before:
                continue
            for t in n.targets:
                if (
                    isinstance(t, ast.Name)
                    and t.id == name
                    and (found is None or n.lineno > found[0])
                ):
                    found = (n.lineno, n.value)
        if found is not None:
            return found[1]
    return None


def _literal(node: ast.expr) -> bool:
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _resolved(node: ast.expr, scopes: list[ast.AST], line: int, depth: int = 0) -> ast.expr | None:
    """`node` with the names it uses replaced by their literal values (or example-tensor
    calls); None when something in it is not such a value."""
    if _literal(node):
        return node
    if isinstance(node, ast.Name) and depth < 4:
        value = _assigned(scopes, node.id, line)
        if value is None:
            return None
        return _resolved(value, scopes, getattr(value, "lineno", line), depth + 1)
    if isinstance(node, (ast.Tuple, ast.List)):
        elts = [_resolved(e, scopes, line, depth) for e in node.elts]
        if any(e is None for e in elts):
            return None
        return type(node)(elts=elts, ctx=ast.Load())  # type: ignore[arg-type]
    if isinstance(node, ast.Dict):
        values = [_resolved(v, scopes, line, depth) for v in node.values]
        if any(k is None or not _literal(k) for k in node.keys) or any(v is None for v in values):
            return None
        return ast.Dict(keys=node.keys, values=values)  # type: ignore[arg-type]
    if isinstance(node, ast.Attribute) and (_dotted(node) or "").startswith("torch."):
        return node  # torch.float32, torch.long
    if isinstance(node, ast.Call):
        name = _dotted(node.func) or ""
        if not (name.startswith("torch.") and name.rsplit(".", 1)[-1] in _EXAMPLE_FUNCS):
            return None
        args = [_resolved(a, scopes, line, depth) for a in node.args]
        kws = [_resolved(k.value, scopes, line, depth) for k in node.keywords]
        if any(a is None for a in args) or any(k is None for k in kws):
            return None
        return ast.Call(
            func=node.func,
            args=args,  # type: ignore[arg-type]
            keywords=[
                ast.keyword(arg=k.arg, value=v)  # type: ignore[arg-type]
                for k, v in zip(node.keywords, kws, strict=True)
            ],
        )
    return None


def _export_call(tree: ast.Module, line: int) -> ast.Call | None:
    """The outermost call that starts on `line` (the export call a lens sits on)."""
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.lineno == line]
    if not calls:
        return None
    return max(calls, key=lambda c: ((c.end_lineno or 0) - c.lineno, -(c.col_offset)))


def _example_arg(call: ast.Call) -> ast.expr | None:
    """The example inputs of an export call: `args` (torch.onnx.export, torch.export.export),
    `example_inputs` (torch.jit.trace), or the positional inputs of dynamo_export."""
    name = _dotted(call.func) or ""
    for kw in call.keywords:
        if kw.arg in ("args", "example_inputs", "example_args"):
            return kw.value
    if name.endswith("dynamo_export"):
        rest = call.args[1:]
        return ast.Tuple(elts=rest, ctx=ast.Load()) if rest else None
    return call.args[1] if len(call.args) > 1 else None


def _constructions(tree: ast.Module, cls: str) -> list[ast.Call]:
    return [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and _callee(n.func) == cls and not _is_method_of_model(n)
    ]


def _is_method_of_model(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Attribute) and call.func.attr in _MODEL_METHODS


def _construction(tree: ast.Module, cls: str, line: int) -> ast.Call | None:
    """Where the file builds the exported class: in the function holding the export call,
    else in a function it calls (a builder), else anywhere in the file."""
    found = _constructions(tree, cls)
    if not found:
        return None
    scopes = _scopes(tree, line)
    inner = scopes[-1]
    if inner is not tree:
        own = {id(n) for n in _own_nodes(inner)}
        mine = [c for c in found if id(c) in own]
        if mine:
            return max(mine, key=lambda c: c.lineno if c.lineno <= line else -c.lineno)
        called = {
            _callee(n.func)
            for n in _own_nodes(inner)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        for f in tree.body:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in called:
                own = {id(n) for n in _own_nodes(f)}
                theirs = [c for c in found if id(c) in own]
                if theirs:
                    return theirs[0]
    return found[0]


def init_parameters(class_text: str | None, cls: str) -> tuple[list[str], set[str]] | None:
    """(names of the positional parameters of `cls.__init__` after self, the required
    ones, positional or keyword-only); None when the class or its `__init__` is not found."""
    tree = _parse(class_text) if class_text is not None else None
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for f in node.body:
                if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                    a = f.args
                    positional = [p.arg for p in [*a.posonlyargs, *a.args]][1:]
                    n_required = len(a.posonlyargs) + len(a.args) - 1 - len(a.defaults)
                    required = set(positional[: max(n_required, 0)])
                    required |= {
                        p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True) if d is None
                    }
                    return positional, required
            return [], set()
    return None


def factory_for(text: str, line: int, cls: str, class_text: str | None) -> Factory:
    """The factory's model arguments and example for the export call at `line` of `text`;
    `class_text` is the text of the file that defines `cls`."""
    out = Factory()
    tree = _parse(text)
    params = init_parameters(class_text, cls)
    positional, required = params if params is not None else ([], set())
    given: set[str] = set()
    gives = "no call in this file gives it"
    if tree is not None:
        built = _construction(tree, cls, line)
        if built is not None:
            scopes = _scopes(tree, built.lineno)
            where = f"line {built.lineno}"
            gives = f"{cls}(...) on {where} does not give it"
            for i, a in enumerate(built.args):
                name = positional[i] if i < len(positional) else None
                if isinstance(a, ast.Starred):
                    out.notes.append(
                        f"{cls}(...) on {where} gets `{ast.unparse(a)}`: put its arguments here"
                    )
                    out.placeholders.append(ast.unparse(a))
                    continue
                value = _resolved(a, scopes, built.lineno)
                label = name or f"argument {i + 1}"
                if name is not None:
                    given.add(name)
                if value is not None:
                    out.model_args.append(
                        f"{name}={ast.unparse(value)}" if name else ast.unparse(value)
                    )
                else:
                    out.model_args.append(f"{name}=..." if name else "...")
                    out.notes.append(
                        f"`{label}`: {cls}(...) on {where} gets `{ast.unparse(a)}`, not a value "
                        "written in the file"
                    )
                    out.placeholders.append(label)
            for kw in built.keywords:
                if kw.arg is None:
                    out.notes.append(
                        f"{cls}(...) on {where} gets `**{ast.unparse(kw.value)}`: put its "
                        "arguments here"
                    )
                    out.placeholders.append(f"**{ast.unparse(kw.value)}")
                    continue
                given.add(kw.arg)
                value = _resolved(kw.value, scopes, built.lineno)
                if value is not None:
                    out.model_args.append(f"{kw.arg}={ast.unparse(value)}")
                else:
                    out.model_args.append(f"{kw.arg}=...")
                    out.notes.append(
                        f"`{kw.arg}`: {cls}(...) on {where} gets `{ast.unparse(kw.value)}`, not "
                        "a value written in the file"
                    )
                    out.placeholders.append(kw.arg)
        call = _export_call(tree, line)
        example = _example_arg(call) if call is not None else None
        if example is not None:
            value = _resolved(example, _scopes(tree, line), line)
            if value is not None:
                if not isinstance(value, (ast.Tuple, ast.List)):
                    value = ast.Tuple(elts=[value], ctx=ast.Load())
                out.example = ast.unparse(ast.Tuple(elts=list(value.elts), ctx=ast.Load()))
            else:
                out.notes.append(
                    f"the example inputs: the export on line {line} gets "
                    f"`{ast.unparse(example)}`, not a value written in the file; put a tuple "
                    "of tensors of the shapes the model takes"
                )
                out.placeholders.append("the example inputs")
        else:
            out.notes.append("the example inputs: a tuple of tensors of the shapes the model takes")
            out.placeholders.append("the example inputs")
    missing = [p for p in positional if p in required and p not in given]
    missing += sorted(required - set(positional) - given)
    for p in missing:
        out.model_args.append(f"{p}=...")
        out.notes.append(f"`{p}`: {cls}() requires it, and {gives}")
        out.placeholders.append(p)
    return out
