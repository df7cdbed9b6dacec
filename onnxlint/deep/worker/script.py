"""Phase 1 for a script target: run the user's export script up to its export call.

Most people who export a model already have the code a factory would hold: the export
script. The script runs here as `__main__` (its folder and the project root on `sys.path`,
the project root as working directory, `sys.argv` from the target), under fake tensors so
that no real weights are allocated. The export functions are replaced for the run by a
capture: the call the target names (its line in the script, or the first one reached)
records what it would export (model, args, kwargs, dynamic shapes, options) and ends the
script; export calls reached before it are skipped (they return an inert stand-in). When
the script then stops on that account (it reads the file a skipped call did not write)
before the target's call, the call is made directly (`script_direct`).

What does not matter to the analysis is faked and listed in the result (`script_skipped`):
`torch.load` (a present file's structure on fake tensors, else an empty checkpoint),
`load_state_dict`, `from_pretrained` of transformers models (built from their config),
pretrained-weights downloads (torch.hub, gdown), `.cuda()` / `.to("cuda")` (kept on the
CPU); `deepcopy` and dtype/device moves of the fake model work (`script_fakes`); required
output and checkpoint arguments get a value (`script_args`). What cannot be faked (a
missing dataset, a required config or model name, a download, a value read from tensor
data) stops the run with a finding at the line that stopped it.
"""

from __future__ import annotations

import builtins
import contextlib
import os
import socket
import sys
import types
from typing import Any

import torch

from . import (
    frames,
    load,
    overlay,
    script_axes,
    script_direct,
    script_loop,
    torch_internals,
    wire,
)
from .record import Analysis, finding, first_line, place
from .script_args import required_arguments
from .script_explain import (
    advice,
    assertion_text,
    exit_text,
    refused_arguments,
    removed_call,
    shadowed_exporter,
    swallowed_error,
    unsaveable_destination,
)
from .script_fakes import (
    Captured,
    CpuOnly,
    EmptyCheckpoint,
    Inert,
    ScriptRun,
    ScriptStop,
    bound_arguments,
    captures,
    fakes,
    no_network,
    quiet_stdio,
)
from .script_shadow import project_first


def run(rec: Analysis) -> bool:
    """Run the script to its export call and put what the call exports on the record."""
    script = os.path.realpath(str(rec.target["script"]))
    line = rec.target.get("script_line")
    name = rec.target.get("name") or script
    state = ScriptRun(script=script, line=int(line) if line else None)
    EmptyCheckpoint.last = None
    rec.result["factory_loc"] = {"file": script, "line": int(line or 1), "name": "<script>"}
    try:
        source = overlay.read_text(script)  # a rewrite's proof runs the rewritten script
        code = compile(source, script, "exec")
    except (OSError, UnicodeDecodeError, SyntaxError) as e:
        at = getattr(e, "lineno", None) or 1
        rec.add(
            place(
                finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: cannot read the script: {type(e).__name__}: "
                    f"{first_line(str(e))}",
                ),
                {"file": script, "line": at},
            )
        )
        rec.failed["load"] = "script unreadable"
        return False
    loop = script_loop.loop_around(source, state.line) if state.line else None
    state.repeat = script_loop.on_pass if loop is not None else None
    made: dict[int, int] = {}
    stop, error, exit_code = _runs(rec, state, code, made)
    own = _own_stop(state, error) if stop is None and error is not None else None
    if own is not None and error is not None and state.line:
        again = _call_directly(rec, state, source, code, own, error)
        if again is not None:
            state, stop, made = again
    rec.result["script_skipped"] = [
        {"what": what, "file": file, "line": ln, "count": n}
        for (what, file, ln), n in state.skipped.items()
    ]
    # the required arguments that got a placeholder, in order (the editor names them)
    rec.result["script_filled"] = list(dict.fromkeys(state.filled.values()))
    rec.result["script_passed"] = [
        {"kind": c.kind, "file": c.file, "line": c.line} for c in state.passed
    ]
    if stop is None:
        _stopped(rec, state, name, error, exit_code)
        return False
    if not _take(rec, state, stop.call, made, name):
        return False
    if loop is not None and state.later:
        rec.loop_calls = calls = [stop.call, *state.later]
        rec.result["script_loop"] = script_loop.note(state.line or 0, loop, state.passes, calls)
    return True


def _runs(
    rec: Analysis,
    state: ScriptRun,
    code: types.CodeType,
    made: dict[int, int],
    direct: script_direct.Direct | None = None,
) -> tuple[ScriptStop | None, BaseException | None, Any]:
    """The script's run (then `direct`'s call), once more with placeholders for values a
    fake tensor does not have when the first run needs them."""
    stop: ScriptStop | None = None
    error: BaseException | None = None
    exit_code: Any = None
    for assume in (False, True):
        made.clear()
        state.passed.clear()
        state.skipped.clear()
        state.captured = None
        state.later.clear()
        state.passes = 0
        stop, error, exit_code = _run_once(rec, state, code, made, assume=assume, direct=direct)
        if error is None or not torch_internals.is_fake_limitation(error):
            break
        # A value computed in __init__ from tensor data (drop-path rates from
        # torch.linspace(...).tolist()) does not exist on fake tensors: run again with
        # placeholders for such values, as a factory's build does.
    return stop, error, exit_code


def _call_directly(
    rec: Analysis,
    state: ScriptRun,
    source: str,
    code: types.CodeType,
    own: tuple[str, Captured],
    error: BaseException,
) -> tuple[ScriptRun, ScriptStop, dict[int, int]] | None:
    """The target's call made directly (`script_direct`) when the run stopped on the
    analysis's own account before it: (the new run's state, its capture, its example
    lines), with a note on the result saying so; None when that does not reach it."""
    assert state.line is not None
    direct = script_direct.direct_call(source, state.script, state.line)
    if direct is None:
        return None
    again = ScriptRun(script=state.script, line=state.line, repeat=state.repeat)
    made: dict[int, int] = {}
    stop, _error, _exit = _runs(rec, again, code, made, direct)
    if stop is None:
        return None
    doing, writer = own
    at = _stop_line(rec, state, error)
    stopped = f"stopped{at} " + doing.replace("that call", f"the export call at line {writer.line}")
    rec.result["script_direct"] = script_direct.note(direct, state.line, stopped)
    return again, stop, made


def _run_once(
    rec: Analysis,
    state: ScriptRun,
    code: types.CodeType,
    made: dict[int, int],
    *,
    assume: bool,
    direct: script_direct.Direct | None = None,
) -> tuple[ScriptStop | None, BaseException | None, Any]:
    """One run of the script: (the capture, or the error that stopped it, or the exit code).
    With `direct`, the script runs as an imported module, then that call is made."""
    real = bool(rec.target.get(wire.RETRY_REAL_TENSORS))  # a rewrite's proof: real weights
    rec.fake_mode = None if real else torch_internals.fake_mode_class()(allow_non_fake_inputs=True)
    notebook = state.script.lower().endswith(".ipynb")
    # a notebook (its code cells as one module, the parent's overlay) runs as Jupyter runs
    # it: no package, in its own folder
    package: str | None = None
    top = os.path.dirname(state.script)
    if not notebook:
        package, top = _package_of(state.script, code, rec.root)
    module = types.ModuleType("__main__" if direct is None else _imported_name(state, package))
    module.__dict__.update(
        {
            "__file__": state.script,
            "__builtins__": builtins,
            "__spec__": None,
            "__package__": package,
        }
    )
    saved_argv, saved_path = list(sys.argv), list(sys.path)
    sys.argv = [state.script, *map(str, rec.target.get("argv") or ())]
    folder = os.path.dirname(state.script)
    first = [top, rec.root] if package else [folder, top, rec.root]
    for p in reversed(list(dict.fromkeys(first))):
        if p not in sys.path:
            sys.path.insert(0, p)
    if package and folder not in sys.path:
        # `python -m pkg.tools.export` does not put the script's folder on sys.path: there it
        # would shadow packages (`easyocr/easyocr.py` for `import easyocr`); at the end it
        # still serves a script that imports a module beside it by its bare name
        sys.path.append(folder)
    sys.modules[module.__name__] = module
    with contextlib.suppress(OSError):
        os.chdir(folder if notebook else rec.root)
    os.environ["ONNXLINT_DEEP"] = "1"
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    # hydra re-raises the task's error instead of printing it and exiting 1: the stop is
    # then at the script's line that raised
    os.environ.setdefault("HYDRA_FULL_ERROR", "1")
    try:
        with contextlib.ExitStack() as stack:
            state.shadowed = stack.enter_context(
                project_first(list(dict.fromkeys([*first, folder])))
            )
            stack.enter_context(captures(state))
            stack.enter_context(fakes(state))
            stack.enter_context(required_arguments(state))
            stack.enter_context(no_network())
            stack.enter_context(quiet_stdio(state))
            if rec.fake_mode is not None:
                stack.enter_context(rec.fake_mode)
            stack.enter_context(load.fake_safe_init())
            stack.enter_context(load.ExampleLines(code, made, state.script))
            stack.enter_context(CpuOnly(state))
            stack.enter_context(script_loop.budget(state))
            if assume and rec.fake_mode is not None:
                # a dry run's boolean indexing or NMS gets unbacked sizes, as in explain
                stack.enter_context(torch_internals.lenient_scalars(rec.fake_mode))
                stack.enter_context(torch_internals.unbacked_sizes(rec.fake_mode))
            exec(code, module.__dict__)
            if direct is not None and direct.ready(module):
                direct.call(module.__dict__)
    except ScriptStop as s:
        return s, None, None
    except KeyboardInterrupt:
        raise
    except BaseException as e:
        if state.captured is not None:  # the script caught the stop and went on: it was made
            return ScriptStop(state.captured), None, None
        return (None, None, e) if isinstance(e, SystemExit) else (None, e, None)
    finally:
        # the script stays `__main__`: its classes' source is found through it
        sys.argv, sys.path[:] = saved_argv, saved_path
    if state.captured is not None:
        return ScriptStop(state.captured), None, None
    return None, None, None


def _stop_line(rec: Analysis, state: ScriptRun, error: BaseException) -> str:
    """` at line N` where `error` stopped the run, when that line is the script's own."""
    fr, _chain = rec.locate(rec.exception_frames(error))
    return f" at line {fr['line']}" if fr and fr.get("file") == state.script else ""


def _imported_name(state: ScriptRun, package: str | None) -> str:
    """The name `import` gives the script (`pkg.tools.export`, `export_to_onnx`), unless a
    module of that name is loaded already: then one of the analysis's own."""
    stem = os.path.splitext(os.path.basename(state.script))[0]
    name = f"{package}.{stem}" if package else stem
    if not all(p.isidentifier() for p in name.split(".")) or name in sys.modules:
        return "__onnxlint_script__"
    return name


def _package_of(script: str, code: types.CodeType, root: str) -> tuple[str | None, str]:
    """A script inside a package (`pkg/tools/export.py` next to `__init__.py` files) runs as
    `python -m pkg.tools.export` would: `__package__` set, so its relative imports work, and
    the folder above the top package on `sys.path`. Else (None, its own folder).

    Folders without `__init__.py` above the package are namespace packages
    (`optimum/exporters/onnx/__main__.py` imports `from ...commands`): when the script's
    relative imports climb higher than the `__init__.py` files go, the package extends
    through such folders, never above the project root."""
    folder = os.path.dirname(script)
    parts: list[str] = []
    top = folder
    while os.path.isfile(os.path.join(top, "__init__.py")) and os.path.basename(top).isidentifier():
        parts.insert(0, os.path.basename(top))
        top = os.path.dirname(top)
    if not parts:
        return None, folder
    needed = _relative_depth(code)
    root = os.path.realpath(root)
    while len(parts) < needed and os.path.basename(top).isidentifier():
        if top == root or not top.startswith(root + os.sep):
            break
        parts.insert(0, os.path.basename(top))
        top = os.path.dirname(top)
    return ".".join(parts), top


def _relative_depth(code: types.CodeType) -> int:
    """How many package levels the script's relative imports need (`from ...x` needs 3)."""
    import dis

    depth = 0
    stack = [code]
    while stack:
        c = stack.pop()
        consts: list[Any] = [None, None]  # IMPORT_NAME follows LOAD_CONST level, fromlist
        for ins in dis.get_instructions(c):
            if ins.opname == "IMPORT_NAME" and isinstance(consts[-2], int):
                depth = max(depth, consts[-2])
            consts.append(ins.argval if ins.opname == "LOAD_CONST" else None)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return depth


def _take(rec: Analysis, state: ScriptRun, call: Captured, made: dict[int, int], name: str) -> bool:
    """Turn the captured call into the model and inputs the later phases analyse."""
    rec.result["factory_loc"] = {"file": call.file, "line": call.line, "name": "<script>"}
    rec.result["script_call"] = {
        "kind": call.kind,
        "name": call.name,
        "file": call.file,
        "line": call.line,
    }
    rec.autograd = call.mode  # the phases run in it, as the script's call would
    gone = removed_call(call) or refused_arguments(call) or shadowed_exporter(call, state.shadowed)
    if gone:
        # analysed as the torch.onnx.export it stood for, but the script's own call fails
        rec.add(
            place(
                finding(wire.KIND_EXPORT_FAILURE, f"target {name!r}: {gone}"),
                {"file": call.file, "line": call.line},
            )
        )
        rec.result["script_call_removed"] = gone
    unsaved = None if gone else unsaveable_destination(call, bound_arguments(call))
    if unsaved:
        # the export runs as analysed; the file is not written
        rec.add(
            place(
                finding(wire.KIND_EXPORT_FAILURE, f"target {name!r}: {unsaved}"),
                {"file": call.file, "line": call.line},
            )
        )
        rec.result["script_save_fails"] = unsaved
    problem = _unpack_call(rec, call)
    if problem:
        rec.add(
            place(
                finding(wire.KIND_TARGET_ERROR, f"target {name!r}: {problem}"),
                {"file": call.file, "line": call.line},
            )
        )
        rec.failed["load"] = "export call not analysable"
        return False
    _real_constants(rec.model)
    for i, leaf in enumerate(torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))):
        at = made.get(id(leaf))
        if at is not None:
            rec.input_lines[i] = {"file": state.script, "line": at, "name": "<script>"}
    rec.result["model"] = load.summary(rec)
    return True


def take_later(rec: Analysis, call: Captured) -> str | None:
    """A loop's later pass (`script_loop`) as the model and inputs of `rec`, a record of its
    own; why not, when its call cannot be analysed."""
    rec.result["factory_loc"] = {"file": call.file, "line": call.line, "name": "<script>"}
    rec.autograd = call.mode
    problem = _unpack_call(rec, call)
    if problem is None:
        _real_constants(rec.model)
    return problem


_CONSTANT_LIMIT = 64 * 2**20  # bytes: anchors, grids and masks are small


def _real_constants(model: Any) -> None:
    """Plain tensor attributes of the model's modules (not parameters nor buffers: YOLO's
    grids and anchors, often in lists) were made on fake tensors by the script run; torch
    lifts them as constants, and torch 2.13's `run_decompositions` crashes the process
    (SIGSEGV) on a fake constant. They get real zeros of the same shape and dtype (their
    values do not matter to the analysis, as the weights do not)."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    if not isinstance(model, torch.nn.Module):
        return

    def real(v: Any) -> Any:
        if isinstance(v, FakeTensor) and not isinstance(v, torch.nn.Parameter):
            size = v.numel() * v.element_size()
            if size > _CONSTANT_LIMIT or any(not isinstance(d, int) for d in v.shape):
                return v
            with unset_fake_temporarily():
                return torch.zeros(tuple(v.shape), dtype=v.dtype)
        if isinstance(v, list) and any(isinstance(x, FakeTensor) for x in v):
            return [real(x) for x in v]
        if isinstance(v, tuple) and any(isinstance(x, FakeTensor) for x in v):
            return type(v)(real(x) for x in v) if not hasattr(v, "_fields") else v
        return v

    for m in model.modules():
        for k, v in list(vars(m).items()):
            if k.startswith("_"):
                continue
            new = real(v)
            if new is not v:
                object.__setattr__(m, k, new)


def _unpack_call(rec: Analysis, call: Captured) -> str | None:
    """Model, args, kwargs, dynamic shapes and options of the captured call, or why not."""
    a = bound_arguments(call)
    kwargs: dict[str, Any] = {}
    shapes: Any = None
    if call.kind in ("onnx", "dynamo_export"):
        model = a.get("model")
        args = a.get("args", ())
        kwargs = dict(a.get("kwargs") or {})
        if call.kind == "dynamo_export":
            args = tuple(a.get("model_args", ()))
            kwargs = dict(a.get("model_kwargs") or {})
        shapes = a.get("dynamic_shapes")
        opset = a.get("opset_version")
        if isinstance(opset, int) and not rec.opset:
            rec.opset = opset
        if a.get("optimize") is False:
            rec.optimized = False
        table = a.get("custom_translation_table")
        if isinstance(table, dict) and table and rec.translation_table is None:
            rec.translation_table = dict(table)  # the call's own translations, as torch uses them
        if a.get("dynamo") is False:
            rec.result["script_exporter"] = "the TorchScript exporter (dynamo=False)"
        for key in ("input_names", "output_names"):
            names = a.get(key)
            if isinstance(names, (list, tuple)) and all(isinstance(n, str) for n in names):
                rec.io_names[key] = list(names)
    elif call.kind == "torch.export":
        model = a.get("mod")
        args = a.get("args", ())
        kwargs = dict(a.get("kwargs") or {})
        shapes = a.get("dynamic_shapes")
        rec.onnx_capture = False  # the user's own torch.export call, without torch.onnx's settings
        if a.get("strict"):
            rec.target["strict"] = True
    elif call.kind == "trace":
        model = a.get("func")
        args = a.get("example_inputs", ())
        kwargs = dict(a.get("example_kwarg_inputs") or {})
    else:
        return (
            "`torch.jit.script` takes no example inputs, so the analysis has nothing to run "
            "the model on; declare a factory that returns (model, args) (`# onnxlint: target`)"
        )
    pending = model._call if isinstance(model, Inert) else None
    if pending is not None and pending.kind == "torch.export":
        # torch.onnx.export(ep) of an ExportedProgram the script made before: analyse the
        # module it was made from, with its inputs and dynamic shapes.
        inner = bound_arguments(pending)
        rec.onnx_capture = False  # the program comes from the script's torch.export call
        model, args = inner.get("mod"), inner.get("args", ())
        kwargs = dict(inner.get("kwargs") or {})
        shapes = shapes or inner.get("dynamic_shapes")
    if isinstance(model, torch.onnx.ExportableModule):
        ex_args, ex_kwargs = model.example_arguments()
        args = args or ex_args
        kwargs = kwargs or dict(ex_kwargs or {})
        shapes = shapes or model.dynamic_shapes()
    if isinstance(model, torch.export.ExportedProgram):
        model = model.module()
    if isinstance(args, torch.Tensor):
        args = (args,)
    if isinstance(args, list):
        args = tuple(args)
    if isinstance(args, tuple) and args and isinstance(args[-1], dict) and not kwargs:
        # torch.onnx.export's old convention: a trailing dict in args holds the kwargs
        args, kwargs = args[:-1], dict(args[-1])
    axes = a.get("dynamic_axes")
    if shapes is None and axes and call.kind == "onnx" and isinstance(args, tuple):
        converted = script_axes.convert(model, args, kwargs, axes, a)
        shapes, args, kwargs = converted.shapes, converted.args, converted.kwargs
        rec.axes_names = converted.input_names
        if a.get("dynamo") is not False:  # the TorchScript exporter reads them by name
            _axes_findings(rec, call, converted)
    if model is None or not callable(model):
        return f"the export call at line {call.line} exports no model the analysis can run"
    return load.unpack(rec, (model, args, kwargs, shapes))


def _axes_findings(rec: Analysis, call: Captured, converted: script_axes.Axes) -> None:
    """What torch's conversion of the call's `dynamic_axes` does wrong, at the call."""
    at = {"file": call.file, "line": call.line}
    if converted.fails:
        rec.add(place(finding(wire.KIND_EXPORT_FAILURE, converted.fails), at))
        rec.result["script_call_fails"] = converted.fails
    elif converted.moved:
        message = script_axes.moved_message(converted.moved)
        rec.add(place(finding(wire.KIND_AXES_MOVED, message, notes=script_axes.MOVED_NOTES), at))


_ONNX_TOOLS = ("onnx", "onnxruntime", "onnxsim", "onnxoptimizer", "onnxslim")


def _own_stop(state: ScriptRun, error: BaseException | None) -> tuple[str, Captured] | None:
    """Why the run stopped after an export call the script made, when the stop is the
    analysis's own (it writes no file and makes no real program): the script reads the
    file that call writes, uses what the call returns, or hands the exported model to an
    ONNX tool. (what the script was doing, the call) or None."""
    calls = [c for c in state.passed if c.kind == "onnx"] or list(state.passed)
    if error is None or not calls:
        return None
    said = str(error)
    for call in calls:
        path = bound_arguments(call).get("f")
        if isinstance(path, (str, os.PathLike)) and os.path.basename(os.fspath(path)) in said:
            name = os.path.basename(os.fspath(path))
            return (
                f"reading {name!r}, the file that call writes, which the analysis does not write",
                call,
            )
    if "'Inert'" in said:
        return "using what that call returns, which the analysis does not make", calls[-1]
    tools = {
        part
        for fr in frames.exception_stack(error)
        for part in fr.filename.replace("\\", "/").split("/")
        if part in _ONNX_TOOLS
    }
    if tools and any(c.kind == "onnx" for c in calls):
        tool = sorted(tools)[0]
        return (
            f"in {tool}, on the ONNX model that call makes, which the analysis does not make",
            calls[-1],
        )
    return None


def _not_reached(rec: Analysis, state: ScriptRun, message: str, *notes: str) -> None:
    """The wanted call is "not reached by this run" (information): with how to reach it."""
    f = finding(
        wire.KIND_TARGET_ERROR,
        message,
        notes=[
            *notes,
            "Give the command line that runs this call (`onnxlint analyze "
            f"{_rel(state.script, rec.root)}:{state.line} -- ARGS`, or `argv` in a "
            "[[tool.onnxlint.scripts]] entry) to analyse it.",
        ],
    )
    f["severity"] = "info"
    rec.add(place(f, {"file": state.script, "line": state.line or 1}))
    rec.failed["load"] = wire.NOT_REACHED


def _stopped(
    rec: Analysis, state: ScriptRun, name: str, error: BaseException | None, exit_code: Any
) -> None:
    """The script ended before the export call: one finding at the line that stopped it."""
    where = f"the export call at line {state.line}" if state.line else "an export call"
    ended_well = error is None and (exit_code is None or exit_code.code in (0, None))
    if ended_well and state.passed:
        # the run took another path: it made other export calls and ended normally (a
        # command line that picks one of several exports); a real run skips this one too
        lines = ", ".join(str(c.line) for c in state.passed)
        made = f"calls at lines {lines}" if len(state.passed) > 1 else f"call at line {lines}"
        _not_reached(
            rec,
            state,
            f"target {name!r}: not reached by this run: the script made the export {made} "
            f"and ended normally without reaching {where}",
        )
        return
    own = _own_stop(state, error)
    if own is not None and error is not None:
        # the script goes on past an export call it made and uses what the call makes (its
        # file, its program, the model handed to an ONNX tool): the analysis makes none, so
        # its run ends there, where a real run goes on; whether the real run reaches this
        # call is not known
        doing, writer = own
        stop = _stop_line(rec, state, error)
        _not_reached(
            rec,
            state,
            f"target {name!r}: not reached by this run: the script made the export call at "
            f"line {writer.line}, then stopped{stop} {doing}",
            f"{type(error).__name__}: {first_line(str(error))}",
        )
        return
    if error is None and exit_code is None:
        at = {"file": state.script, "line": state.line or 1}
        msg = f"the script ran to its end without reaching {where}"
        caught = swallowed_error(state.stderr.getvalue(), state.stdout.getvalue())
        if caught:
            # a decorator (loguru's logger.catch) or an `except` printed it and went on
            msg += f"; it printed an error it caught: {caught}"
        notes = []
        if state.passed:
            lines = ", ".join(str(c.line) for c in state.passed)
            notes.append(f"it reached the export calls at lines {lines} (skipped)")
        notes.append(
            "If the call runs only with some command-line arguments, set them as `argv` in a "
            "[[tool.onnxlint.scripts]] entry for this script."
        )
        rec.add(place(finding(wire.KIND_TARGET_ERROR, f"target {name!r}: {msg}", notes=notes), at))
        rec.failed["load"] = "export call not reached"
        return
    if exit_code is not None:
        code = exit_code.code
        said = state.stderr.getvalue().strip().splitlines()
        usage = next((ln for ln in reversed(said) if "error:" in ln), "")
        msg, notes = exit_text(exit_code, where, usage, state.stdout.getvalue(), said)
        if code not in (0, None) or "argument" in usage:
            notes.append(
                "The script needs command-line arguments: set them as `argv` in a "
                f'[[tool.onnxlint.scripts]] entry (path = "{_rel(state.script, rec.root)}"), '
                f"give them after `--` (`onnxlint analyze {_rel(state.script, rec.root)} -- "
                "ARGS`), or declare a factory (`# onnxlint: target`)."
            )
        f = finding(wire.KIND_TARGET_ERROR, f"target {name!r}: {msg}", notes=notes)
        fr, chain = rec.locate(rec.exception_frames(exit_code), in_project=True)
        rec.add(place(f, fr or {"file": state.script, "line": 1}, chain))
        rec.failed["load"] = "the script exited"
        return
    assert error is not None
    if torch_internals.is_fake_limitation(error):
        f = finding(
            wire.KIND_FAKE_MODE_LIMIT,
            f"target {name!r}: the script needs real tensor values here, which the analysis "
            f"does not have: {type(error).__name__}: {first_line(str(error))}",
            notes=[
                "The script runs on fake tensors (shapes, no data) so that no weights are "
                "loaded; this line reads tensor data. Skip it when the environment variable "
                "ONNXLINT_DEEP is set, or declare a factory (`# onnxlint: target`)."
            ],
        )
    else:
        text, notes = first_line(str(error)), advice(error) or _advice(error)
        if isinstance(error, AssertionError):
            text = assertion_text(error, text)
        if "EmptyCheckpoint" in text and EmptyCheckpoint.last is not None:
            # torch refused, as a size or a number, a value the script read from a
            # checkpoint that is not here
            text = EmptyCheckpoint.last.value_text()
            notes = []
        for value, argument in state.filled.items():
            if value in text:
                # a path the user never wrote: say what it is, and that this one matters
                text = text.replace(value, f"<the value given to the required {argument}>")
                notes = [
                    f"{argument} is required and got a placeholder (a temporary path, or a "
                    "checkpoint that is not there), but the script needs what the file "
                    f"holds: set `argv` in a [[tool.onnxlint.scripts]] entry (path = "
                    f'"{_rel(state.script, rec.root)}") with a real {argument}, or declare a '
                    "factory (`# onnxlint: target`)."
                ]
        f = finding(
            wire.KIND_TARGET_ERROR,
            f"target {name!r}: the script stopped before {where}: {type(error).__name__}: {text}",
            notes=notes,
        )
    fr, chain = rec.locate(rec.exception_frames(error), in_project=True)
    rec.add(place(f, fr or {"file": state.script, "line": 1}, chain))
    rec.failed["load"] = "the script stopped"


def _advice(error: BaseException) -> list[str]:
    text = str(error)
    if isinstance(error, ModuleNotFoundError):
        return [
            f"Install {error.name!r} in the interpreter that runs the analysis, or declare a "
            "factory that does not need it."
        ]
    if "network access" in text or isinstance(error, (ConnectionError, socket.gaierror)):
        return [
            "The script downloads something; the analysis runs without network. Point it at "
            "a local copy, or declare a factory (`# onnxlint: target`)."
        ]
    if isinstance(error, (FileNotFoundError, IsADirectoryError, NotADirectoryError)):
        return [
            "The script reads a file that is not here (a dataset, an image, a config). Set "
            "`argv` in a [[tool.onnxlint.scripts]] entry to point it at one, skip the read "
            "when ONNXLINT_DEEP is set, or declare a factory (`# onnxlint: target`)."
        ]
    return [
        "Declare a factory that builds the model and its example inputs "
        "(`# onnxlint: target`) if the script cannot run here."
    ]


def _rel(path: str, root: str) -> str:
    try:
        return os.path.relpath(path, root)
    except ValueError:
        return path
