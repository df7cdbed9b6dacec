"""libcst nodes built the cheap way while the parser builds them.

Every libcst node is a frozen, slotted dataclass: its generated `__init__` stores each field
through `object.__setattr__` (a lookup of the field's slot per field) and then calls
`__post_init__`, which validates the node. The parser's nodes are valid by construction
(libcst's own comment on `__post_init__` says validation could be skipped when parsing),
and building them is about a sixth of `parse_module`'s time. Within `unvalidated_nodes()`,
each node class gets an `__init__` that stores its fields straight through their slots'
descriptors, with the same parameters and defaults, and skips the validation: the same
node, 1.5-2.5x cheaper to build (measured on `Name`, `Attribute`, `SimpleWhitespace`). A
test checks that trees parsed this way equal validated ones.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import libcst as cst

_Init = Callable[..., None]
_FAST: list[tuple[type, _Init, _Init]] | None = None  # (class, its __init__, the cheap one)
_NO_DEFAULT_FACTORY = object()


def _no_validation(self: cst.CSTNode) -> None:
    pass


@contextmanager
def unvalidated_nodes() -> Iterator[None]:
    """Within the block, new libcst nodes are built without validation (see the module
    docstring). Switching costs ~0.07 ms: once per file, not per block."""
    original = vars(cst.CSTNode).get("__post_init__")
    if original is None:  # not the libcst this was written for: leave it alone
        yield
        return
    fast = _fast_inits()
    cst.CSTNode.__post_init__ = _no_validation  # type: ignore[method-assign]
    for cls, _, init in fast:
        cls.__init__ = init  # type: ignore[misc]
    try:
        yield
    finally:
        for cls, init, _ in fast:
            cls.__init__ = init  # type: ignore[misc]
        cst.CSTNode.__post_init__ = original  # type: ignore[method-assign]


# The node classes the parser builds most, most first: these 40 are 97% of the nodes of
# model files (counted on 120 transformers modeling files). The others keep their
# `__init__` (validation is still skipped): compiling all ~170 would cost ~25 ms a process.
_COMMON = (
    "SimpleWhitespace", "Name", "Newline", "TrailingWhitespace", "Comma", "Dot", "Attribute",
    "Arg", "Element", "SimpleStatementLine", "ParenthesizedWhitespace", "SimpleString", "Call",
    "EmptyLine", "AssignTarget", "Assign", "AssignEqual", "LeftParen", "RightParen", "Tuple",
    "Param", "Annotation", "IndentedBlock", "Integer", "BinaryOperation", "Comment",
    "LeftSquareBracket", "RightSquareBracket", "SubscriptElement", "Index", "Subscript",
    "ImportAlias", "BitOr", "ImportFrom", "Expr", "ComparisonTarget", "Comparison", "If",
    "Parameters", "FunctionDef",
)  # fmt: skip


def _fast_inits() -> list[tuple[type, _Init, _Init]]:
    global _FAST
    if _FAST is None:
        found: list[type] = []
        sources: list[str] = []
        namespace: dict[str, Any] = {"_M": _NO_DEFAULT_FACTORY}
        for name in _COMMON:
            cls = getattr(cst, name, None)
            if not isinstance(cls, type) or "__init__" not in vars(cls):
                continue
            source = _init_source(cls, f"_{name}_", namespace)
            if source is not None:
                sources.append(source.replace("__init__", f"_init_{len(found)}", 1))
                found.append(cls)
        exec(compile("\n".join(sources), "<onnxlint node inits>", "exec"), namespace)
        _FAST = [
            (cls, vars(cls)["__init__"], namespace[f"_init_{i}"]) for i, cls in enumerate(found)
        ]
    return _FAST


def _init_source(cls: type, prefix: str, namespace: dict[str, Any]) -> str | None:
    """The source of `cls`'s cheap `__init__`, its defaults and slot setters put in
    `namespace` under `prefix`; None for a class whose fields are not all plain slots."""
    params: list[str] = []
    body: list[str] = []
    for f in dataclasses.fields(cls):
        slot = next((vars(k)[f.name] for k in cls.__mro__ if f.name in vars(k)), None)
        if not f.init or f.kw_only or not isinstance(slot, types.MemberDescriptorType):
            return None
        namespace[f"{prefix}s_{f.name}"] = slot.__set__
        value = f.name
        if f.default is not dataclasses.MISSING:
            namespace[f"{prefix}d_{f.name}"] = f.default
            params.append(f"{f.name}={prefix}d_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"{prefix}f_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_M")
            value = f"{prefix}f_{f.name}() if {f.name} is _M else {f.name}"
        else:
            params.append(f.name)
        body.append(f"    {prefix}s_{f.name}(self, {value})")
    return f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "    pass") + "\n"
