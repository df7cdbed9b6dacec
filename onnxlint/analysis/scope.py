"""The statements around a node: its scope, those naming or binding a variable. Imports file.

What the export analyses (`modes`, `exported_model`, `inputs`) read of the scope that holds
an export call: the enclosing function's body, or the module body across top-level blocks
(`ctx.semantic.module_body`), so rules that use them set `file_scope = True` with a tight
`requires`.

- `node_path(ctx, node)`: the ancestors of a node from its top-level statement down;
  `scope_of(ctx, path)`: the function (or module) whose statements hold it.
- `statements_naming(ctx, stmts, name)`: the top-level statements whose block names a
  variable at all (`STATEMENT_WORDS`, `block_words`: the words of each block, found once);
  the others cannot touch it and are skipped without walking their trees.
- `assignments(stmts, name)`, `named_assignments`, `function_binds`, `binds_in_body`,
  `small_statements`, `return_statements`: what the statements of a scope bind and do,
  not looking into nested defs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.source.walker import dotted, iter_children, iter_descendants

if TYPE_CHECKING:
    from onnxlint.analysis.file import FileView

__all__ = [
    "STATEMENT_WORDS",
    "assignments",
    "binds_in_body",
    "block_words",
    "function_binds",
    "named_assignments",
    "node_path",
    "path_ids",
    "return_statements",
    "scope_of",
    "small_statements",
    "statements_naming",
    "statements_with",
    "words_by_statement",
]


# `ctx.semantic.memo` key of {id(top-level statement): the identifiers of its block's text}
# (`facts.statement_words`, built on first use). A statement that never names the model
# variable, and holds no `return`/`raise`/`break`/`continue`, cannot change the model's
# state: the mode data-flow (`onnxlint.analysis.modes`) and the scans here skip it without
# walking its tree (a 4,000-line notebook has ~1,000 module-level statements, and every
# export call's flow ran over all of them per check).
STATEMENT_WORDS = "statement words"
_IDENTIFIER = re.compile(r"[^\W\d]\w*")


def block_words(text: str) -> frozenset[str]:
    """Every identifier-like word of a block's text (also those in strings and comments:
    a superset of the names its statements use)."""
    return frozenset(_IDENTIFIER.findall(text))


def words_by_statement(ctx: FileView) -> dict[int, frozenset[str]]:
    """{id(top-level statement): its block's words} for `ctx`'s file ({} when unknown)."""
    found = ctx.semantic.memo.get(STATEMENT_WORDS)
    if callable(found):  # `facts.file_analysis` leaves the words to be built on first use
        found = ctx.semantic.memo[STATEMENT_WORDS] = found()
    return found if isinstance(found, dict) else {}


def statements_naming(
    ctx: FileView, stmts: Sequence[cst.CSTNode], name: str
) -> Sequence[cst.CSTNode]:
    """`stmts` less the top-level statements whose block never names `name` (its first
    dotted part): for scans of the module body for one variable's assignments."""
    return _without_memo(ctx, stmts, frozenset({name.split(".", 1)[0]}))


def _without_memo(
    ctx: FileView, stmts: Sequence[cst.CSTNode], needed: frozenset[str]
) -> Sequence[cst.CSTNode]:
    """`statements_with` for `ctx`'s statement words, memoised per check (the rules of one export
    call ask about the same scope and name)."""
    key = ("without", id(stmts), needed)
    memo = ctx.semantic.memo
    found = memo.get(key)
    if found is None:
        found = memo[key] = (stmts, statements_with(stmts, words_by_statement(ctx), needed))
    return found[1]  # type: ignore[index,no-any-return]


def statements_with(
    stmts: Sequence[cst.CSTNode], words: dict[int, frozenset[str]], needed: frozenset[str]
) -> Sequence[cst.CSTNode]:
    """`stmts` less the top-level statements whose block has none of the `needed` words."""
    if not words:
        return stmts
    return [s for s in stmts if (w := words.get(id(s))) is None or not needed.isdisjoint(w)]


def node_path(
    ctx: FileView, node: cst.CSTNode, statement: cst.CSTNode | None = None
) -> list[cst.CSTNode] | None:
    """The ancestors of `node` from a top-level statement down (excluding `node`).

    Uses the walk's ancestor stack when `node` is the node being visited; else searches the
    top-level `statement` known to hold it (an export call's, from the block index), or the
    module body (memoised per check).
    """
    anc = ctx.ancestors
    if anc and any(child is node for child in iter_children(anc[-1])):
        start = 1 if isinstance(anc[0], cst.Module) else 0
        return list(anc[start:])
    key = ("path", id(node))
    memo = ctx.semantic.memo
    if key in memo:
        found = memo[key]
        return None if found is None else list(found)  # type: ignore[call-overload]
    body: Sequence[cst.CSTNode] = ctx.semantic.module_body
    for stmt in body if statement is None else [statement, *body]:
        path = _search(stmt, node)
        if path is not None:
            memo[key] = path
            return list(path)
    memo[key] = None
    return None


def _search(root: cst.CSTNode, target: cst.CSTNode) -> list[cst.CSTNode] | None:
    stack: list[tuple[cst.CSTNode, int]] = [(root, 0)]
    path: list[cst.CSTNode] = []
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        if node is target:
            return path
        path.append(node)
        for child in reversed(list(iter_children(node))):
            stack.append((child, depth + 1))
    return None


def path_ids(root: cst.CSTNode, target: cst.CSTNode) -> set[int]:
    """The ids of `target` and of the nodes from `root` down to it (empty if not under it)."""
    path = _search(root, target)
    return {id(n) for n in path} | {id(target)} if path is not None else set()


def scope_of(
    ctx: FileView, path: list[cst.CSTNode]
) -> tuple[cst.FunctionDef | None, Sequence[cst.BaseStatement], list[cst.CSTNode]] | None:
    """(function or None, its statements, the path below them) for a path to a node."""
    for i in range(len(path) - 1, -1, -1):
        n = path[i]
        if isinstance(n, cst.FunctionDef):
            body = n.body
            stmts = body.body if isinstance(body, cst.IndentedBlock) else []
            return n, stmts, path[i + 2 :] if isinstance(body, cst.IndentedBlock) else []
        if isinstance(n, (cst.ClassDef, cst.Lambda)):
            return None
    return None, ctx.semantic.module_body, path


def small_statements(stmts: Sequence[cst.CSTNode]) -> Iterator[cst.BaseSmallStatement]:
    """The small statements under `stmts`, through compound statements, not nested defs."""
    stack = list(reversed(stmts))
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            yield from node.body
        elif isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        elif isinstance(node, cst.BaseCompoundStatement):
            parts: list[cst.CSTNode] = []
            for name in ("body", "orelse", "handlers", "finalbody", "cases"):
                part = getattr(node, name, None)
                if isinstance(part, (list, tuple)):
                    parts.extend(part)
                elif part is not None:
                    parts.append(part)
            stack.extend(reversed(parts))
        elif isinstance(node, _SUITES):
            stack.extend(reversed(list(_suite_body(node))))


_SUITES = (
    cst.IndentedBlock,
    cst.Else,
    cst.Finally,
    cst.ExceptHandler,
    cst.MatchCase,
    cst.ExceptStarHandler,
)


def _suite_body(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    if isinstance(node, cst.IndentedBlock):
        return node.body
    body = getattr(node, "body", None)
    if isinstance(body, cst.IndentedBlock):
        return body.body
    if isinstance(body, cst.SimpleStatementSuite):
        return [body]
    if isinstance(body, cst.If):
        return [body]
    return []


def assignments(stmts: Sequence[cst.CSTNode], name: str) -> list[cst.CSTNode]:
    """Assign/AnnAssign nodes binding `name` in `stmts` (not inside nested defs)."""
    out: list[cst.CSTNode] = []
    for small in small_statements(stmts):
        if isinstance(small, cst.Assign):
            if any(dotted(t.target) == name for t in small.targets):
                out.append(small)
        elif isinstance(small, cst.AnnAssign) and dotted(small.target) == name:
            out.append(small)
    return out


def named_assignments(ctx: FileView, stmts: Sequence[cst.CSTNode], name: str) -> list[cst.CSTNode]:
    """`assignments`, skipping the top-level statements that never name `name`'s head."""
    return assignments(_without_memo(ctx, stmts, frozenset({name.split(".", 1)[0]})), name)


def function_binds(func: cst.FunctionDef, name: str) -> bool:
    """Whether `name` is a parameter of `func` or assigned in it."""
    p = func.params
    params = [*p.posonly_params, *p.params, *p.kwonly_params]
    if any(x.name.value == name for x in params):
        return True
    body = func.body.body if isinstance(func.body, cst.IndentedBlock) else []
    return bool(assignments(body, name))


def binds_in_body(stmts: Sequence[cst.CSTNode], name: str) -> bool:
    """Whether `name` is assigned (or a loop/with target) in `stmts`."""
    if assignments(stmts, name):
        return True
    for small in small_statements(stmts):
        for node in iter_descendants(small):
            if isinstance(node, cst.AugAssign) and dotted(node.target) == name:
                return True
    return any(name in names for names in _compound_targets(stmts))


def _compound_targets(stmts: Sequence[cst.CSTNode]) -> Iterator[set[str]]:
    """The names bound by `for` and `with ... as` statements in `stmts` (not nested defs)."""
    stack = list(stmts)
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            continue
        if isinstance(node, cst.For):
            yield {n for n in (dotted(x) for x in _target_names(node.target)) if n}
        elif isinstance(node, cst.With):
            yield {
                n
                for item in node.items
                if item.asname is not None
                for n in (dotted(x) for x in _target_names(item.asname.name))
                if n
            }
        if isinstance(node, cst.BaseCompoundStatement):
            stack.extend(iter_children(node))
        elif isinstance(node, _SUITES):
            stack.extend(_suite_body(node))


def _target_names(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(target, (cst.Tuple, cst.List)):
        return [x for el in target.elements for x in _target_names(el.value)]
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return [target]


def return_statements(func: cst.FunctionDef) -> Iterator[cst.Return]:
    """The `return` statements of `func`, not those of the defs, classes and lambdas in it."""
    stack = list(iter_children(func.body))
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Return):
            yield node
        elif not isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            stack.extend(iter_children(node))
