"""Phase 3, export: non-strict torch.export, as torch.onnx.export captures.

Reports what stops the capture (data-dependent guards, missing fake kernels,
other torch.export errors) at the line that causes it, the requested dynamic
dims that come out static (at the line where torch pinned them, or at the
example input when its size 0/1 is the cause), and output dims that are wrong
for other sizes (OLX818). Tracing on past a data-dependent guard finds the
other guards; what fails after that assumption is not reported.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import re
import time
import traceback
from typing import Any

import torch

from . import frames, torch_internals, wire
from .inputs import call_argument, example_site
from .record import Analysis, cause, finding, first_few, first_line, place, resize_inputs

PROBE_BUDGET_S = 30.0
"""Wall-time budget of the eager fake-mode runs that check output dims (OLX818)."""


def run(rec: Analysis) -> None:
    """Capture as torch.onnx.export does: non-strict torch.export, and when that fails,
    strict torch.export (its fallback strategy). The export succeeds when either does;
    the first capture's failure is then kept as information at its line. A failure that
    eval mode does not have is the model's mode (`_blame_training_mode`)."""
    before = len(rec.findings)
    _capture(rec, before)
    if rec.ep is None or rec.result.get("export_fails"):
        _blame_training_mode(rec, rec.findings[before:])


def _capture(rec: Analysis, before: int) -> None:
    _nonstrict(rec)
    # a graph traced on past a data-dependent guard is the analysis's, not torch's: the
    # non-strict capture failed there, and torch.onnx.export tries the strict one
    failed = rec.ep is None or rec.result.get("export_fails") or rec.result.get("assumed_branches")
    if (
        not failed
        or not rec.onnx_capture
        or rec.target.get("strict")
        or rec.failed.get("export") == "unsupported torch"
    ):
        return
    _strict_fallback(rec, rec.findings[before:])


def _strict_fallback(rec: Analysis, first: list[dict[str, Any]]) -> None:
    """torch.onnx.export's second capture strategy: strict torch.export (TorchDynamo), with
    the shapes refined once from torch's suggested fixes on a `UserError`, as torch does.
    When it succeeds, torch.onnx.export goes on with its graph: so does the analysis, and
    the first capture's findings become information (torch prints the same ❌ then ✅)."""
    dims = torch_internals.to_export_dims(rec.dynamic_shapes)
    try:
        try:
            ep = torch_internals.export(rec.model, rec.args, rec.kwargs, dims, strict=True)
        except Exception as e:
            refined = torch_internals.refined_shapes(e, dims)
            if refined is None:
                raise
            ep = torch_internals.export(rec.model, rec.args, rec.kwargs, refined, strict=True)
    except Exception as e:
        # torch.onnx.export then raises the first strategy's error: what is reported
        rec.result["skipped"]["strict_capture"] = (
            "torch.onnx.export's fallback capture (strict torch.export) fails too: "
            f"{type(e).__name__}: {first_line(str(e))}"
        )
        return
    finally:
        with contextlib.suppress(Exception):
            torch_internals.reset_dynamo()
    rec.ep = ep
    rec.failed.pop("export", None)
    rec.result.pop("export_fails", None)
    rec.result.pop("assumed_branches", None)
    rec.result["capture"] = "strict"
    for f in first:
        if f["kind"] not in _STEP1_KINDS:
            continue
        f["severity"] = "info"
        f["message"] = (
            "torch.onnx.export's first capture (non-strict torch.export) fails here, and "
            "its fallback (strict torch.export) succeeds: "
            + f["message"].removeprefix("torch.export failed: ")
        )
        f["notes"].insert(
            0,
            "The ONNX model comes from the strict capture (TorchDynamo), which traces this "
            "code instead of running it; torch.onnx.export prints the same two attempts.",
        )


def _blame_training_mode(rec: Analysis, found: list[dict[str, Any]]) -> None:
    """A capture that fails in training mode and succeeds in eval mode fails because the
    model is in training mode (YOLOv4's head returns its training outputs, whose `torch.cat`
    fails under export): one error at the export call's model, which the static OLX201
    flags as a warning, instead of torch's error deep in the training-only code. The
    failure's own findings go into it; the export is tried again only when it failed and
    some module is in training mode."""
    failures = [f for f in found if f["kind"] in _STEP1_KINDS and f.get("severity") != "info"]
    model = rec.model
    if (
        not failures
        or not isinstance(model, torch.nn.Module)
        or rec.failed.get("export") == "unsupported torch"
    ):
        return
    modes = {m: m.training for m in model.modules()}
    training = [name for name, m in model.named_modules() if m.training]
    if not training:
        return
    dims = torch_internals.to_export_dims(rec.dynamic_shapes)
    strategies = (False, True) if rec.onnx_capture else (bool(rec.target.get("strict")),)
    exported = False
    try:
        model.eval()
        for strict in strategies:
            try:
                ep = torch_internals.export(
                    model, rec.args, rec.kwargs, dims, onnx=rec.onnx_capture, strict=strict
                )
                exported = _leaked_constant(ep) is None
                break
            except Exception:
                continue
            finally:
                with contextlib.suppress(Exception):
                    torch_internals.reset_dynamo()
    finally:
        for m, was in modes.items():
            m.training = was
    if not exported:
        return
    site, name = _model_argument(rec)
    first = failures[0]
    where = _link(first) if first.get("file") else "torch"
    said = first["message"].removeprefix("torch.export failed: ")
    f = finding(
        wire.KIND_TRAINING_MODE,
        f"the export fails because {name} is in training mode: torch.export stops at {where} "
        f"({said}), and captures the model in eval mode; call `.eval()` on it before exporting",
        notes=[
            f"{len(training)} of its modules are in training mode (a module's mode until "
            "`.eval()` is called); in eval mode the same capture, with the same inputs and "
            "dynamic shapes, succeeds",
            *(
                ["its path: " + " -> ".join(_link(c) for c in first["chain"])]
                if first.get("chain")
                else []
            ),
            *(n for f in failures for n in f.get("notes") or ()),
        ],
        related=[
            {"file": f["file"], "line": f["line"], "message": f["message"]}
            for f in failures
            if f.get("file") and f.get("line")
        ],
    )
    place(f, site or example_site(rec))
    for old in failures:
        rec.findings.remove(old)
    rec.add(f)


def _model_argument(rec: Analysis) -> tuple[dict[str, Any] | None, str]:
    """The export call's model argument (where a finding about the model goes) and how a
    message names it: its text in backquotes, else "the model"."""
    site = call_argument(rec, "model", 0)
    return site, f"`{site['text']}`" if site and site.get("text") else "the model"


def _link(c: dict[str, Any]) -> str:
    return f"{os.path.basename(str(c['file']))}:{c['line']}"


_STEP1_KINDS = frozenset(
    {
        wire.KIND_EXPORT_FAILURE,
        wire.KIND_DATA_DEPENDENT,
        wire.KIND_CUSTOM_OP_NO_FAKE,
        wire.KIND_DIM_SPECIALIZED,
    }
)


def _nonstrict(rec: Analysis) -> None:
    """Non-strict torch.export; then, if it fails, the retries that let us go on.

    A constraint violation is retried with Dim.AUTO (each static dim is then
    reported where the code forces it); a data-dependent guard is reported
    and retried assuming every such condition holds, which finds the other
    conditions and yields a graph for the op checks.
    """
    requested = rec.dynamic_shapes
    auto = False
    lenient = False
    placeholder = 0  # index into torch_internals.PLACEHOLDER_INTS
    first_error: BaseException | None = None
    first_events: list[dict[str, Any]] = []
    assumed: list[dict[str, Any]] = []
    for _attempt in range(2 + len(torch_internals.PLACEHOLDER_INTS)):
        events: list[dict[str, Any]] = []
        guards: list[dict[str, Any]] = []
        symbolic: list[dict[str, Any]] = []
        assumed = []
        try:
            dims = torch_internals.to_export_dims(requested, auto=auto)
            with contextlib.ExitStack() as stack:
                stack.enter_context(torch_internals.record_specializations(events))
                stack.enter_context(torch_internals.record_guards(guards))
                stack.enter_context(torch_internals.record_symbolic_functions(symbolic))
                if lenient:
                    stack.enter_context(
                        torch_internals.assume_data_dependent(
                            assumed, torch_internals.PLACEHOLDER_INTS[placeholder]
                        )
                    )
                # The Dim.AUTO retry is plain torch.export: under torch.onnx's settings a
                # pinned dim stays dynamic behind a runtime assert, and the retry is there to
                # find where the code pins it.
                onnx = rec.onnx_capture and not auto
                rec.ep = torch_internals.export(rec.model, rec.args, rec.kwargs, dims, onnx=onnx)
        except torch_internals.Unsupported as e:
            rec.add(finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
            rec.failed["export"] = "unsupported torch"
            return
        except Exception as e:
            if first_error is None:
                first_error = e
                first_events = events
            if not auto and requested is not None and torch_internals.is_constraint_violation(e):
                auto = True
                continue
            if not lenient and torch_internals.is_data_dependent_error(e):
                _export_failure(rec, e)
                lenient = True
                continue
            numbers = [r for r in assumed if r.get("value") is not None]
            if (
                numbers
                and not torch_internals.is_data_dependent_error(e)
                and placeholder + 1 < len(torch_internals.PLACEHOLDER_INTS)
            ):
                placeholder += 1  # the failure may follow from the placeholder: another one
                continue
            rec.failed.setdefault("export", f"{type(first_error).__name__}")
            if lenient:
                _report_assumed(rec, assumed)
                if not torch_internals.missing_fake_impl_error(e):
                    # Tracing on past a data-dependent guard assumed values the data may
                    # not have: what fails after it is the assumption's, not the model's.
                    rec.result["skipped"]["continuation"] = (
                        f"tracing on past the data-dependent guard stopped: "
                        f"{type(e).__name__}: {first_line(str(e))}"
                    )
                    rec.ep = None
                    return
            _export_failure(rec, e, events=first_events if e is first_error else events)
            rec.ep = None
            return
        break
    if rec.ep is None:
        return
    if _leaked_tensor(rec):
        return
    if first_error is not None:
        rec.failed["export"] = f"{type(first_error).__name__}"
    torch_error = str(first_error) if auto and first_error is not None else None
    if (
        auto
        and first_error is not None
        and not torch_internals.onnx_export_refines(
            first_error,
            rec.model,
            rec.args,
            rec.kwargs,
            torch_internals.to_export_dims(requested),
        )
    ):
        # torch.onnx.export retries a UserError once with torch's suggested fixes; when that
        # retry fails too (or the error is another kind), the export stops at step 1/3.
        rec.result["export_fails"] = True
        rec.failed["export"] = "fails at step 1/3: a dynamic dim is pinned"
    if (
        not _report_specialized(rec, first_events + events, torch_error, auto=auto)
        and auto
        and first_error is not None
    ):
        _export_failure(rec, first_error, events=first_events)
    if lenient:
        _report_assumed(rec, assumed)
        rec.result["assumed_branches"] = True
    _report_constraints(rec)
    _report_symbolic_ignored(rec, symbolic)
    _report_training_ops(rec)
    try:
        _report_output_dims(rec, guards)
    except Exception as e:  # a probe must never cost the rest of the analysis
        rec.result["skipped"]["output_dims"] = f"{type(e).__name__}: {first_line(str(e))}"


def _training_ops(rec: Analysis) -> list[str]:
    """The dropouts the captured graph applies, each by the path of a module in training
    mode. BatchNorm in training mode is not counted: torch 2.13 writes it with its running
    statistics (onnxscript's torchlib sets `training = False`), so the file computes as the
    eval model does (measured: a Conv+BatchNorm model exported in training mode gives the
    eval model's ONNX Runtime outputs, 5e-7 apart); a training dropout stays a dropping
    `Dropout` in the file."""
    modules = dict(rec.model.named_modules()) if isinstance(rec.model, torch.nn.Module) else {}
    drops: list[str] = []
    aten = torch.ops.aten
    for node in rec.ep.graph.nodes:
        if node.op != "call_function":
            continue
        if node.target is not aten.dropout.default or len(node.args) <= 2:
            continue
        p = node.args[1]
        if not (node.args[2] is True and isinstance(p, float) and p > 0):
            continue
        stack = node.meta.get("nn_module_stack") or {}
        path = str(list(stack.values())[-1][0]) if stack else ""
        module = modules.get(path.removeprefix("L['self'].").replace("L__self___", ""))
        if module is not None and module.training and path not in drops:
            drops.append(path)
    return drops


def _report_training_ops(rec: Analysis) -> None:
    """An export in training mode that succeeds is silently wrong where the mode matters:
    the file's dropouts drop at random (BatchNorm is written with its running statistics:
    `_training_ops`). Said once, at the
    export call's model, with the layers it touches; the static OLX201 says the model may be
    in training mode, this that the graph computes so. Not for a script whose own call
    takes the TorchScript exporter, whose `training=` argument sets the mode itself, nor for
    a script's own `torch.export.export`, which a training flow (quantisation-aware training
    with PT2E) makes in training mode on purpose."""
    if (
        rec.ep is None
        or not rec.onnx_capture
        or rec.result.get("script_exporter")
        or rec.result.get("assumed_branches")
    ):
        return
    try:
        drops = _training_ops(rec)
    except Exception as e:  # introspection of the program must never stop the analysis
        rec.result["skipped"]["training_ops"] = f"{type(e).__name__}: {first_line(str(e))}"
        return
    if not drops:
        return
    site, name = _model_argument(rec)
    what = f"{len(drops)} dropouts that drop" if len(drops) > 1 else "1 dropout that drops"
    what += " at random"
    f = finding(
        wire.KIND_EXPORTED_TRAINING,
        f"{name} is exported in training mode: the graph computes {what}, so the ONNX "
        "model's outputs change from run to run; call `.eval()` on it before exporting",
        notes=[f"in the graph: {first_few(drops)}"],
        modules={"dropout": drops},
    )
    rec.add(place(f, site or example_site(rec)))


def _report_symbolic_ignored(rec: Analysis, applied: list[dict[str, Any]]) -> None:
    """Each autograd Function with a `symbolic` the capture ran, once per class, at the
    user's line that applies it: torch.onnx.export's dynamo path exports its `forward`
    (YOLOv6's and yolov7's end-to-end `ORT_NMS`: a random placeholder, not NMS), without an
    error. The static OLX410 says so where it can tell the class; End2End picks it at run
    time. Not for a script whose own call takes the TorchScript exporter, which uses it."""
    if rec.ep is None or rec.result.get("script_exporter"):
        return
    seen: set[Any] = set()
    for r in applied:
        cls = r["cls"]
        if cls in seen:
            continue
        seen.add(cls)
        name = cls.__qualname__
        f = finding(
            wire.KIND_SYMBOLIC_IGNORED,
            f"`{name}.apply(...)` is exported as what `{name}.forward` computes: its "
            "`symbolic` only feeds the TorchScript exporter, and torch.onnx.export (the "
            "dynamo exporter, the default since torch 2.9) ignores it without an error",
            notes=[
                f"Where `{name}.forward` is a placeholder for the op `symbolic` writes (an "
                "NMS, a TensorRT plugin), the ONNX model is silently wrong. Export with "
                "`dynamo=False`, or make the op a `torch.library.custom_op` with a fake "
                "implementation and its ONNX translation in `custom_translation_table=`."
            ],
            function=f"{cls.__module__}.{name}",
        )
        rec.add(rec.place_at(f, r["stack"]))


def _leaked_tensor(rec: Analysis) -> bool:
    """torch.export's own check that no tensor made while tracing leaked into the program's
    constants (`torch.autograd.grad` in forward leaks the weights its backward saved). torch
    skips it when the inputs are already fake, as they are here, so it is made again: a
    constant torch named `lifted_tensor_*` that holds no value of its own."""
    name = _leaked_constant(rec.ep)
    if name is not None:
        f = finding(
            wire.KIND_EXPORT_FAILURE,
            "torch.export failed: RuntimeError: We found a fake tensor in the exported "
            "program constant's list. This typically means our tracing system encountered "
            f"an op that we can't trace through (model attribute {name})",
            notes=[
                "A tensor made while tracing ended up as a constant of the program: "
                "autograd (`torch.autograd.grad`, `.backward()`) inside forward is the usual "
                "cause. torch.export traces the forward pass only; compute gradients "
                "outside the exported model, or write the derivative as forward ops."
            ],
        )
        rec.place_at(f, _constant_user_stack(rec.ep, name))
        if _DATA_ATTR.search(_source_line(f)):
            f["notes"] = [
                "`.data` in forward makes a new tensor that export cannot trace back to the "
                "module's buffer or parameter, so it is left as a constant made while "
                "tracing. Use the tensor itself, or `.detach()` (which export traces)."
            ]
        rec.add(f)
        rec.failed["export"] = "RuntimeError"
        rec.ep = None
        return True
    return False


def _leaked_constant(ep: Any) -> str | None:
    """The name of a constant of the program that is a tensor made while tracing."""
    for name, value in (getattr(ep, "constants", None) or {}).items():
        if not name.rpartition(".")[2].startswith("lifted_tensor"):
            continue
        if torch_internals.is_fake(value) and getattr(value, "constant", None) is None:
            return str(name)
    return None


_DATA_ATTR = re.compile(r"\.data\b(?!\s*\()")


def _source_line(f: dict[str, Any]) -> str:
    file, line = f.get("file"), f.get("line")
    return linecache.getline(file, line) if isinstance(file, str) and isinstance(line, int) else ""


def _constant_user_stack(ep: Any, name: str) -> list[dict[str, Any]]:
    """The source stack of the first node that reads constant `name`."""
    sig = getattr(ep, "graph_signature", None)
    wanted = {
        spec.arg.name
        for spec in getattr(sig, "input_specs", ())
        if getattr(spec, "target", None) == name
    }
    for node in ep.graph.nodes:
        if node.op == "placeholder" and node.name in wanted:
            for user in node.users:
                stack = frames.parse_stack_trace(user.meta.get("stack_trace"))
                if stack:
                    return stack
    return []


def _report_assumed(rec: Analysis, assumed: list[dict[str, Any]]) -> None:
    """Each further data-dependent site found while tracing on past the first ones."""
    known = {(f["file"], f["line"]) for f in rec.findings if f["kind"] == wire.KIND_DATA_DEPENDENT}
    for a in assumed:
        f = finding(wire.KIND_DATA_DEPENDENT, "")
        rec.place_at(f, a["stack"])
        key = (f["file"], f["line"])
        if key in known or f["file"] is None:
            continue  # (none: a site in torch's own code, past the first; nothing to point at)
        known.add(key)
        if a.get("value") is None:
            f["message"] = f"torch.export cannot decide the data-dependent condition {a['expr']}"
            f["notes"] = [
                "Python control flow on a tensor value cannot be exported: use "
                "torch.cond or torch.where, or tell export what holds with "
                "torch._check(...).",
                "Found by tracing on as if the earlier data-dependent conditions held.",
            ]
        else:
            f["message"] = (
                f"torch.export needs a Python number here, but it depends on the data "
                f"({a['expr']}): int()/float() of a tensor, or a data-dependent value "
                "used where Python needs a real number"
            )
            f["notes"] = [
                "Keep it a tensor (torch ops, torch.where), or use `.item()` (torch.export "
                "keeps it symbolic) and state its range with torch._check(...).",
                f"Found by tracing on with the placeholder value {a['value']}; what "
                "follows was checked for that value only.",
            ]
        rec.add(f)


def _export_failure(
    rec: Analysis,
    e: BaseException,
    placeholders: list[dict[str, Any]] | None = None,
    events: list[dict[str, Any]] | None = None,
) -> None:
    """torch.export's error at its line; a `Constraints violated` error (no line of its
    own) at the line where the ShapeEnv pinned a dim to a constant."""
    text = str(e)
    notes = []
    if placeholders:
        tried = ", ".join(map(str, torch_internals.PLACEHOLDER_INTS))
        notes.append(
            "This may follow from the placeholder values (tried: "
            f"{tried}) given to the data-dependent numbers reported above; with real "
            "data it may not happen."
        )
    if "Suggested fixes:" in text:
        fix = text.split("Suggested fixes:", 1)[1].strip().split("\n\n")[0]
        notes.append("torch suggests: " + " ".join(fix.split()))
    if torch_internals.missing_fake_impl_error(e):
        kind = wire.KIND_CUSTOM_OP_NO_FAKE
        notes.append(
            "Register a fake (meta) implementation with `@<op>.register_fake` so "
            "torch.export can trace the op without running it."
        )
    elif torch_internals.is_data_dependent_error(e):
        kind = wire.KIND_DATA_DEPENDENT
        notes.append(
            "Python control flow on a tensor value cannot be exported: use torch.cond "
            "or torch.where, or tell export what holds with torch._check(...)."
        )
    else:
        kind = wire.KIND_EXPORT_FAILURE
    f = finding(kind, f"torch.export failed: {cause(e)}", notes=notes)
    pinned = None
    if torch_internals.is_constraint_violation(e) and events:
        pinned = next((ev for ev in reversed(events) if rec.locate(ev["stack"])[0]), None)
    if pinned is not None:
        rec.place_at(f, pinned["stack"])
        notes.append(
            f"the dim was pinned to {pinned['value']} on this line "
            f"({pinned.get('reason') or 'specialised'})"
        )
    else:
        rec.place_exc(f, e)
    files = {fr.filename.replace("\\", "/") for fr in frames.exception_stack(e)}
    if any(f.endswith(_OBSERVING) for f in files):
        notes.append(_fake_quantize_advice())
    quantized = rec.result.get("quantized_at")
    if quantized and "PackedParams" in text:
        notes.append(
            "torch.export cannot export eager-mode quantized modules (torch.ao.nn.quantized, "
            "packed int8 weights). Export the float model and quantize the ONNX file "
            "(onnxruntime.quantization), or quantize after export with PT2E "
            "(torch.ao.quantization.quantize_pt2e)."
        )
        if not f.get("file"):
            called = _first_quantized_call(rec)
            if called is not None:
                rec.place_at(f, called)
            else:
                place(f, quantized)
    built = rec.built_at(e) if not f.get("file") else None
    if built is not None:
        site, cls = built
        place(f, site)
        notes.append(f"the failing code is inside torch's own `{cls}`, built on this line")
    if not f.get("file") and rec.factory_loc is not None:
        # all of the failing code is torch's own (the model is a torch module such as
        # FakeQuantize): the line where the target gives the model
        place(f, example_site(rec))
    rec.add(f)


_OBSERVING = ("torch/ao/quantization/fake_quantize.py", "torch/ao/quantization/observer.py")


def _first_quantized_call(rec: Analysis) -> list[Any] | None:
    """The stack of the forward's first call of an eager-mode quantized module (its
    `QuantStub`, now `Quantize`, or a quantized `Linear`): torch.export fails on their
    packed weights before running any of the model's code, so its error has no line; this
    is the line in the model where the int8 part starts. Only for a model built with real
    tensors (eager int8 is), run once on its real example."""
    if rec.fake_mode is not None or not isinstance(rec.model, torch.nn.Module):
        return None
    found: list[list[Any]] = []

    def pre(_module: Any, _args: Any) -> None:
        if not found:
            found.append(list(traceback.extract_stack()))

    handles = [
        m.register_forward_pre_hook(pre)
        for m in rec.model.modules()
        if type(m).__module__.startswith(("torch.ao.nn.quantized", "torch.nn.quantized"))
    ]
    if not handles:
        return None
    try:
        with torch.no_grad(), contextlib.suppress(Exception):
            rec.model(*rec.args, **rec.kwargs)
    finally:
        for h in handles:
            h.remove()
    if not found or rec.locate(found[0])[0] is None:
        return None
    return found[0]


def _fake_quantize_advice() -> str:
    """What to do about torch.ao's FakeQuantize: its forward branches on its own flag
    buffers (`observer_enabled`, `fake_quant_enabled`), which torch.export traces as
    data, so it fails there whether the observers are on or off (pytorch#167063)."""
    return (
        "torch.ao's FakeQuantize (QAT) branches on its flag buffers (`observer_enabled`, "
        "`fake_quant_enabled`), which torch.export cannot decide on, with the observers "
        "on or off: export the float model and quantize after export (PT2E: torchao's "
        "prepare_qat_pt2e / convert_pt2e, or onnxruntime.quantization on the ONNX file), "
        "or convert the QAT model first (torch.ao.quantization.convert)."
    )


def _report_specialized(
    rec: Analysis, events: list[dict[str, Any]], torch_error: str | None, *, auto: bool = False
) -> bool:
    """Compare the requested dynamic dims with the exported inputs; report each static one.

    A dim whose example size is 0 or 1 is specialised by torch itself (it treats
    those sizes as special): that is the example's fault, reported at the line
    of the factory that made it, not the model's.
    """
    if rec.ep is None:
        return False
    placeholders = _user_input_vals(rec.ep)
    examples = torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))
    reported = False
    for flat, dim, name, label in rec.requested_dims():
        if flat >= len(placeholders) or placeholders[flat] is None:
            continue
        shape = placeholders[flat].shape
        if dim >= len(shape):
            continue
        value = torch_internals.static_int(shape[dim])
        if value is None:
            continue
        example_size = _example_size(examples, flat, dim)
        info = {"input": label, "dim": dim, "name": name, "value": value}
        if example_size in (0, 1) and value == example_size:
            if auto and rec.onnx_capture:
                # pinned by the plain torch.export retry (Dim.AUTO), which specialises sizes
                # 0 and 1; under torch.onnx.export's settings the dim stays dynamic (timm's
                # ViT at batch 1 fails on its height and width only)
                continue
            f = finding(
                wire.KIND_DIM_SPECIALIZED,
                f"dim {name!r} ({label}.shape[{dim}]) was requested dynamic, but the example "
                f"input has size {value} there: torch specialises sizes 0 and 1, so the "
                f"export fixes it to {value}; give the example a size of 2 or more",
                notes=[
                    "torch.export treats sizes 0 and 1 as special (broadcasting, empty "
                    "tensors) and never makes them dynamic; the model's code is not the cause."
                ],
                dim={**info, "cause": "example"},
            )
            rec.add(place(f, rec.input_lines.get(flat) or rec.factory_loc))
            reported = True
            continue
        notes = [
            "torch.onnx.export fails at step 1/3 (torch.export) on this dim."
            if rec.result.get("export_fails")
            else "torch.onnx.export would silently export this dim as static (it applies "
            "torch's suggested fix), so the ONNX model would only accept this size."
        ]
        if torch_error:
            notes.append("torch.export said: " + _said_of(torch_error, label, dim))
        f = finding(
            wire.KIND_DIM_SPECIALIZED,
            f"dim {name!r} ({label}.shape[{dim}]) was requested dynamic, but the "
            f"code forces it to {value}",
            notes=notes,
            dim=info,
        )
        ev = _specialization_event(events, label, dim, value, rec)
        if ev is not None:
            rec.place_at(f, ev["stack"])
            if ev.get("reason"):
                f["notes"].append(f"torch pinned it here ({ev['reason']})")
        else:
            place(f, rec.class_loc())
        rec.add(f)
        reported = True
    return reported


def _said_of(torch_error: str, label: str, dim: int) -> str:
    """torch's line about this input's dim (its message lists one line per dim), else its
    first line."""
    lines = torch_error.split("\n")[1:]
    mine = next((ln.strip() for ln in lines if f"['{label}'].shape[{dim}]" in ln), None)
    return mine or first_line(torch_error.split("\n", 1)[-1])


def _specialization_event(
    events: list[dict[str, Any]], label: str, dim: int, value: int, rec: Analysis
) -> dict[str, Any] | None:
    """The ShapeEnv replacement that pinned this dim: the one naming the input's dim,
    else the first that set a symbol to this value at a visible line."""
    wanted = f"['{label}'].size()[{dim}]"
    named = [ev for ev in events if any(s.endswith(wanted) for s in ev["sources"])]
    same_value = [ev for ev in events if ev["value"] == str(value)]
    for ev in [*named, *same_value]:
        if rec.locate(ev["stack"])[0] is not None:
            return ev
    return None


def _report_output_dims(rec: Analysis, guards: list[dict[str, Any]]) -> None:
    """Report each output dim the export baked while it follows a requested dynamic dim.

    Criterion: for each requested dim that stayed dynamic in the exported
    program (symbol `s`), and each probe size P of it (1, 2, n-1, n+1, n+3
    and just outside the range export inferred for `s`, within the bounds
    the user asked for), the exported output shapes are evaluated at s=P and
    compared with the model run eagerly, in fake mode (no data), on inputs
    where every dim of that name has size P. An axis where they differ is
    reported once: the export cannot be valid at P. It is placed at the first
    guard on `s` (`if x.shape[0] > 2:`) that is false at P, i.e. the size
    condition whose other branch eager took; else at the line that made the
    output. Probes where eager itself fails (a size the model rejects) are
    skipped.
    """
    if rec.ep is None or rec.fake_mode is None:
        return
    requested = rec.requested_dims()
    if not requested:
        return
    try:
        env = torch_internals.shape_env_of(rec.ep)
        hints = torch_internals.symbol_hints(env)
        placeholders = _user_input_vals(rec.ep)
        outputs = _user_output_nodes(rec.ep)
    except Exception:  # introspection of the program must never stop the analysis
        return
    if env is None or not hints or not outputs:
        return
    groups = _dim_symbols(rec, placeholders, hints)
    relations = _report_relations(rec, guards, groups, hints)
    found: dict[tuple[int, int], dict[str, Any]] = {}
    deadline = time.perf_counter() + PROBE_BUDGET_S
    for name, members in groups.items():
        symbols = {m[2] for m in members}
        for size in _probe_sizes(rec, members, hints):
            if name in relations and size % relations[name][0] not in relations[name][1]:
                continue  # a size the model does not support (OLX825 says so)
            if time.perf_counter() > deadline:
                rec.result["skipped"]["output_dims"] = (
                    f"stopped after {PROBE_BUDGET_S:g} s of eager probes"
                )
                break
            values = dict(hints)
            for sym in symbols:
                values[sym] = size
            eager = _eager_shapes(rec, {(f, d): size for f, d, _ in members})
            if eager is None or len(eager) != len(outputs):
                continue
            for i, (node, shape) in enumerate(zip(outputs, eager, strict=True)):
                val = node.meta.get("val")
                if not isinstance(val, torch.Tensor) or shape is None:
                    continue
                if val.dim() != len(shape):
                    continue
                for axis, d in enumerate(val.shape):
                    expr = torch_internals.size_expr(d)
                    if expr is None or not torch_internals.free_symbols(expr) <= set(values):
                        continue
                    exported = torch_internals.substitute(expr, values)
                    if exported is None or shape[axis] is None or exported == shape[axis]:
                        continue
                    if (i, axis) in found:
                        found[(i, axis)]["probes"].append((size, shape[axis], exported))
                        continue
                    found[(i, axis)] = {
                        "output": i,
                        "node": node,
                        "axis": axis,
                        "name": name,
                        "symbols": symbols,
                        "expr": expr,
                        "static": not torch_internals.free_symbols(expr),
                        "probes": [(size, shape[axis], exported)],
                        "guard": _failing_guard(guards, symbols, values, rec.root),
                    }
    blamed = _blame_examples(rec, groups, found, guards, hints)
    for r in found.values():
        if r["name"] not in blamed:
            rec.add(_output_dim_finding(rec, r))


def _blame_examples(
    rec: Analysis,
    groups: dict[str, list[tuple[int, int, Any]]],
    found: dict[tuple[int, int], dict[str, Any]],
    guards: list[dict[str, Any]],
    hints: dict[Any, int],
) -> set[str]:
    """The dims whose baked output sizes are the example's doing, each reported once at
    the example's line; their names.

    An input dim can stay dynamic while the model's inside is traced at the example's size:
    with a size-1 example, a guard such as `Eq(s0, 1)` in an op holds, torch keeps it (as a
    runtime assertion the ONNX model drops) and specialises what follows (RT-DETR's encoder
    flattens to `[1, 256, 400]`). Sizes 0 and 1 are special to torch; with an example of 2
    or more such guards go the general way. So when an output dim comes out as the constant
    the example has on a requested dim of that name, the example is the cause to fix first
    (the guard that holds only at that size, if any, is named in a note).
    """
    examples = torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))
    labels = {(f, d): label for f, d, _n, label in rec.requested_dims()}
    blamed: set[str] = set()
    for name, members in groups.items():
        sizes = [(f, d, _example_size(examples, f, d)) for f, d, _sym in members]
        small = [(f, d, n) for f, d, n in sizes if n in (0, 1)]
        mine = [r for r in found.values() if r["name"] == name]
        if not small:
            continue
        flat, dim, size = small[0]
        if not any(r["static"] and str(r["expr"]) == str(size) for r in mine):
            # A guard that holds only at this size (`Eq(s0, 1)`) is not enough on its own:
            # nn.MultiheadAttention leaves one in torch's program, and its ONNX file still
            # runs right at other sizes; where it does not, --verify says so (OLX811).
            continue
        held = _held_only_at(guards, {m[2] for m in members}, hints, size)
        label = labels.get((flat, dim), f"input {flat}")
        others = [labels.get((f, d), f"input {f}") + f".shape[{d}]" for f, d, _ in small[1:]]
        outputs = ", ".join(f"output {r['output']} dim {r['axis']}" for r in mine)
        probe, eager, exported = mine[0]["probes"][0]
        what = (
            f"{outputs} come out fixed (eager PyTorch gives {eager} at {name}={probe}, "
            f"the export {exported})"
        )
        if held is not None:
            fr, _chain = rec.locate(held["stack"])
            where = f" ({os.path.basename(fr['file'])}:{fr['line']})" if fr else ""
            cond = _rename_symbols(held["expr"], {m[2] for m in members}, name)
            what += f"; torch.export assumed `{cond}`{where}, which holds only at this size"
        notes = [
            f"With this example the input stays dynamic, but the model is traced at size "
            f"{size}: {what}.",
            "torch.export treats sizes 0 and 1 as special (broadcasting, empty tensors): a "
            "guard like `size == 1` holds for this example and what follows is traced for "
            "that size only. With an example of size 2 or more, code that really forces the "
            "size is reported at its own line.",
        ]
        if others:
            notes.append("the same holds for " + ", ".join(others))
        head = f"torch specialises sizes 0 and 1, so the export is only right at size {size}"
        f = finding(
            wire.KIND_DIM_SPECIALIZED,
            f"dim {name!r} ({label}.shape[{dim}]) was requested dynamic, but the example "
            f"input has size {size} there: {head}; give the example a size of 2 or more",
            notes=notes,
            dim={"input": label, "dim": dim, "name": name, "value": size, "cause": "example"},
        )
        rec.add(place(f, rec.input_lines.get(flat) or rec.factory_loc))
        blamed.add(name)
    return blamed


def _example_size(examples: list[Any], flat: int, dim: int) -> int | None:
    """The size of the example input `flat` (a flat index of the inputs) on `dim`."""
    example = examples[flat] if flat < len(examples) else None
    if isinstance(example, torch.Tensor) and dim < example.dim():
        return int(example.shape[dim])
    return None


def _held_only_at(
    guards: list[dict[str, Any]], symbols: set[Any], hints: dict[Any, int], size: int
) -> dict[str, Any] | None:
    """The first guard on `symbols` that holds at the example's size and not at 2 or 3
    (`Eq(s0, 1)`, `s0 <= 1`): the trace is only valid at the example's size."""
    for g in guards:
        free = torch_internals.free_symbols(g["expr"])
        if not free or not free <= set(hints) or not free & symbols:
            continue
        # every size at the example's size moves together (two inputs with that batch)
        moving = symbols | {s for s in free if hints.get(s) == size}
        at = {**hints, **{s: size for s in moving}}
        if torch_internals.substitute(g["expr"], at) is not True:
            continue
        if all(
            torch_internals.substitute(g["expr"], {**hints, **{s: n for s in moving}}) is False
            for n in (2, 3)
        ):
            return g
    return None


def _dim_symbols(
    rec: Analysis, placeholders: list[Any], hints: dict[Any, int]
) -> dict[str, list[tuple[int, int, Any]]]:
    """Each requested dim that stayed dynamic: name -> (flat input, dim, its symbol)."""
    groups: dict[str, list[tuple[int, int, Any]]] = {}
    for flat, dim, name, _label in rec.requested_dims():
        val = placeholders[flat] if flat < len(placeholders) else None
        if not isinstance(val, torch.Tensor) or dim >= val.dim():
            continue
        expr = torch_internals.size_expr(val.shape[dim])
        syms = torch_internals.free_symbols(expr)
        if len(syms) != 1 or expr not in syms or expr not in hints:
            continue  # static (OLX804 reports it) or not a plain symbol
        groups.setdefault(name, []).append((flat, dim, expr))
    return groups


RELATION_SIZES = range(2, 129)
"""The sizes a dynamic dim's guards are tried at to find a periodic relation."""


def _report_relations(
    rec: Analysis,
    guards: list[dict[str, Any]],
    groups: dict[str, list[tuple[int, int, Any]]],
    hints: dict[Any, int],
) -> dict[str, Relation]:
    """Each requested dim that a guard or a deferred assertion restricts to some residues
    (`Eq(2*((s0 - 1)//2) + 2, s0)`: s0 even), at the first such guard's line, once per line,
    with the relation torch.export itself suggests (`h = 4*_h`) when it gives one. A bound
    (`s0 > 2`, a branch taken) is not a relation: OLX804/OLX818 deal with those. Returns
    name -> (modulus, residues the model supports)."""
    found: dict[str, Relation] = {}
    by_line: dict[tuple[str, int], dict[str, Any]] = {}
    symbol_names = {m[2]: name for name, members in groups.items() for m in members}
    for g in guards:
        syms = torch_internals.free_symbols(g["expr"])
        if len(syms) != 1:
            continue
        sym = next(iter(syms))
        name = symbol_names.get(sym)
        if name is None or name in found:
            continue
        values = {**hints}
        holds = []
        for v in _relation_sizes(rec, groups[name]):
            values[sym] = v
            holds.append((v, torch_internals.substitute(g["expr"], values)))
        relation = _periodic(holds)
        fr, chain = rec.locate(g["stack"])
        if relation is None or fr is None:
            continue
        found[name] = relation
        entry = by_line.setdefault((fr["file"], fr["line"]), {"frame": fr, "chain": chain})
        entry.setdefault("dims", []).append((name, g["expr"], sym))
    if not found:
        return found
    try:
        torch_says = torch_internals.suggested_relations(
            rec.model, rec.args, rec.kwargs, rec.dynamic_shapes
        )
    except Exception:  # the extra export only words the message
        torch_says = {}
    for name, (k, r) in torch_says.items():
        if name in found:
            found[name] = (k, frozenset({r}))
    for entry in by_line.values():
        rec.add(_relation_finding(entry, found, set(torch_says)))
    return found


Relation = tuple[int, frozenset[int]]


def _relation_sizes(rec: Analysis, members: list[tuple[int, int, Any]]) -> list[int]:
    lo, hi = RELATION_SIZES.start, RELATION_SIZES.stop - 1
    for f, d, _ in members:
        b_lo, b_hi = rec.dim_bounds.get((f, d), (None, None))
        lo = max(lo, b_lo or lo)
        hi = min(hi, b_hi or hi)
    return list(range(lo, hi + 1))


def _periodic(holds: list[tuple[int, bool | int | None]]) -> Relation | None:
    """(k, R) when the guard holds exactly at the sizes whose residue mod k is in R (the
    smallest such k > 1), else None."""
    if any(h is None for _, h in holds) or all(h for _, h in holds) or not any(h for _, h in holds):
        return None
    for k in range(2, len(holds) // 2 + 1):
        good = frozenset(v % k for v, h in holds if h)
        if len(good) < k and all(bool(h) == (v % k in good) for v, h in holds):
            return k, good
    return None


def _relation_words(name: str, relation: Relation) -> tuple[str, str]:
    """("even sizes", "`h = 2*Dim(...)`") for one dim's relation."""
    k, good = relation
    if good == {0}:
        return ("even sizes" if k == 2 else f"multiples of {k}"), f"`{name} = {k}*Dim(...)`"
    if len(good) == 1:
        (r,) = good
        return f"sizes of {k}*n + {r}", f"`{name} = {k}*Dim(...) + {r}`"
    rs = " or ".join(map(str, sorted(good)))
    return f"sizes that are {rs} more than a multiple of {k}", f"`{name}` in such sizes"


def _relation_finding(
    entry: dict[str, Any], relations: dict[str, Relation], from_torch: set[str]
) -> dict[str, Any]:
    dims = entry["dims"]
    names = [d[0] for d in dims]
    words = [_relation_words(n, relations[n]) for n in names]
    kinds = {w for w, _h in words}
    sizes = (
        f"only for {next(iter(kinds))}"
        if len(kinds) == 1
        else "only for some sizes ("
        + "; ".join(f"{n}: {w}" for n, (w, _h) in zip(names, words, strict=True))
        + ")"
    )
    hint = ", ".join(h for _w, h in words)
    which = " and ".join(f"{n!r}" for n in names)
    dim_word, verb = ("dims", "work") if len(names) > 1 else ("dim", "works")
    conds = "; ".join(f"`{_rename_symbols(e, {s}, n)}`" for n, e, s in dims)
    asks = "torch.export asks for" if set(names) <= from_torch else "declare"
    f = finding(
        wire.KIND_DIM_RELATION,
        f"the dynamic {dim_word} {which} {verb} {sizes} here ({asks} {hint}); "
        "torch.onnx.export does not check it, and the ONNX model fails or is wrong at the "
        "other sizes",
        notes=[
            f"torch.export assumes {conds} on this line. With a named Dim it stops with "
            '"Constraints violated" and suggests the relation; torch.onnx.export accepts '
            "the model and its ONNX file does not check the sizes it is given.",
            "Declare the relation in dynamic_shapes, or pad the input in forward so that "
            "every size works.",
        ],
        relation=[
            {"dim": n, "modulus": relations[n][0], "residues": sorted(relations[n][1])}
            for n in names
        ],
    )
    return place(f, entry["frame"], entry["chain"])


def _probe_sizes(
    rec: Analysis, members: list[tuple[int, int, Any]], hints: dict[Any, int]
) -> list[int]:
    n = hints[members[0][2]]
    sizes = {1, 2, n - 1, n + 1, n + 3}
    lo, hi = torch_internals.symbol_range(rec.ep, members[0][2])
    if lo is not None:
        sizes.add(lo - 1)
    if hi is not None:
        sizes.add(hi + 1)
    want_lo, want_hi = 1, None
    for f, d, _ in members:
        b_lo, b_hi = rec.dim_bounds.get((f, d), (None, None))
        if b_lo is not None:
            want_lo = max(want_lo, b_lo)
        if b_hi is not None:
            want_hi = b_hi if want_hi is None else min(want_hi, b_hi)
    return sorted(
        s for s in sizes if s != n and s >= want_lo and (want_hi is None or s <= want_hi)
    )[:6]


def _eager_shapes(rec: Analysis, changes: dict[tuple[int, int], int]) -> list[Any] | None:
    """The model's tensor output shapes, run eagerly on fake inputs resized per `changes`."""
    try:
        with (
            rec.fake_mode,
            torch_internals.lenient_scalars(rec.fake_mode),
            # `nonzero`, boolean masks: data-dependent sizes become unbacked symbols, as
            # under export, instead of ending the probe (piper's VITS, whose length is one)
            torch_internals.unbacked_sizes(rec.fake_mode),
            torch.no_grad(),
        ):
            args, kwargs = resize_inputs((rec.args, rec.kwargs), changes, _zeros_like)
            out = rec.model(*args, **kwargs)
            leaves = torch.utils._pytree.tree_leaves(out)
            return [
                tuple(_probed_size(s) for s in t.shape)
                for t in leaves
                if isinstance(t, torch.Tensor)
            ]
    except Exception:
        return None


def _probed_size(s: Any) -> int | None:
    """A probe's output size; None where it depends on the data (an unbacked symbol)."""
    if isinstance(s, int):
        return s
    expr = torch_internals.size_expr(s)
    return int(expr) if expr is not None and expr.is_number else None


def _output_dim_finding(rec: Analysis, r: dict[str, Any]) -> dict[str, Any]:
    name = r["name"]
    size, eager, exported = r["probes"][0]
    shown = _rename_symbols(r["expr"], r["symbols"], name)
    if r["static"]:
        head = (
            f"output {r['output']} dim {r['axis']} is exported as the constant "
            f"{shown}, but it follows the dynamic dim {name!r}"
        )
    else:
        head = (
            f"output {r['output']} dim {r['axis']} is exported as {shown}, which is "
            f"wrong for other sizes of the dynamic dim {name!r}"
        )
    msg = f"{head}: eager PyTorch gives {eager} at {name}={size}, the export {exported}"
    notes = []
    guard = r["guard"]
    fr = None
    if guard is not None:
        fr = guard["frame"]
        cond = _rename_symbols(guard["expr"], r["symbols"], name)
        notes.append(
            f"torch.export assumed `{cond}` on this line and traced only that branch; "
            "the ONNX model does not check it, so for other sizes it declares (and may "
            "compute) the wrong shape."
        )
    if len(r["probes"]) > 1:
        notes.append(
            "also differs at "
            + ", ".join(f"{name}={p} (eager {e}, export {x})" for p, e, x in r["probes"][1:])
        )
    notes.append(
        "Make the output size follow the input (`x[: min(2, x.shape[0])]` is traced as a "
        "function of the size), branch with torch.cond, or do not ask for this dim to be "
        "dynamic."
    )
    if fr is None:
        fr = frames.pick(frames.parse_stack_trace(r["node"].meta.get("stack_trace")), rec.root)
    return place(
        finding(
            wire.KIND_OUTPUT_DIM_SPECIALIZED,
            msg,
            notes=notes,
            output_dim={
                "output": r["output"],
                "dim": r["axis"],
                "name": name,
                "exported": shown,
                "probes": r["probes"],
            },
        ),
        fr or rec.result.get("model", {}).get("class_loc"),
    )


def _report_constraints(rec: Analysis) -> None:
    """Record the range constraints export inferred for dynamic dims (for the report)."""
    rc = getattr(rec.ep, "range_constraints", None) or {}
    rec.result["range_constraints"] = {str(k): str(v) for k, v in rc.items()}


def _user_output_nodes(ep: Any) -> list[Any]:
    """The FX nodes of the user-visible outputs (not buffer mutations), in order."""
    names = list(getattr(ep.graph_signature, "user_outputs", []))
    out_node = next(n for n in ep.graph.nodes if n.op == "output")
    leaves = [a for a in torch.utils._pytree.tree_leaves(out_node.args) if hasattr(a, "meta")]
    by_name = {a.name: a for a in leaves}
    return [by_name[n] for n in names if n in by_name]


def _failing_guard(
    guards: list[dict[str, Any]], symbols: set[Any], values: dict[Any, int], root: str
) -> dict[str, Any] | None:
    """The first guard on one of `symbols`, at a user line, that is false at `values`."""
    for g in guards:
        free = torch_internals.free_symbols(g["expr"])
        if not free & symbols or not free <= set(values):
            continue
        if torch_internals.substitute(g["expr"], values) is not False:
            continue
        fr = frames.pick(g["stack"], root)
        if fr is not None:
            return {"expr": g["expr"], "frame": fr}
    return None


def _rename_symbols(expr: Any, symbols: set[Any], name: str) -> str:
    """`s77 + s12 - 1` -> `2*batch - 1`: the dim's name for the symbols torch gave it."""
    return str(torch_internals.rename_symbols(expr, symbols, name))


def _zeros_like(leaf: torch.Tensor, shape: list[int]) -> torch.Tensor:
    return torch.zeros(shape, dtype=leaf.dtype, device=leaf.device)


def _user_input_vals(ep: Any) -> list[Any]:
    sig = ep.graph_signature
    names = list(getattr(sig, "user_inputs", []))
    by_name = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [by_name[n].meta.get("val") if n in by_name else None for n in names]
