"""`dynamic_axes` of a script's export call, as torch 2.13's dynamo exporter reads them.

`torch.onnx.export(..., dynamic_axes=...)` converts the axes to `dynamic_shapes` with its own
`from_dynamic_axes_to_dynamic_shapes`, which is what the analysis runs too. That conversion
does not match the axes to the inputs by name: it lists the `dynamic_axes` entries in the
dict's order, then the other `input_names`, and gives them to the model's inputs by position.
A dict written in another order than the inputs (segment-anything's `{"point_coords": ...,
"point_labels": ...}` before `image_embeddings`) makes other dims dynamic than the user asked:
the export fails on dims the model needs static, or succeeds with the wrong dims dynamic. And
where the conversion itself raises, `torch.onnx.export` raises at the call before it traces
anything. Both are said at the script's call, where the axes are written.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

from .torch_internals import torch_version


@dataclass
class Axes:
    """The conversion's result and what it did wrong."""

    shapes: Any = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    fails: str | None = None  # why torch.onnx.export raises at the call
    moved: list[tuple[str, str]] = field(default_factory=list)  # (key, input it went to)
    input_names: list[dict[int, str]] = field(default_factory=list)
    """Per model input, by position as torch gives them: dim -> the name `dynamic_axes` wrote
    (the conversion keeps only `Dim.DYNAMIC`; the names tell which dims move together)."""


def convert(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], axes: Any, a: dict[str, Any]
) -> Axes:
    """`dynamic_axes` converted with torch's own function; where it raises, why the export
    call fails; where it gives axes to other inputs than their names, which."""
    from torch.onnx._internal.exporter._dynamic_shapes import (
        from_dynamic_axes_to_dynamic_shapes,
    )

    outputs = set(a.get("output_names") or ())
    input_names = a.get("input_names")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            shapes, args2, kwargs2 = from_dynamic_axes_to_dynamic_shapes(
                model,
                args,
                kwargs,
                dynamic_axes=axes,
                output_names=outputs,
                input_names=input_names,
            )
    except Exception as e:
        return Axes(None, args, kwargs, fails=_why(e))
    out = Axes(shapes, tuple(args2), dict(kwargs2 or {}))
    out.moved = _moved(axes, outputs, input_names, shapes)
    out.input_names = _names(axes, outputs, input_names)
    return out


def _named(key: Any, spec: Any) -> dict[int, str]:
    """One `dynamic_axes` entry as dim -> name (a list of dims gets torch's own names)."""
    if isinstance(spec, dict):
        return {int(d): str(n) for d, n in spec.items()}
    if isinstance(spec, (list, tuple)):
        return {int(d): f"{key}_dynamic_axes_{i + 1}" for i, d in enumerate(spec)}
    return {}


def _names(axes: Any, outputs: set[str], input_names: Any) -> list[dict[int, str]]:
    """The names `dynamic_axes` gives the inputs' dims, in the order the conversion gives
    them to the inputs (the dict's entries, then the other `input_names`)."""
    if not isinstance(axes, dict):
        return []
    names = [str(n) for n in input_names] if isinstance(input_names, (list, tuple)) else []
    order = [k for k in axes if k not in outputs] + [n for n in names if n not in axes]
    return [_named(k, axes.get(k)) for k in order]


def _why(e: BaseException) -> str:
    first = (str(e).strip().splitlines() or [""])[0]
    return (
        f"torch.onnx.export raises here in torch {torch_version()} before it traces "
        "anything: it cannot convert `dynamic_axes` to `dynamic_shapes` (RuntimeError "
        f"'Failed to convert dynamic_axes to dynamic_shapes', from {type(e).__name__}: "
        f"{first}). The analysis is of the export with no dynamic dims: pass "
        "`dynamic_shapes` keyed by the names of `forward`'s parameters instead."
    )


def _moved(axes: Any, outputs: set[str], input_names: Any, shapes: Any) -> list[tuple[str, str]]:
    """The `dynamic_axes` keys whose axes the conversion gave to an input of another name
    (judged only for flat inputs named by `input_names`, where the mapping is certain)."""
    if not isinstance(axes, dict) or not isinstance(input_names, (list, tuple)):
        return []
    names = [str(n) for n in input_names]
    if not isinstance(shapes, (list, tuple)) or len(shapes) > len(names):
        return []
    order = [k for k in axes if k not in outputs] + [n for n in names if n not in axes]
    moved = []
    for i, given in enumerate(shapes):
        if i >= len(order) or order[i] == names[i] or not given:
            continue
        moved.append((str(order[i]), names[i]))
    return moved


def moved_message(moved: list[tuple[str, str]]) -> str:
    pairs = ", ".join(f"the axes of {k!r} go to {to!r}" for k, to in moved)
    return (
        f"`dynamic_axes` make other inputs dynamic than their names say: torch "
        f"{torch_version()}'s dynamo exporter converts them in the dict's order, not by name "
        f"({pairs}); the export fails where the model needs those dims static, or succeeds "
        "with the wrong dims dynamic"
    )


MOVED_NOTES = [
    "The conversion lists the `dynamic_axes` entries first, in the dict's order, then the "
    "other `input_names`, and gives them to the model's inputs by position.",
    "Pass `dynamic_shapes` keyed by the names of `forward`'s parameters (OLX304's fix), or "
    "write the `dynamic_axes` entries in the order of the inputs.",
]
