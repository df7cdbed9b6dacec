"""Rewriting `dynamic_axes=` as `dynamic_shapes=` (the fixes of OLX304 and OLX401).

The only edit builder of the export data-flow: it reads the call through
`onnxlint.analysis.exported_model` and `onnxlint.analysis.inputs`, and writes the edits with
the rule's `Context`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from onnxlint.analysis.exported_model import ModelRef, exported_model, model_forward_params
from onnxlint.analysis.inputs import example_inputs, names_arg_of, resolve_value
from onnxlint.core.violation import Edit, Span
from onnxlint.semantic.calls import ExportCall, keyword_arg, literal_int
from onnxlint.source.walker import code_of

if TYPE_CHECKING:
    from onnxlint.rules.base import Context


def _str_value(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        v = expr.evaluated_value
        return v if isinstance(v, str) else None
    return None


def convert_dynamic_axes(ctx: Context, call: ExportCall) -> list[Edit] | None:
    """Edits replacing `dynamic_axes=...` by the equivalent `dynamic_shapes=...`.

    The new value is a dict keyed by the `forward` parameter names of the exported model's
    class (found in this file), mapping `input_names` order onto the positional inputs;
    when the class is not in this file but the inputs are positional, a tuple in input
    order. Output-name keys are dropped (dynamo takes output shapes from the graph), dim
    names given as strings are kept, list-form axes get the names the legacy exporter gave
    them (`<input>_dynamic_axes_<n>`). Inputs without dynamic axes get `None`.

    None when it cannot be done safely: `dynamic_shapes=` already given, a value that is
    not a literal dict of literal axes, an input name that matches no input, inputs whose
    count or order cannot be read, a `forward` with `*args`/`**kwargs`.
    """
    node = call.node
    arg = keyword_arg(node, "dynamic_axes")
    if arg is None or keyword_arg(node, "dynamic_shapes") is not None:
        return None
    ref = exported_model(ctx, call)
    value = resolve_value(ctx, arg.value, ref)
    if not isinstance(value, cst.Dict):
        return None
    input_names = names_arg_of(ctx, call, "input_names", ref)
    output_names = names_arg_of(ctx, call, "output_names", ref)
    if input_names is None or output_names is None:
        return None
    inputs = example_inputs(ctx, call, ref)
    if inputs is None:
        return None
    kwargs_names = _kwargs_names(ctx, call, ref)
    if kwargs_names is None:
        return None
    if any(isinstance(i, (cst.Tuple, cst.List, cst.Dict, cst.Set)) for i in inputs):
        return None  # nested inputs: `input_names` name the flattened tensors
    params = model_forward_params(ctx, ref)
    n_inputs = len(inputs) + len(kwargs_names)
    if len(input_names) > n_inputs:
        return None  # nested inputs: names refer to flattened tensors
    # Which input (by position) each name denotes.
    position: dict[str, int] = {n: i for i, n in enumerate(input_names)}
    if params is not None:
        if len(inputs) > len(params):
            return None
        input_params = params[: len(inputs)] + kwargs_names
        if any(k not in params for k in kwargs_names):
            return None
        for i, p in enumerate(input_params):
            position.setdefault(p, i)  # without input_names, keys may be parameter names
    elif kwargs_names:
        return None
    axes_by_pos: dict[int, str] = {}
    for el in value.elements:
        if not isinstance(el, cst.DictElement):
            return None
        key = _str_value(el.key)
        if key is None:
            return None
        if key in output_names and key not in position:
            continue
        pos = position.get(key)
        if pos is None or pos >= n_inputs or pos in axes_by_pos:
            return None
        axes = _axes_code(key, el.value)
        if axes is None:
            return None
        axes_by_pos[pos] = axes
    if params is not None:
        input_params = params[: len(inputs)] + kwargs_names
        items = [f'"{p}": {axes_by_pos.get(i, "None")}' for i, p in enumerate(input_params)]
        text = _wrap(ctx, arg, items, "{}")
    else:
        items = [axes_by_pos.get(i, "None") for i in range(n_inputs)]
        text = _wrap(ctx, arg, items, "()")
    assert arg.keyword is not None
    return [ctx.replace(arg.keyword, "dynamic_shapes"), ctx.replace(arg.value, text)]


def moved_axes(ctx: Context, call: ExportCall) -> list[tuple[str, str]]:
    """The `dynamic_axes` keys whose axes torch's conversion gives to an input of another
    name, as (key, input): it lists the dict's entries (outputs left out) in the dict's
    order, then the other `input_names`, and gives them to the inputs by position. Judged
    only where the dict, `input_names`, `output_names` and flat inputs are all literal."""
    arg = keyword_arg(call.node, "dynamic_axes")
    if arg is None:
        return []
    ref = exported_model(ctx, call)
    value = resolve_value(ctx, arg.value, ref)
    input_names = names_arg_of(ctx, call, "input_names", ref)
    output_names = names_arg_of(ctx, call, "output_names", ref)
    inputs = example_inputs(ctx, call, ref)
    if not isinstance(value, cst.Dict) or not input_names or output_names is None:
        return []
    if inputs is None or call.arg("kwargs") is not None or len(input_names) != len(inputs):
        return []
    if any(isinstance(i, (cst.Tuple, cst.List, cst.Dict, cst.Set)) for i in inputs):
        return []
    keys: list[str] = []
    dynamic: set[str] = set()
    for el in value.elements:
        key = _str_value(el.key) if isinstance(el, cst.DictElement) else None
        if key is None or (key not in input_names and key not in output_names):
            return []  # torch cannot convert it at all (the rule says so)
        if key in output_names and key not in input_names:
            continue
        keys.append(key)
        if not (isinstance(el.value, cst.Name) and el.value.value == "None"):
            dynamic.add(key)
    order = keys + [n for n in input_names if n not in keys]
    return [(k, n) for k, n in zip(order, input_names, strict=False) if k != n and k in dynamic]


def _kwargs_names(ctx: Context, call: ExportCall, ref: ModelRef | None) -> list[str] | None:
    arg = call.arg("kwargs")
    if arg is None:
        return []
    value = resolve_value(ctx, arg.value, ref)
    if not isinstance(value, cst.Dict):
        return None
    out = []
    for el in value.elements:
        if not isinstance(el, cst.DictElement):
            return None
        key = _str_value(el.key)
        if key is None:
            return None
        out.append(key)
    return out


def _axes_code(key: str, value: cst.BaseExpression) -> str | None:
    """`{0: "batch"}` kept as written; `[0, 2]` -> `{0: "x_dynamic_axes_1", 2: ...}`."""
    if isinstance(value, cst.Dict):
        parts = []
        for el in value.elements:
            if not isinstance(el, cst.DictElement) or literal_int(el.key) is None:
                return None
            if _str_value(el.value) is None:
                return None
            parts.append(f"{code_of(el.key)}: {code_of(el.value)}")
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, (cst.List, cst.Tuple)):
        parts = []
        for i, item in enumerate(value.elements):
            if not isinstance(item, cst.Element) or literal_int(item.value) is None:
                return None
            parts.append(f'{code_of(item.value)}: "{key}_dynamic_axes_{i + 1}"')
        return "{" + ", ".join(parts) + "}"
    if isinstance(value, cst.Name) and value.value == "None":
        return "None"
    return None


def _wrap(ctx: Context, arg: cst.Arg, items: list[str], brackets: str) -> str:
    """One line when it fits, else one entry per line indented like the argument."""
    trailing = "," if brackets == "()" and len(items) == 1 else ""
    text = brackets[0] + ", ".join(items) + trailing + brackets[1]
    span: Span = ctx.span(arg)
    if span.column - 1 + len("dynamic_shapes=") + len(text) <= 99:
        return text
    line = ctx.line_text(span.line)
    indent = line[: len(line) - len(line.lstrip())]
    pad = indent + "    "
    return brackets[0] + "\n" + "".join(f"{pad}{e},\n" for e in items) + indent + brackets[1]
