"""Phase 5, translate: the decomposed program to ONNX (weightless), version conversion,
and onnx.checker with shape inference on the structure."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from . import frames, torch_internals, wire
from .inputs import call_argument
from .record import Analysis, cause, finding, first_line, place

_FUNCTION = re.compile(r"Error when calling function '\w*\(<function (\w+)")


def run(rec: Analysis) -> None:
    if rec.result.get("unsupported_ops"):
        rec.result["skipped"]["translate"] = (
            "skipped: torch.onnx.export stops at the first op without a translation"
        )
        return
    try:
        rec.onnx_program = torch_internals.to_onnx(
            rec.decomposed, rec.registry, rec.opset_or_default(), rec.dynamic_shapes
        )
    except torch_internals.Unsupported as e:
        rec.add(finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
        rec.failed["translate"] = "unsupported torch"
        return
    except Exception as e:
        if rec.result.get("assumed_branches"):
            # the graph is one the model only makes if the data-dependent conditions the
            # export stopped at hold: torch.onnx.export never gets here
            rec.result["skipped"]["translate"] = (
                "the graph traced past the data-dependent conditions does not translate: "
                f"{cause(e)}"
            )
            return
        rec.add(_translation_failure(rec, e))
        rec.failed["translate"] = f"{type(e).__name__}"
        return
    problem = torch_internals.convert_opset(rec.onnx_program, rec.opset_or_default())
    if problem and (
        rec.result.get("script_exporter")
        or rec.result.get("script_call_removed")
        or rec.result.get("script_call_fails")
        or rec.result.get("script_save_fails")
    ):
        # the script's call takes the TorchScript exporter, which writes its opset itself, or
        # writes nothing (`torch.onnx._export` raises, an open file as `f` fails at the
        # save): no file at the wrong opset
        rec.result["skipped"]["opset"] = f"conversion to opset {rec.opset_or_default()}: {problem}"
        if not rec.result.get("script_exporter"):
            _after_the_switch(rec, problem)
    elif problem:
        rec.add(_opset_kept(rec, problem))
    rec.result["onnx"] = _onnx_summary(rec.onnx_program, rec.opset_or_default(), rec)
    _name_collisions(rec, rec.onnx_program.model)


def _after_the_switch(rec: Analysis, problem: str) -> None:
    """The script's call fails (a removed export function, arguments it no longer takes):
    once the user fixes the call, torch.onnx.export would write another opset than the call
    asks for (YOLOX's `torch.onnx._export(..., opset_version=11)`). Said on the call's
    finding, not as a finding of its own: no file is written today."""
    call = rec.result.get("script_call") or {}
    written = int(rec.onnx_program.model.opset_imports.get("", 0))
    for f in rec.findings:
        if f["kind"] == wire.KIND_EXPORT_FAILURE and f.get("line") == call.get("line"):
            once = (
                "once the call saves (to a path, or with `external_data=False`)"
                if rec.result.get("script_save_fails")
                else "once the call runs (torch.onnx.export, with the arguments it takes)"
            )
            f["notes"] += [
                f"{once}, it writes opset {written}, not the requested "
                f"{rec.opset_or_default()}: ask for opset 18 or more",
                f"the conversion: {first_line(problem)}",
            ]
            return


def _opset_kept(rec: Analysis, problem: str) -> dict[str, Any]:
    """The requested opset torch.onnx.export does not write: it exports at its own lowest
    opset (18), converts down, and keeps 18 with a log line when the conversion fails."""
    wanted = rec.opset_or_default()
    written = int(rec.onnx_program.model.opset_imports.get("", 0))
    f = finding(
        wire.KIND_OPSET_KEPT,
        f"torch.onnx.export writes this model at opset {written}, not the requested "
        f"{wanted}: the conversion down from {written} fails on it, and torch only logs "
        '"The model was not modified"; ask for opset 18 or more, or convert the file '
        "yourself",
        notes=[f"the conversion: {first_line(problem)}"],
        opset={"requested": wanted, "written": written},
    )
    if rec.result.get("assumed_branches"):
        # found on the graph traced past the data-dependent conditions torch.export stops
        # at (piper's VITS): torch writes no file today, this is what comes after the fix
        f["severity"] = "info"
        f["message"] = "once torch.export gets past the data-dependent conditions: " + f["message"]
    return place(f, call_argument(rec, "opset_version") or rec.factory_loc)


def _name_collisions(rec: Analysis, model: Any) -> None:
    """`input_names` / `output_names` that name a value the graph already has a name for:
    torch.onnx.export renames the graph's inputs and outputs without checking, and ONNX
    Runtime refuses the file ("Duplicate definition of name"). Checked on the graph before
    torch's optimizer, whose node names it keeps."""
    renamed: dict[int, tuple[str, int, str]] = {}  # id(value) -> (which, index, new name)
    for which, values in (
        ("input_names", model.graph.inputs),
        ("output_names", model.graph.outputs),
    ):
        for i, (value, name) in enumerate(zip(values, rec.io_names.get(which, ()), strict=False)):
            renamed[id(value)] = (which, i, name)
    if not renamed:
        return
    owners: dict[str, list[tuple[Any, Any]]] = {}  # final name -> (value, producing node)
    seen: set[int] = set()

    def add(value: Any, node: Any) -> None:
        if id(value) in seen or not value.name:
            return
        seen.add(id(value))
        name = renamed[id(value)][2] if id(value) in renamed else value.name
        owners.setdefault(name, []).append((value, node))

    for v in model.graph.inputs:
        add(v, None)
    for v in model.graph.initializers.values():
        add(v, None)
    for node in _all_nodes(model.graph):
        if node.op_type in ("Identity", "Constant"):  # torch's optimizer folds these away
            continue
        for v in node.outputs:
            add(v, node)
    for v in model.graph.outputs:
        add(v, v.producer())
    for name, holders in owners.items():
        mine = [h for h in holders if id(h[0]) in renamed]
        if len(holders) < 2 or not mine:
            continue
        which, i, _ = renamed[id(mine[0][0])]
        other = next(h for h in holders if h is not mine[0])
        what = _value_role(other, model)
        notes = [
            "torch.onnx.export renames the graph's inputs and outputs to the names given "
            "after it has named every other value; it does not check for clashes.",
            "Pick names the graph does not use (e.g. `logits`, `boxes`).",
        ]
        trace = other[1].metadata_props.get("pkg.torch.onnx.stack_trace") if other[1] else None
        at = frames.pick(frames.parse_stack_trace(trace), rec.root) if trace else None
        if at is not None:
            notes.insert(1, f"the other `{name}` comes from {at['file']}:{at['line']}")
        rec.add(
            place(
                finding(
                    wire.KIND_NAME_COLLISION,
                    f"{which}[{i}] {name!r} is also the name of {what} in the ONNX graph: "
                    'the file is written, and ONNX Runtime refuses it ("Duplicate '
                    f'definition of name ({name})")',
                    notes=notes,
                    name=name,
                ),
                rec.factory_loc,
            )
        )


def _value_role(holder: tuple[Any, Any], model: Any) -> str:
    value, node = holder
    if node is not None:
        return f"the output of a {node.op_type} node"
    if value.name in model.graph.initializers:
        return "a weight"
    return "another input"


def _translation_failure(rec: Analysis, e: BaseException) -> dict[str, Any]:
    text = str(e)
    stack: list[dict[str, Any]] = []
    m = re.search(r"translating node %(\w+)", text)
    if m is not None:
        for node in rec.decomposed.graph.nodes:
            if node.name == m.group(1):
                stack = frames.parse_stack_trace(node.meta.get("stack_trace"))
                break
    fn = _FUNCTION.search(text + "".join(str(c) for c in (e.__cause__, e.__context__) if c))
    where = f" in {fn.group(1)}" if fn else ""
    f = finding(
        wire.KIND_TRANSLATION_FAILURE,
        f"ONNX translation (step 3/3) failed{where}: {cause(e)}",
        notes=[first_line(text)],
    )
    return rec.place_at(f, stack) if stack else rec.place_exc(f, e)


def _dim_str(d: Any) -> str | int:
    if isinstance(d, int):
        return d
    value = getattr(d, "value", None)
    return str(value if value is not None else d)


def _onnx_summary(program: Any, opset: int, rec: Analysis) -> dict[str, Any]:
    """Op histogram, opset, signature, checker and shape inference on the weightless graph."""
    model = program.model
    hist: Counter[str] = Counter()
    nodes = 0
    graphs = [model.graph, *model.functions.values()]
    for g in graphs:
        for node in _all_nodes(g):
            nodes += 1
            domain = node.domain or ""
            hist[f"{domain}::{node.op_type}" if domain else node.op_type] += 1

    def sig(values: Any) -> list[dict[str, Any]]:
        return [
            {
                "name": v.name,
                "dtype": str(v.dtype).split(".")[-1] if v.dtype is not None else "?",
                "shape": [_dim_str(d) for d in v.shape] if v.shape is not None else None,
            }
            for v in values
        ]

    out: dict[str, Any] = {
        "opset": int(model.opset_imports.get("", 0)),
        "requested_opset": opset,
        "nodes": nodes,
        "op_histogram": dict(hist.most_common()),
        "inputs": sig(model.graph.inputs),
        "outputs": sig(model.graph.outputs),
        "initializers": len(model.graph.initializers),
    }
    checker_ok, problem = _check_structure(model, name_fix=rec.optimized)
    out["checker"] = "ok" if checker_ok else problem
    if not checker_ok:
        rec.failed["translate"] = "onnx.checker"
        rec.add(
            place(
                finding(wire.KIND_CHECKER_FAILURE, f"the ONNX model fails the checker: {problem}"),
                _onnx_node_frame(model, problem, rec.root),
            )
        )
    return out


def _onnx_node_frame(model: Any, problem: str, root: str) -> dict[str, Any] | None:
    """The user's line of the ONNX node an error names, from the exporter's node metadata."""
    m = re.search(r"node name: ([^\s)]+)", problem)
    if m is None:
        return None
    for g in [model.graph, *model.functions.values()]:
        for node in _all_nodes(g):
            if node.name == m.group(1):
                trace = node.metadata_props.get("pkg.torch.onnx.stack_trace")
                return frames.pick(frames.parse_stack_trace(trace), root)
    return None


def _all_nodes(graph: Any) -> Any:
    for node in graph:
        yield node
        for attr in node.attributes.values():
            sub = getattr(attr, "value", None)
            if hasattr(sub, "__iter__") and hasattr(sub, "inputs") and hasattr(sub, "outputs"):
                yield from _all_nodes(sub)
            elif isinstance(sub, (list, tuple)):
                for s in sub:
                    if hasattr(s, "inputs") and hasattr(s, "outputs"):
                        yield from _all_nodes(s)


def _check_structure(model: Any, name_fix: bool = True) -> tuple[bool, str]:
    """onnx.checker (full, with shape inference) on the graph with initializers as inputs.

    The graph is the translation before torch's optimizer; when the export call optimizes
    (the default), a name given twice (an attribute `self.mean` and a `mean` the exporter
    names, pytorch#168211) is renamed by its NameFixPass, so a failure is checked again
    after that pass and only kept if it stays.

    Fake initializers cannot be serialized; turning them into graph inputs keeps
    the structure valid and checkable.
    """
    try:
        import onnx
        from onnx_ir.passes.common import NameFixPass
    except ImportError as e:
        return False, f"onnx/onnx_ir not importable: {e}"
    try:
        onnx.checker.check_model(_checkable(model), full_check=True)
    except Exception as e:
        problem = f"{type(e).__name__}: {first_line(str(e))}"
        if not name_fix:
            return False, problem
        NameFixPass()(model)  # (in place, as torch's optimizer does)
        try:
            onnx.checker.check_model(_checkable(model), full_check=True)
        except Exception:
            return False, problem
    return True, ""


def _checkable(model: Any) -> Any:
    """The model's proto with its (fake) initializers as graph inputs."""
    import onnx_ir as ir

    inits = dict(model.graph.initializers)
    saved_inputs = list(model.graph.inputs)
    # Unused outputs (e.g. batch norm's saved mean in eval) carry placeholder shapes
    # from the FX graph that shape inference contradicts; torch.onnx.export's default
    # optimizer removes them, so they are not the user's problem: forget their shapes.
    graph_outputs = {id(v) for v in model.graph.outputs}
    saved_shapes = []
    for node in _all_nodes(model.graph):
        for out in node.outputs:
            if id(out) not in graph_outputs and not out.uses() and out.shape is not None:
                saved_shapes.append((out, out.shape))
                out.shape = None
    try:
        model.graph.initializers.clear()
        already = {v.name for v in saved_inputs}
        for v in inits.values():
            # listed once: converted to an opset below 18, a program on fake weights can list
            # a parameter both as a graph input and as an initializer (batch norm's weight
            # and bias), and the checker rejects a name that is an input twice
            if v.name not in already:
                model.graph.inputs.append(v)
        proto = ir.serde.serialize_model(model)
    finally:
        model.graph.inputs.clear()
        model.graph.inputs.extend(saved_inputs)
        for k, v in inits.items():
            model.graph.initializers[k] = v
        for out, shape in saved_shapes:
            out.shape = shape
    return proto
