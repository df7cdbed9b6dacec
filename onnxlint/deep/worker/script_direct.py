"""A script target's call made directly, when the script's run cannot reach it.

The analysis writes no file for an export call it skips, so a script that exports several
models and reads each file it writes (EfficientSAM's `export_onnx` opens it in
onnxruntime) stops after its first export call, on the analysis's own account: the later
calls of its `main()` are never reached. When the statement at the target's line is a call
in a function whose expression needs none of that function's locals
(`export_onnx_esam_decoder(model=build_efficient_sam_vitt(), output="d.onnx")`), or a
call in the `if __name__ == "__main__":` block that needs none of the names bound in it,
the script is run again as an imported module (its `__main__` block does not run) and the
call alone is evaluated in the module's globals: the target's export call is reached
without the statements before it. The `with` blocks the call is written in whose
expressions read only module-level names (`with torch.no_grad():`) are entered around it,
as the autograd mode they set decides what torch traces.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import symtable
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass(frozen=True)
class Direct:
    """The call at a target's line, as an expression to evaluate in the module's globals."""

    code: types.CodeType  # compiled at its own lines of the script: the capture matches them
    text: str  # `export_onnx_esam_decoder(...)`, for the note
    where: str  # whose statement it is: "`main()`", "the `__main__` block"
    names: frozenset[str]  # the module-level names it (and its `with` blocks) read
    # the `with` blocks around it, outermost first: their expressions, compiled, and their
    # text; those that read more than module-level names are not entered (`left`)
    contexts: tuple[types.CodeType, ...] = ()
    entered: tuple[str, ...] = ()  # `torch.no_grad()`
    left: tuple[str, ...] = ()  # `with open(path)`

    def ready(self, module: types.ModuleType) -> bool:
        """Whether the module, run, defines every name the call reads."""
        return all(n in vars(module) or hasattr(builtins, n) for n in self.names)

    def call(self, namespace: dict[str, Any]) -> None:
        """Make the call in the module's globals, inside the `with` blocks it is in."""
        with contextlib.ExitStack() as stack:
            for context in self.contexts:
                stack.enter_context(eval(context, namespace))
            eval(self.code, namespace)


def direct_call(source: str, script: str, line: int) -> Direct | None:
    """The call statement at `line` inside a function of the script, or inside its
    `__main__` block, when its expression reads only module-level names (in the block:
    bound before it), builtins and literals; else None."""
    try:
        tree = ast.parse(source, script)
        table = symtable.symtable(source, script, "exec")
    except (SyntaxError, ValueError):
        return None
    chain = _functions_around(tree, line)
    body: ast.AST
    reads: Callable[[ast.expr], set[str] | None]
    if chain:
        body, where = chain[-1], f"`{chain[-1].name}()`"
        scopes = _scopes(table, chain)
        if scopes is None:
            return None
        reads = functools.partial(_module_names, scopes=scopes)
    else:
        found = _main_block(tree, line)
        if found is None:
            return None
        body, where = found, "the `__main__` block"
        reads = functools.partial(_names_before, tree=tree, block=found)
    call = _call_statement(body, line)
    if call is None:
        return None
    names = reads(call)
    if names is None:
        return None
    contexts: list[types.CodeType] = []
    entered: list[str] = []
    left: list[str] = []
    for block in _withs_around(body, line):
        for item in block.items:
            read = reads(item.context_expr)
            text = ast.unparse(item.context_expr)
            if isinstance(block, ast.AsyncWith) or read is None:  # needs the function's frame
                left.append(f"{'async ' if isinstance(block, ast.AsyncWith) else ''}with {text}")
                continue
            contexts.append(_compiled(item.context_expr, script))
            entered.append(text)
            names |= read
    callee = ast.unparse(call.func)
    text = f"{callee}(...)" if call.args or call.keywords else f"{callee}()"
    return Direct(
        _compiled(call, script),
        text,
        where,
        frozenset(names),
        tuple(contexts),
        tuple(entered),
        tuple(left),
    )


# await and yield need their function; `:=` would bind a local of it
_UNSAFE = (ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)


def _module_names(expression: ast.expr, scopes: list[symtable.SymbolTable]) -> set[str] | None:
    """The names `expression` reads, when none is a local of the functions around it (or
    of their scopes) and it needs nothing of their frame (`await`); else None."""
    names = _reads(expression)
    if names is None:
        return None
    for name in names:
        for scope in scopes:
            try:
                sym = scope.lookup(name)
            except KeyError:
                continue
            if sym.is_local() or sym.is_free() or sym.is_parameter():
                return None  # a local of the function (or of one around it): not callable
    return names


def _names_before(expression: ast.expr, tree: ast.Module, block: ast.If) -> set[str] | None:
    """The names `expression` in the `__main__` block reads, when each is bound before the
    block, or nowhere in the module (a builtin, a star import's): none bound in it (the
    import the call is made after does not run it), nor only after it (its statements ran
    before those); else None."""
    names = _reads(expression)
    if names is None:
        return None
    at = tree.body.index(block)
    before = _bound(tree.body[:at])
    later = _bound([*block.body, *block.orelse]) | (_bound(tree.body[at + 1 :]) - before)
    return None if names & later or "*" in later else names


def _main_block(tree: ast.Module, line: int) -> ast.If | None:
    """The module's `if __name__ == "__main__":` whose block holds `line`."""
    for node in tree.body:
        if (
            isinstance(node, ast.If)
            and isinstance(node.test, ast.Compare)
            and len(node.test.ops) == 1
            and isinstance(node.test.ops[0], ast.Eq)
            and {_main_part(node.test.left), _main_part(node.test.comparators[0])}
            == {"name", "main"}
            and any(_spans(s, line) for s in node.body)
        ):
            return node
    return None


def _main_part(node: ast.expr) -> str:
    if isinstance(node, ast.Name) and node.id == "__name__":
        return "name"
    if isinstance(node, ast.Constant) and node.value == "__main__":
        return "main"
    return ""


def _bound(statements: list[ast.stmt]) -> set[str]:
    """The module-level names `statements` bind (assignments, imports, definitions, `for`
    and `with` targets, `except ... as`; `*` for a star import), not those of the scopes
    in them (a function's locals, a comprehension's variables)."""
    names: set[str] = set()
    todo: list[ast.AST] = list(statements)
    while todo:
        n = todo.pop()
        if isinstance(n, (*_FUNCTIONS, ast.ClassDef)):
            names.add(n.name)
            todo.extend(n.decorator_list)
            continue
        if isinstance(n, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            # their own scope; only `:=` in a comprehension binds the module's name
            names |= {
                w.target.id
                for w in ast.walk(n)
                if isinstance(w, ast.NamedExpr) and isinstance(w.target, ast.Name)
            }
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            names.add(n.id)
        elif isinstance(n, ast.alias):
            names.add(n.asname or n.name.split(".")[0])
        elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
            names.add(n.name)
        elif isinstance(n, ast.MatchMapping) and n.rest:
            names.add(n.rest)
        todo.extend(ast.iter_child_nodes(n))
    return names


def _reads(expression: ast.expr) -> set[str] | None:
    """The free names `expression` reads (not a lambda's parameters, nor a comprehension's
    variables); None when it needs a function's frame (`await`, `yield`) or binds (`:=`)."""
    if any(isinstance(n, _UNSAFE) for n in ast.walk(expression)):
        return None
    bound = {
        a.arg
        for n in ast.walk(expression)
        if isinstance(n, ast.Lambda)
        for a in [*n.args.posonlyargs, *n.args.args, *n.args.kwonlyargs]
    } | {
        t.id
        for n in ast.walk(expression)
        if isinstance(n, ast.comprehension)
        for t in ast.walk(n.target)
        if isinstance(t, ast.Name)
    }
    return {n.id for n in ast.walk(expression) if isinstance(n, ast.Name)} - bound


def _compiled(expression: ast.expr, script: str) -> types.CodeType:
    """The expression as code of its own lines of the script."""
    return compile(ast.Expression(body=expression), script, "eval")


def _withs_around(body: ast.AST, line: int) -> list[ast.With | ast.AsyncWith]:
    """The `with` statements of `body` (not of a definition in it) whose blocks hold
    `line`, outermost first."""
    blocks = [
        n
        for n in _own(body)
        if isinstance(n, (ast.With, ast.AsyncWith)) and any(_spans(s, line) for s in n.body)
    ]
    return sorted(blocks, key=lambda n: (n.lineno, n.col_offset))


def _functions_around(tree: ast.Module, line: int) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions whose bodies hold `line`, outermost first (none: a module-level line,
    or one in a class body outside a method)."""
    chain: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    node: ast.AST = tree
    while True:
        inner = next((n for n in _own(node) if _is_def(n) and _spans(n, line)), None)
        if inner is None:
            return chain
        if isinstance(inner, _FUNCTIONS):
            chain.append(inner)
        elif chain:
            return []  # a class inside a function: its body's names are another scope
        node = inner


def _is_def(n: ast.AST) -> bool:
    return isinstance(n, (*_FUNCTIONS, ast.ClassDef))


def _own(node: ast.AST) -> Iterator[ast.stmt]:
    """The statements of a module's or a definition's body, at any depth of its compound
    statements (`if`, `with`, `try`, `for`), not those inside a definition in it."""
    todo = list(getattr(node, "body", []))
    while todo:
        n = todo.pop()
        yield n
        if not _is_def(n):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                todo.extend(getattr(n, name, None) or [])


def _spans(node: ast.AST, line: int) -> bool:
    decorators: list[int] = [d.lineno for d in getattr(node, "decorator_list", [])]
    start = min([int(getattr(node, "lineno", 0)), *decorators])
    end = int(getattr(node, "end_lineno", None) or start)
    return start <= line <= end


def _call_statement(function: ast.AST, line: int) -> ast.Call | None:
    """The call a simple statement of the function (or block) makes at `line`: `f(...)`,
    or the value of `x = f(...)` (the call's own lines hold `line`)."""
    for node in _own(function):
        value = node.value if isinstance(node, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if isinstance(value, ast.Call) and value.lineno <= line <= (value.end_lineno or line):
            return value
    return None


def _scopes(
    table: symtable.SymbolTable, chain: list[ast.FunctionDef | ast.AsyncFunctionDef]
) -> list[symtable.SymbolTable] | None:
    """The symbol tables of the functions around the line (class bodies between them
    followed through), innermost last; None when one is not found."""
    out: list[symtable.SymbolTable] = []
    scope = table
    for fn in chain:
        found = _child(scope, fn)
        if found is None:
            return None
        out.append(found)
        scope = found
    return out


def _child(scope: symtable.SymbolTable, fn: ast.AST) -> symtable.SymbolTable | None:
    """The table of `fn` (by its name and `def` line) among the scope's, through classes."""
    name, line = getattr(fn, "name", ""), getattr(fn, "lineno", 0)
    for child in scope.get_children():
        if child.get_type() == "function" and (child.get_name(), child.get_lineno()) == (
            name,
            line,
        ):
            return child
        found = _child(child, fn) if child.get_type() == "class" else None
        if found is not None:
            return found
    return None


def note(direct: Direct, line: int, stopped: str) -> str:
    """What the result says was done: the call made directly (inside which `with` blocks),
    and why."""
    inside = f", inside `with {', '.join(direct.entered)}`" if direct.entered else ""
    left = "".join(f", nor was `{w}` around it entered" for w in direct.left)
    return (
        f"analysed by calling `{direct.text}` at line {line} directly{inside}: the script's "
        f"run {stopped}; the statements of {direct.where} before it did not run{left}"
    )
