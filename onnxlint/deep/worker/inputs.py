"""Example inputs that export without an error and give a wrong ONNX model.

Checked right after load, before anything runs, because no later phase can see them:

- one tensor object given for several inputs (`model(x, x)`, `([x, x, x], x)`): torch.export
  traces the inputs as one (aliased), the ONNX model keeps several inputs but computes with
  one of them, and gives other numbers as soon as they differ; a check of the example
  feeds the same aliased inputs back, so it cannot see it (`verify` adds a run with the
  inputs made distinct, which measures it);
- a Python `float`/`int`/`bool` example argument: the dynamo exporter bakes its value into
  the graph and drops the input, so the ONNX model ignores what is passed later.

Both are reported at the line that gives the examples: the script's export call, or the
factory's `return`.
"""

from __future__ import annotations

import ast
import contextlib
from typing import Any

import torch

from . import wire
from .record import Analysis, finding, place


def run(rec: Analysis) -> None:
    leaves = labelled_leaves(rec)
    site = example_site(rec)
    _aliased(rec, leaves, site)
    _scalars(rec, leaves, site)


def labelled_leaves(rec: Analysis) -> list[tuple[str, Any]]:
    """(label, leaf) of every example input leaf, in flat order (`images[1]`, `mask`)."""
    out: list[tuple[str, Any]] = []
    for label, value in rec.input_labels():
        try:
            pairs, _ = torch.utils._pytree.tree_flatten_with_path(value)
        except Exception:  # an odd container: label its leaves by position
            pairs = [((), v) for v in torch.utils._pytree.tree_leaves(value)]
        for path, leaf in pairs:
            out.append((label + "".join(_key(k) for k in path), leaf))
    return out


def storage_id(t: torch.Tensor) -> int:
    """One id for a tensor and its views (the examples share data when it is equal)."""
    return id(t._base if t._base is not None else t)


def _key(k: Any) -> str:
    for attr in ("idx", "key", "name"):
        if hasattr(k, attr):
            v = getattr(k, attr)
            return f".{v}" if attr == "name" else f"[{v!r}]"
    return f"[{k}]"


def _aliased(rec: Analysis, leaves: list[tuple[str, Any]], site: dict[str, Any] | None) -> None:
    groups: dict[int, list[str]] = {}
    for label, leaf in leaves:
        if isinstance(leaf, torch.Tensor):
            groups.setdefault(storage_id(leaf), []).append(label)
    for labels in groups.values():
        if len(labels) < 2:
            continue
        names = ", ".join(f"`{n}`" for n in labels)
        f = finding(
            wire.KIND_ALIASED_INPUTS,
            f"the example inputs {names} are one tensor: the export traces them as one input, "
            "so the ONNX model gives wrong results when they differ",
            notes=[
                "torch.export sees the same tensor object (or views of one) in several "
                "places and records one input; the ONNX model keeps the inputs but "
                "computes with one of them. A check on the example cannot see it: it feeds "
                "the same tensor back (`verify` also runs the inputs made distinct).",
                "Pass separate tensors: `x.clone()` for each place after the first.",
            ],
            inputs=labels,
        )
        rec.add(place(f, site))


def _scalars(rec: Analysis, leaves: list[tuple[str, Any]], site: dict[str, Any] | None) -> None:
    kept = _dynamic_scalars(rec)
    for label, leaf in leaves:
        if not isinstance(leaf, (bool, int, float)) or isinstance(leaf, torch.SymInt):
            continue
        if label in kept and isinstance(leaf, int) and not isinstance(leaf, bool):
            continue  # declared dynamic: torch.export keeps it an input (a SymInt)
        kind = type(leaf).__name__
        f = finding(
            wire.KIND_SCALAR_INPUT,
            f"the example input `{label}` is a Python {kind} ({leaf!r}): the export bakes "
            "it into the graph as a constant and the ONNX model has no such input",
            notes=[
                "torch.onnx.export (dynamo) specialises Python numbers and booleans: the "
                "value given here is used whatever is passed later.",
                f"If it changes at run time, pass it as a tensor "
                f"(`torch.tensor({leaf!r})`); if it never does, leave it out of the inputs.",
            ],
            # a flag (`use_cache=False`) is usually meant as a constant
            severity="info" if isinstance(leaf, bool) else "warning",
            input=label,
        )
        rec.add(place(f, site))


def _dynamic_scalars(rec: Analysis) -> set[str]:
    """The top-level inputs whose `dynamic_shapes` entry is not None: an int declared
    dynamic there (`Dim.DYNAMIC`, `Dim.AUTO`, a named `Dim`) stays an input of the ONNX
    model (measured with torch 2.13: `(1, x)` with `(Dim.DYNAMIC, {0: ...})` gives the
    inputs `a` and `x`)."""
    return {label for label, _value, spec in rec.input_specs() if spec is not None}


def call_argument(
    rec: Analysis, keyword: str, position: int | None = None
) -> dict[str, Any] | None:
    """An argument of the script's own export call (`opset_version=`, the model: keyword, or
    positional at `position`) with its source text; the call when the argument is not
    written; None without a script call."""
    call = rec.result.get("script_call") or {}
    path, line = call.get("file"), call.get("line")
    if not path or not line:
        return None
    site: dict[str, Any] = {"file": path, "line": line}
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return site
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and node.lineno == line):
            continue
        arg = next((kw.value for kw in node.keywords if kw.arg == keyword), None)
        positional = node.args[: (position or 0) + 1]
        if (
            arg is None
            and position is not None
            and len(positional) == position + 1
            and not any(isinstance(a, ast.Starred) for a in positional)
        ):
            arg = node.args[position]
        if arg is not None:
            return {**site, "line": arg.lineno, "text": ast.unparse(arg)}
    return site


def example_site(rec: Analysis) -> dict[str, Any] | None:
    """Where the examples are given: a script's export call, else the factory's last
    `return` (its `def` line when the source cannot be read)."""
    loc = rec.factory_loc
    if loc is None or rec.target.get("script"):
        return loc
    with contextlib.suppress(OSError, SyntaxError, UnicodeDecodeError, ValueError):
        with open(loc["file"], encoding="utf-8") as fh:
            tree = ast.parse(fh.read())
        for node in ast.walk(tree):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.lineno <= loc["line"] <= (node.end_lineno or node.lineno)
                and node.name == loc["name"].rpartition(".")[2]
            ):
                returns = [
                    n.lineno
                    for n in ast.walk(node)
                    if isinstance(n, ast.Return) and n.value is not None
                ]
                if returns:
                    return {**loc, "line": max(returns)}
    return loc
