"""Phase 4, decompose: the program decomposed as torch.onnx.export does, and every node
checked against the ONNX registry (all failing ops at once, each at its line)."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import torch

from . import frames, torch_internals, wire
from .record import Analysis, cause, finding, first_few, place
from .workarounds import workaround


def _non_leaf_parameters(model: Any, e: BaseException) -> list[str]:
    """Which parameters make torch's "Cannot assign non-leaf Tensor to parameter" (YOLOv6's
    conv+BN fusion copies into a weight outside `torch.no_grad()`, which gives the weight a
    `grad_fn`): the decomposition re-assigns every parameter and refuses those."""
    if "non-leaf Tensor to parameter" not in str(e) or not isinstance(model, torch.nn.Module):
        return []
    found = [(n, p) for n, p in model.named_parameters() if p.grad_fn is not None]
    if not found:
        return []
    how = type(found[0][1].grad_fn).__name__
    return [
        f"{len(found)} of the model's parameters are not leaves "
        f"({first_few([n for n, _ in found])}; made by "
        f"`{how}`): they were computed from tensors that require grad, such as a "
        "`weight.copy_(...)` when fusing convolution and batch norm. Compute them under "
        "`with torch.no_grad():`, or export a model whose parameters are leaves."
    ]


def run(rec: Analysis) -> None:
    opset = rec.opset_or_default()
    try:
        reg = torch_internals.registry(opset, rec.translation_table)
        rec.decomposed = torch_internals.decompose(rec.ep, reg)
    except torch_internals.Unsupported as e:
        rec.add(finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
        rec.failed["decompose"] = "unsupported torch"
        return
    except Exception as e:
        if rec.result.get("assumed_branches") and torch_internals.is_data_dependent_error(e):
            # the graph was traced on as if the data-dependent conditions held (the export
            # stops at step 1/3 before this): a condition the decomposition meets is one of
            # those, already reported (OLX802) where the code makes it
            rec.result["skipped"]["decompose"] = (
                f"the decomposition of the graph traced past the data-dependent guard: {cause(e)}"
            )
            rec.failed["decompose"] = f"{type(e).__name__}"
            return
        f = finding(
            wire.KIND_TRANSLATION_FAILURE,
            f"ONNX decomposition (step 2/3) failed: {cause(e)}",
            notes=_non_leaf_parameters(rec.model, e),
        )
        stack = failing_node_stack(rec.ep, e)
        if stack:
            rec.place_at(f, stack)
        else:
            rec.place_exc(f, e)
        rec.add(f)
        rec.failed["decompose"] = f"{type(e).__name__}"
        return
    rec.registry = reg
    groups: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
    fx_hist: Counter[str] = Counter()
    for gm in rec.decomposed.graph_module.modules():
        graph = getattr(gm, "graph", None)
        if graph is None:
            continue
        for node in graph.nodes:
            if node.op != "call_function" or not isinstance(node.target, torch._ops.OpOverload):
                continue
            name = str(node.target)
            fx_hist[name] += 1
            ok, message = torch_internals.dispatch(node, reg)
            if ok:
                continue
            stack = frames.parse_stack_trace(node.meta.get("stack_trace"))
            fr, chain = rec.locate(stack)
            key = (name, fr["file"] if fr else None, fr["line"] if fr else None)
            g = groups.setdefault(
                key,
                {
                    "op": name,
                    "custom": torch_internals.is_custom_op(node.target),
                    "count": 0,
                    "reason": message,
                    "frame": fr,
                    "chain": chain,
                },
            )
            g["count"] += 1
    rec.result["fx_op_histogram"] = dict(fx_hist.most_common())
    unsupported = []
    for g in groups.values():
        times = f" ({g['count']} nodes)" if g["count"] > 1 else ""
        if g["custom"]:
            kind = wire.KIND_CUSTOM_OP_NO_TRANSLATION
            msg = f"custom op {g['op']} has no ONNX translation{times}"
            note = (
                "Pass custom_translation_table={torch.ops."
                + g["op"].rsplit(".", 1)[0]
                + ".default: onnxscript_fn} to torch.onnx.export (and name the table in "
                "the target's exporter.translation_table)."
            )
        else:
            kind = wire.KIND_UNSUPPORTED_OP
            msg = f"ATen op {g['op']} has no ONNX translation{times}"
            note = workaround(g["op"])
        rec.add(
            place(
                finding(kind, msg, notes=[note, g["reason"]], op=g["op"]),
                g["frame"],
                g["chain"],
            )
        )
        unsupported.append(
            {
                "op": g["op"],
                "count": g["count"],
                "file": g["frame"]["file"] if g["frame"] else None,
                "line": g["frame"]["line"] if g["frame"] else None,
                "workaround": note,
            }
        )
    rec.result["unsupported_ops"] = unsupported
    if unsupported:
        rec.failed["decompose"] = f"{len(unsupported)} op(s) without an ONNX translation"


_EXECUTING = re.compile(r"While executing %(\w+)")


def failing_node_stack(program: Any, exc: BaseException) -> list[dict[str, Any]]:
    """The source stack of the FX node an error was raised on: torch's "Original
    traceback" in the message or notes, else the named node's `stack_trace`."""
    texts = [str(exc), *map(str, getattr(exc, "__notes__", None) or ())]
    cause = exc.__cause__ or exc.__context__
    if cause is not None:
        texts += [str(cause), *map(str, getattr(cause, "__notes__", None) or ())]
    for text in texts:
        if "Original traceback" in text:
            stack = frames.parse_stack_trace(text.split("Original traceback", 1)[1])
            if stack:
                return stack
    graph = getattr(program, "graph", None)
    for text in texts:
        m = _EXECUTING.search(text)
        if m is None or graph is None:
            continue
        for node in graph.nodes:
            if node.name == m.group(1):
                return frames.parse_stack_trace(node.meta.get("stack_trace"))
    return []
