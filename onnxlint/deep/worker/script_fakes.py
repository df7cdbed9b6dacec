"""What a script run replaces, and the run's state: the export capture, weights, devices,
network and stdin.

`worker/script.py` runs the user's export script; everything here is undone when the run
ends. Each faked step is recorded (`ScriptRun.skip`) at the user's line that asked for it,
so that the report can say what did not matter to the analysis.
"""

from __future__ import annotations

import builtins
import contextlib
import importlib
import importlib.abc
import importlib.machinery
import inspect
import io
import os
import socket
import sys
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

EXPORT_FUNCTIONS: tuple[tuple[str, str, str], ...] = (
    # (module, attribute, kind)
    ("torch.onnx", "export", "onnx"),
    ("torch.onnx.utils", "export", "onnx"),
    ("torch.onnx", "_export", "onnx"),
    ("torch.onnx", "dynamo_export", "dynamo_export"),
    ("torch.export", "export", "torch.export"),
    ("torch.jit", "trace", "trace"),
    ("torch.jit", "script", "script"),
)
"""What the capture replaces. `torch.onnx._export` and `dynamo_export` are gone from
torch 2.13; they are put back for the run so that scripts written for older torch are
still analysed."""


class ScriptStop(BaseException):
    """Raised at the captured export call: ends the user's script (a BaseException so
    that the script's own `except Exception:` cannot swallow it)."""

    def __init__(self, call: Captured) -> None:
        super().__init__("onnxlint: export call captured")
        self.call = call


@dataclass
class Captured:
    """One export call the script made: which function, where, and its arguments."""

    kind: str
    name: str
    file: str
    line: int
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    original: Callable[..., Any] | None
    # The autograd mode the call was made in: `with torch.inference_mode():` or
    # `torch.no_grad()` around an export changes what torch traces (an LSTM's sequence dim
    # stays dynamic in inference mode and is specialized outside it).
    mode: str = ""  # "inference", "no_grad" or "" (grad enabled)
    loop_pass: int = 1  # the call in a loop: which pass of it made this one (`script_loop`)


@dataclass
class ScriptRun:
    """The script run's state: what it is looking for and what it skipped."""

    script: str
    line: int | None
    passed: list[Captured] = field(default_factory=list)
    captured: Captured | None = None  # the wanted call, even if the script swallows the stop
    skipped: dict[tuple[str, str, int], int] = field(default_factory=dict)
    stderr: io.StringIO = field(default_factory=io.StringIO)
    filled: dict[str, str] = field(default_factory=dict)  # value given -> required argument
    stdout: io.StringIO = field(default_factory=io.StringIO)
    # Paths the run knows hold weights: the values of checkpoint arguments (given, default or
    # filled). One that is not here reads as present and as an empty checkpoint.
    checkpoints: set[str] = field(default_factory=set)
    # Libraries the worker had imported that a package of the project shadows for the run
    # (`script_shadow.project_first`): a real run imports the project's package there too.
    shadowed: list[str] = field(default_factory=list)
    # The wanted call is in a loop of the script: called at each of its passes (the first
    # one too), the run goes on after the capture (`script_loop.on_pass` records the models
    # later passes export, and ends the run at its limits). None: the capture ends the run.
    repeat: Callable[[ScriptRun, Captured], None] | None = None
    passes: int = 0  # how many times the wanted call was reached
    later: list[Captured] = field(default_factory=list)

    def is_checkpoint(self, path: Any) -> bool:
        """Whether `path` names weights the run may fake: a checkpoint argument's value, or
        a file whose name says it holds weights (`.pt`, `.pth`, `.ckpt`, ...)."""
        if not isinstance(path, (str, os.PathLike)):
            return False
        text = os.fspath(path)
        if not isinstance(text, str) or not text:
            return False
        return text in self.checkpoints or text.lower().endswith(CHECKPOINT_SUFFIXES)

    def skip(self, what: str, where: tuple[str, int] | None = None) -> None:
        """Record a faked step at the script-side line that asked for it (or `where`)."""
        file, line = where or self.user_line(sys._getframe(2))
        key = (what, file, line)
        self.skipped[key] = self.skipped.get(key, 0) + 1

    def user_line(self, frame: types.FrameType | None) -> tuple[str, int]:
        """The innermost frame outside torch and onnxlint: where the user's code asked."""
        from . import frames

        while frame is not None:
            file = frame.f_code.co_filename
            if frames.classify(file) != "internal":
                return os.path.realpath(file), frame.f_lineno
            frame = frame.f_back
        return self.script, 0

    def wanted(self, frame: types.FrameType | None) -> bool:
        """Whether the export call made from `frame` is the one the target names: with no
        line, the first one reached; else the call whose expression in the script spans the
        line (the script's own call, or the script line that calls a function that exports)."""
        if self.line is None:
            return True
        while frame is not None:
            if os.path.realpath(frame.f_code.co_filename) == self.script:
                start, end = _call_lines(frame)
                if start is not None and start <= self.line <= (end or start):
                    return True
            frame = frame.f_back
        return False


def _call_lines(frame: types.FrameType) -> tuple[int | None, int | None]:
    """The first and last line of the expression the frame is executing (a call that spans
    several lines is matched by any of them)."""
    try:
        positions = list(frame.f_code.co_positions())  # type: ignore[attr-defined]
        start, end, _c0, _c1 = positions[frame.f_lasti // 2]
    except (AttributeError, IndexError, ValueError):
        return frame.f_lineno, frame.f_lineno
    return start, end


def bound_arguments(call: Captured) -> dict[str, Any]:
    """The call's arguments by parameter name (the real function's signature)."""
    if call.original is not None:
        try:
            signature = inspect.signature(call.original)
            params = signature.parameters
            open_ended = any(p.kind is p.VAR_KEYWORD for p in params.values())
            taken = {k: v for k, v in call.kwargs.items() if open_ended or k in params}
            # (keywords it does not take make the call raise: `refused_arguments` says so)
            bound = signature.bind_partial(*call.args, **taken)
            out = dict(bound.arguments)
            extra = out.pop("kwargs", None) if "kwargs" not in call.kwargs else None
            if isinstance(extra, dict) and call.kind != "onnx":
                out.update(extra)
            elif extra is not None:
                out["kwargs"] = extra
            return out
        except (TypeError, ValueError):
            pass
    if call.kind == "dynamo_export":  # (model, /, *model_args, export_options, **model_kwargs)
        kwargs = dict(call.kwargs)
        kwargs.pop("export_options", None)
        return {
            "model": call.args[0] if call.args else kwargs.pop("model", None),
            "model_args": tuple(call.args[1:]),
            "model_kwargs": kwargs,
        }
    names = {
        "onnx": ["model", "args", "f"],
        "torch.export": ["mod", "args", "kwargs"],
        "trace": ["func", "example_inputs"],
        "script": ["obj"],
    }[call.kind]
    out = dict(zip(names, call.args, strict=False))
    out.update(call.kwargs)
    return out


class Inert:
    """What a skipped export call returns (an ONNX program, an ExportedProgram, a traced
    module the script saves): every attribute is a no-op that returns the stand-in again."""

    def __init__(self, call: Captured | None = None) -> None:
        self._call = call

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return self

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """`onnx_program(x)`, `ep.module()(x)`, `traced(x)` with tensors run the exported
        model, as the real program would (the script then checks them against eager:
        `torch.testing.assert_close(onnx_program(x)[0], model(x))`); any other call (`.save`,
        `.optimize`) is a no-op."""
        leaves = torch.utils._pytree.tree_leaves((args, kwargs))
        model = self._model()
        if model is None or not any(isinstance(v, torch.Tensor) for v in leaves):
            return self
        try:
            out = model(*args, **kwargs)
        except Exception:
            return self
        if self._call is not None and self._call.kind == "onnx":
            # ONNXProgram.__call__ gives the outputs as a flat sequence of tensors
            return [v for v in torch.utils._pytree.tree_leaves(out) if isinstance(v, torch.Tensor)]
        return out

    def _model(self) -> Any:
        call = self._call
        if call is None:
            return None
        bound = bound_arguments(call)
        model = next((bound[k] for k in ("model", "mod", "func", "obj") if k in bound), None)
        return model if callable(model) else None

    def __getitem__(self, key: Any) -> Inert:
        return self

    def __len__(self) -> int:
        return 0

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __bool__(self) -> bool:
        return True


class EmptyCheckpoint(dict[str, Any]):
    """What `torch.load` of a missing (or unreadable) checkpoint returns during a script
    run: weights do not matter to the analysis. Any key reads another empty checkpoint;
    used as a model, or as a number the script read from the file (an image size, a class
    count), it says what to do."""

    def __init__(
        self, source: str, *, missing: bool = False, problem: str = "", key: str = ""
    ) -> None:
        super().__init__()
        self._source = source
        self._missing = missing
        self._problem = problem
        self._key = key

    last: EmptyCheckpoint | None = None  # the value read last (a stop may name it)

    def _child(self, key: Any) -> EmptyCheckpoint:
        child = EmptyCheckpoint(
            self._source, missing=self._missing, problem=self._problem, key=f"{self._key}[{key!r}]"
        )
        EmptyCheckpoint.last = child
        return child

    def value_text(self) -> str:
        """Why a value read from this checkpoint cannot serve as a number."""
        where = "is not here" if self._missing else "could not be read"
        return (
            f"torch.load({self._source}){self._key}: the script uses a value it reads from "
            f"the checkpoint (a size, a count, a setting), and the file {where}. A real run "
            "reads it from the file: put the checkpoint there (or point `argv` at it), or "
            "declare a factory (`# onnxlint: target`)"
        )

    def __missing__(self, key: str) -> EmptyCheckpoint:
        return self._child(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return self._child(key) if default is None else default

    def pop(self, key: Any, *default: Any) -> Any:
        # detectron2's and fast-reid's Checkpointer: `checkpoint.pop("model")`
        if key in self:
            return super().pop(key)
        return default[0] if default else self._child(key)

    def _value(self, *args: Any) -> Any:
        raise RuntimeError(self.value_text())

    __index__ = __int__ = __float__ = _value

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._missing:
            raise RuntimeError(
                f"torch.load({self._source}): the file is not here, and the script uses what "
                "it holds as a model (a whole pickled model: its architecture is in the file, "
                "not in the code). Put the checkpoint there (or point `argv` at it), or "
                "declare a factory that builds the model from its class (`# onnxlint: target`)"
            )
        why = f": {self._problem}" if self._problem else ""
        raise RuntimeError(
            f"torch.load({self._source}) holds a whole pickled model, and the file could not "
            f"be read{why}; declare a factory that builds the model from its class "
            "(`# onnxlint: target`)"
        )


def _structure_of(
    real_load: Callable[..., Any], f: Any, options: dict[str, Any]
) -> tuple[Any, str]:
    """A checkpoint file's contents without its weights: unpickled with every storage on the
    meta device (nothing allocated), then each tensor and module made a fake CPU one (the
    run's fake mode is active). A whole pickled model keeps its architecture; a state
    dict keeps its keys, shapes and the non-tensor values (epoch, config). The script's own
    `weights_only` applies (torch's default when it gives none: a whole pickled model then
    fails as it would for real). (contents, "") or (None, why it cannot be read)."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    try:
        with unset_fake_temporarily():
            obj = real_load(f, map_location="meta", **options)
    except Exception as e:
        if "Weights only load failed" in str(e):
            return None, (
                "torch.load's default weights_only=True refuses a pickled model (the script "
                "fails the same way when it runs for real; pass weights_only=False)"
            )
        said = str(e).strip().splitlines()
        return None, f"{type(e).__name__}: {said[0] if said else ''}"

    made: dict[int, Any] = {}  # one fake per tensor (tied weights stay tied)

    def fake(v: Any, depth: int) -> Any:
        if isinstance(v, torch.nn.Module):
            # each parameter and buffer in place, not `to_empty`: a model class may override
            # `_apply` with another signature (ultralytics' BaseModel._apply(fn) refuses
            # to_empty's `recurse`), and nothing of the model's own code should run here
            for m in v.modules():
                for table in (m._parameters, m._buffers):
                    for k, t in list(table.items()):
                        if isinstance(t, torch.Tensor) and t.is_meta:
                            table[k] = fake(t, depth)
                for k, t in list(vars(m).items()):  # plain tensor attributes (anchors, strides)
                    items = t if isinstance(t, (list, tuple)) else [t]
                    if any(isinstance(x, torch.Tensor) and x.is_meta for x in items):
                        setattr(m, k, fake(t, depth))
            return v
        if isinstance(v, torch.Tensor):
            if id(v) in made:
                return made[id(v)]
            out = torch.empty_strided(v.size(), v.stride(), dtype=v.dtype, device="cpu")
            if isinstance(v, torch.nn.Parameter):
                out = torch.nn.Parameter(out, v.requires_grad)
            made[id(v)] = out
            return out
        if depth > 4:
            return v
        if isinstance(v, dict):
            for k in list(v):
                v[k] = fake(v[k], depth + 1)
            return v
        if isinstance(v, list):
            v[:] = [fake(x, depth + 1) for x in v]
            return v
        if isinstance(v, tuple) and not hasattr(v, "_fields"):
            return tuple(fake(x, depth + 1) for x in v)
        return v

    try:
        return fake(obj, 0), ""
    except Exception as e:
        return None, f"{type(e).__name__} making fakes of its tensors"


@contextlib.contextmanager
def patched(obj: Any, attr: str, value: Any) -> Iterator[None]:
    """`obj.attr = value` for the block, then what was there again. A class or an instance
    gets back its own attribute, or none (an instance then uses its class's method again);
    a module gets back the attribute it served."""
    missing = object()
    own = not isinstance(obj, types.ModuleType)
    old = vars(obj).get(attr, missing) if own else getattr(obj, attr, missing)
    setattr(obj, attr, value)
    try:
        yield
    finally:
        if old is missing:
            with contextlib.suppress(AttributeError):
                delattr(obj, attr)
        else:
            setattr(obj, attr, old)


@contextlib.contextmanager
def captures(state: ScriptRun) -> Iterator[None]:
    """Every export function records its call; the wanted one ends the script."""
    with contextlib.ExitStack() as stack:
        for mod_name, attr, kind in EXPORT_FUNCTIONS:
            for mod in _loaded(mod_name):
                original = getattr(mod, attr, None)
                stack.enter_context(
                    patched(mod, attr, _capture(state, kind, f"{mod_name}.{attr}", original))
                )
        yield


def _loaded(name: str) -> list[types.ModuleType]:
    """The module objects a script reaches as `name`, without importing anything: importing
    changes what the script sees (in torch 2.13, `import torch.onnx.utils` replaces the
    attribute `torch.onnx.utils`, the TorchScript exporter's utils, with a shim that lacks
    `_constants`, which ultralytics reads)."""
    head, _, tail = name.rpartition(".")
    found: list[types.ModuleType] = []
    parent = sys.modules.get(head) if head else None
    via_parent = getattr(parent, tail, None) if parent is not None else None
    for mod in (via_parent, sys.modules.get(name)):
        if isinstance(mod, types.ModuleType) and all(mod is not m for m in found):
            found.append(mod)
    if not found and head:
        # an export module not imported yet (torch.export, torch.jit)
        with contextlib.suppress(ImportError):
            found.append(importlib.import_module(name))
    return found


def _capture(
    state: ScriptRun, kind: str, name: str, original: Callable[..., Any] | None
) -> Callable[..., Any]:
    def capture(*args: Any, **kwargs: Any) -> Any:
        if kind == "script" and not (args and isinstance(args[0], torch.nn.Module)):
            # `@torch.jit.script` on a helper function (often at import time, in a library
            # the script imports) compiles code, it exports no model: the helper stays the
            # Python function it was, and the script goes on to its own export call
            return args[0] if args else None
        caller = sys._getframe(1)
        file, line = state.user_line(caller)
        call = Captured(kind, name, file, line, args, dict(kwargs), original, _autograd_mode())
        if state.captured is None and state.wanted(caller):
            state.captured = call
            if state.repeat is None:
                raise ScriptStop(call)
            state.repeat(state, call)  # the loop's first pass: the run goes on
            return Inert(call)
        if state.captured is not None:  # a loop's later pass, or the run is past the loop
            if state.repeat is None or not state.wanted(caller):
                raise ScriptStop(state.captured)
            state.repeat(state, call)
            return Inert(call)
        state.passed.append(call)
        return Inert(call)

    capture.__name__ = name.rpartition(".")[2]
    capture.__doc__ = f"onnxlint: captures {name} while a script runs"
    return capture


def _autograd_mode() -> str:
    if torch.is_inference_mode_enabled():
        return "inference"
    return "" if torch.is_grad_enabled() else "no_grad"


@contextlib.contextmanager
def autograd_mode(mode: str) -> Iterator[None]:
    """The autograd mode a captured export call was made in, for the phases that analyse it."""
    if mode == "inference":
        with torch.inference_mode():
            yield
    elif mode == "no_grad":
        with torch.no_grad():
            yield
    else:
        yield


def _start_of(f: Any) -> int | None:
    """Where a seekable open file is (its contents can be read, and read again), else None."""
    try:
        return int(f.tell()) if f.seekable() else None
    except Exception:
        return None


@contextlib.contextmanager
def fakes(state: ScriptRun) -> Iterator[None]:
    """Weights and devices do not matter to the analysis: fake them, and say so."""

    real_load = torch.load

    def torch_load(f: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(f, MissingCheckpointFile):
            f = f.path  # open(ckpt, "rb") of a checkpoint that is not here
        named = isinstance(f, (str, os.PathLike))
        source = repr(f) if named else type(f).__name__
        present = named and _REAL_ISFILE(f)  # (the run's os.path.isfile fakes checkpoints)
        # an open file or buffer: Lightning's load_from_checkpoint hands torch.load an fsspec
        # file, torch's own tutorials a BytesIO; its start is kept to read it again
        opened = not named and hasattr(f, "read") and _start_of(f) is not None
        problem = ""
        if present or opened:
            start = _start_of(f) if opened else None
            options = {k: kwargs[k] for k in ("weights_only",) if k in kwargs}
            loaded, problem = _structure_of(real_load, f, options)
            if not problem:
                state.skip("torch.load (its structure only: tensors without their values)")
                return loaded
            if start is not None:
                with contextlib.suppress(Exception):
                    f.seek(start)
        state.skip("torch.load (an empty checkpoint instead)")
        return EmptyCheckpoint(source, missing=named and not present, problem=problem)

    jit_load = torch.jit.load

    def torch_jit_load(f: Any, *args: Any, **kwargs: Any) -> Any:
        # A TorchScript file carries the model's code: nothing to build it from, so it is
        # loaded for real (outside the fake mode, which cannot hold its storages).
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        state.skip("torch.jit.load (loaded for real: the file is the model)")
        with unset_fake_temporarily():
            return jit_load(f, *args, **kwargs)  # type: ignore[no-untyped-call]

    def load_state_dict(self: torch.nn.Module, *args: Any, **kwargs: Any) -> Any:
        state.skip("load_state_dict (weights not loaded)")
        from torch.nn.modules.module import _IncompatibleKeys

        return _IncompatibleKeys([], [])

    def state_dict_from_url(url: str, *args: Any, **kwargs: Any) -> Any:
        state.skip("torch.hub.load_state_dict_from_url (weights not fetched)")
        return EmptyCheckpoint(repr(url))

    download_file = torch.hub.download_url_to_file

    def download_url_to_file(url: str, dst: str, *args: Any, **kwargs: Any) -> None:
        if not is_weights_file(dst):
            return download_file(url, dst, *args, **kwargs)  # refused: no network
        state.skip("torch.hub.download_url_to_file of weights (not fetched)")
        return None

    module_to = torch.nn.Module.to

    def module_cuda(self: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
        state.skip(".cuda() (kept on the CPU)")
        return self

    def to(self: torch.nn.Module, *args: Any, **kwargs: Any) -> torch.nn.Module:
        if any(_is_cuda(a) for a in (*args, kwargs.get("device"))):
            state.skip('.to("cuda") (kept on the CPU)')
            args = tuple(a for a in args if not _is_cuda(a))
            kwargs.pop("device", None)
            if not args and not kwargs:
                return self
        return module_to(self, *args, **kwargs)

    real_save = torch.save

    def torch_save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        if _holds_fakes(obj):
            # the model is built on fake tensors: there is nothing to write, and the file
            # does not matter to the analysis
            state.skip("torch.save (of the model on fake tensors: nothing written)")
            return None
        return real_save(obj, f, *args, **kwargs)

    real_format: Callable[[torch.Tensor, str], Any] = torch.Tensor.__format__

    def tensor_format(self: torch.Tensor, spec: str) -> str:
        from torch._subclasses.fake_tensor import FakeTensor

        if isinstance(self, FakeTensor) and spec:
            # f"{loss.item():.4f}" / f"{out.min():.4f}" in a print: a value the analysis does
            # not have; printing goes on (control flow on a value still stops)
            state.skip("a tensor's value formatted for printing (no values here)")
            return "<no value in the analysis>"
        return str(real_format(self, spec))

    with contextlib.ExitStack() as stack:
        stack.enter_context(
            patched(torch, "tensor", _with_values(_tensor_of_fakes(torch.tensor, state)))
        )
        for attr in ("linspace", "logspace", "arange"):
            stack.enter_context(patched(torch, attr, _with_values(getattr(torch, attr))))
        stack.enter_context(patched(torch.Tensor, "__format__", tensor_format))
        stack.enter_context(after_import("cv2", _cv2))
        stack.enter_context(present_checkpoints(state))
        stack.enter_context(patched(torch, "save", torch_save))
        stack.enter_context(patched(torch.nn.Module, "cuda", module_cuda))
        stack.enter_context(patched(torch.nn.Module, "to", to))
        stack.enter_context(patched(torch.nn.Module, "_apply", _fake_apply(torch.nn.Module._apply)))
        stack.enter_context(patched(torch.Tensor, "__deepcopy__", _fake_deepcopy(torch.Tensor)))
        stack.enter_context(patched(torch, "load", torch_load))
        stack.enter_context(patched(torch.jit, "load", torch_jit_load))
        stack.enter_context(patched(torch.nn.Module, "load_state_dict", load_state_dict))
        for attr in ("synchronize", "empty_cache", "set_device", "manual_seed_all"):
            # one function per name: torch._dynamo's rule map refuses one object under two
            stack.enter_context(patched(torch.cuda, attr, _noop(attr)))
        stack.enter_context(patched(builtins, "input", _no_input))
        stack.enter_context(after_import("transformers.modeling_utils", _transformers(state)))
        stack.enter_context(after_import("gdown", _gdown(state)))
        stack.enter_context(after_import("huggingface_hub.file_download", _hf_hub(state)))
        stack.enter_context(patched(torch.hub, "load_state_dict_from_url", state_dict_from_url))
        stack.enter_context(patched(torch.hub, "download_url_to_file", download_url_to_file))
        with contextlib.suppress(ImportError):
            st = importlib.import_module("safetensors.torch")
            stack.enter_context(patched(st, "load_file", lambda f, *a, **k: torch_load(f)))
        yield


VALUES_LIMIT = 4096
"""Elements a tensor made from numbers alone keeps its values for (see `_with_values`)."""


def _with_values(original: Callable[..., Any]) -> Callable[..., Any]:
    """A tensor made from numbers alone keeps its values, as a real run has them.

    `dpr = [x.item() for x in torch.linspace(0, drop_path_rate, depth)]` (timm, DINOv2,
    Swin: the stochastic-depth schedule) reads values of a tensor no weight is in. A fake
    tensor has none (torch keeps the value of one-element literals only), so the run stopped,
    or went on with a placeholder rate that took the model's training-only branch
    (Depth-Anything's blocks: `torch.randperm`, which has no ONNX translation) where the real
    rate is 0. Small tensors made from numbers get their real values as the fake's constant;
    what is computed from them keeps values as torch's fake tensors do (an element, a
    scalar), the rest has shapes only."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    def make(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        if (
            isinstance(out, FakeTensor)
            and out.constant is None
            and out.numel() <= VALUES_LIMIT
            and not _holds_fakes(list(args))
            and not _holds_fakes(list(kwargs.values()))
        ):
            with unset_fake_temporarily():
                try:
                    real = original(*args, **{**kwargs, "device": "cpu"})
                except Exception:  # a value the real call would not make here either
                    return out
            if tuple(real.shape) == tuple(out.shape) and real.dtype == out.dtype:
                out.constant = real
        return out

    return make


def _tensor_of_fakes(original: Callable[..., Any], state: ScriptRun) -> Callable[..., Any]:
    """`torch.tensor([-b, *left, torch.zeros_like(up[0][None]), *right, b])` (D-FINE's
    `weighting_function`): a list that holds tensors reads their values, which fake tensors
    have only as the constant of a literal (`torch.tensor([0.5])`); torch raises "its data
    is not allocated yet" where a real run goes on. The list is made again from the
    constants, or from zeros where a value does not exist (it does not matter here)."""

    def tensor(data: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(data, *args, **kwargs)
        except RuntimeError:
            if not isinstance(data, (list, tuple)) or not _holds_fakes(data):
                raise
            missing: list[bool] = []
            values = _values_of(data, missing)
            if missing:
                state.skip("tensor values the analysis does not have (made of zeros)")
            return original(values, *args, **kwargs)

    return tensor


def _values_of(data: Any, missing: list[bool]) -> Any:
    """The list with each fake tensor replaced by its values (a one-element tensor by its
    number, as torch.tensor reads it in a list)."""
    from torch._subclasses.fake_tensor import FakeTensor, unset_fake_temporarily

    if isinstance(data, (list, tuple)):
        return [_values_of(d, missing) for d in data]
    if not isinstance(data, FakeTensor):
        return data
    const = getattr(data, "constant", None)
    with unset_fake_temporarily():
        if const is None:
            missing.append(True)
            const = torch.zeros(tuple(data.shape), dtype=data.dtype)
        return const.reshape(()).item() if const.numel() == 1 else const.tolist()


_REAL_ISFILE = os.path.isfile

CHECKPOINT_SUFFIXES = (".pt", ".pth", ".pth.tar", ".ckpt", ".safetensors")
"""What a path's name ends with when the run may take it for a checkpoint."""


class MissingCheckpointFile(io.BytesIO):
    """What `open(path, "rb")` gives for a checkpoint that is not here: no bytes, and
    `torch.load` of it is an empty checkpoint (the path is kept to say which file)."""

    def __init__(self, path: Any) -> None:
        super().__init__(b"")
        self.path = os.fspath(path)
        self.name = self.path


@contextlib.contextmanager
def present_checkpoints(state: ScriptRun) -> Iterator[None]:
    """A checkpoint that is not here exists for the script: `os.path.exists`,
    `os.path.isfile`, `Path.exists` / `is_file` say yes and `open(path, "rb")` reads an
    empty file, as `torch.load` reads an empty checkpoint (weights do not matter to the
    analysis). Any other path is asked of the file system."""
    import pathlib

    real_exists, real_isfile, real_open = os.path.exists, os.path.isfile, builtins.open
    path_exists, path_is_file = pathlib.Path.exists, pathlib.Path.is_file

    def absent_checkpoint(path: Any, real: bool) -> bool:
        if real or not state.is_checkpoint(path):
            return False
        state.skip(f"a check that {os.fspath(path)!r} exists (a checkpoint: read as present)")
        return True

    def exists(path: Any) -> bool:
        real = real_exists(path)
        return real or absent_checkpoint(path, real)

    def isfile(path: Any) -> bool:
        real = real_isfile(path)
        return real or absent_checkpoint(path, real)

    def p_exists(self: pathlib.Path, *args: Any, **kwargs: Any) -> bool:
        real = path_exists(self, *args, **kwargs)
        return real or absent_checkpoint(self, real)

    def p_is_file(self: pathlib.Path, *args: Any, **kwargs: Any) -> bool:
        real = path_is_file(self, *args, **kwargs)
        return real or absent_checkpoint(self, real)

    def open_(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "r" in mode and "b" in mode and state.is_checkpoint(file) and not real_exists(file):
            state.skip("open() of a checkpoint that is not here (an empty file)")
            return MissingCheckpointFile(file)
        return real_open(file, mode, *args, **kwargs)

    with contextlib.ExitStack() as stack:
        stack.enter_context(patched(os.path, "exists", exists))
        stack.enter_context(patched(os.path, "isfile", isfile))
        stack.enter_context(patched(pathlib.Path, "exists", p_exists))
        stack.enter_context(patched(pathlib.Path, "is_file", p_is_file))
        stack.enter_context(patched(builtins, "open", open_))
        yield


def _holds_fakes(obj: Any, depth: int = 0) -> bool:
    """Whether `obj` (a module, a tensor, or a dict/list of them) holds fake tensors."""
    from torch._subclasses.fake_tensor import FakeTensor

    if isinstance(obj, FakeTensor):
        return True
    if isinstance(obj, torch.nn.Module):
        return any(isinstance(t, FakeTensor) for t in (*obj.parameters(), *obj.buffers()))
    if depth > 3:
        return False
    if isinstance(obj, dict):
        return any(_holds_fakes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return any(_holds_fakes(v, depth + 1) for v in obj)
    return False


def _fake_apply(original: Callable[..., Any]) -> Callable[..., Any]:
    """`Module._apply` (behind `.cpu()`, `.float()`, `.half()`, `.to(...)`) for a module whose
    parameters are fake tensors. torch swaps a fake parameter in place
    (`torch.utils.swap_tensors`), which fails because fake tensors carry weakrefs
    ("Couldn't swap Conv2d.weight"); here the converted tensor replaces the parameter in the
    module instead (a new Parameter with the same requires_grad). One Parameter shared by
    several modules (tied weights) is converted once and stays shared."""
    from torch._subclasses.fake_tensor import FakeTensor

    shared: list[dict[int, Any]] = []  # the conversions of the outermost call in progress

    def _apply(self: torch.nn.Module, fn: Callable[..., Any], recurse: bool = True) -> Any:
        own = [p for p in self._parameters.values() if isinstance(p, FakeTensor)]
        if not own and not recurse:
            return original(self, fn, recurse)
        top = not shared
        if top:
            shared.append({})
        done = shared[0]
        try:
            if recurse:
                for child in self.children():
                    child_apply: Callable[..., Any] = child._apply
                    child_apply(fn)
            if not own:
                return original(self, fn, False)
            for key, param in list(self._parameters.items()):
                if param is None:
                    continue
                if id(param) in done:
                    self._parameters[key] = done[id(param)]
                    continue
                with torch.no_grad():
                    applied = fn(param)
                if applied is param or applied is param.data:
                    done[id(param)] = param
                    continue
                new = torch.nn.Parameter(applied, requires_grad=param.requires_grad)
                done[id(param)] = new
                self._parameters[key] = new
            for key, buf in list(self._buffers.items()):
                if buf is not None:
                    self._buffers[key] = fn(buf)
            return self
        finally:
            if top:
                shared.clear()

    return _apply


def _fake_deepcopy(tensor_type: type[torch.Tensor]) -> Callable[..., Any]:
    """`copy.deepcopy` of a fake tensor (`deepcopy(model)` before export is common): torch's
    own copies the storage, which fake tensors do not have ("set the storage of a tensor on
    device meta"); a clone has the same shape, dtype, device and requires_grad, and a
    parameter stays a parameter (its type is FakeTensor: Parameter's own __deepcopy__ is
    not the one called)."""
    from torch._subclasses.fake_tensor import FakeTensor

    original: Callable[..., Any] = tensor_type.__deepcopy__

    def __deepcopy__(self: torch.Tensor, memo: dict[int, Any]) -> Any:
        if not isinstance(self, FakeTensor) or not self.is_leaf:
            return original(self, memo)
        if id(self) in memo:
            return memo[id(self)]
        with torch.no_grad():
            new = self.clone()
        if isinstance(self, torch.nn.Parameter):  # a Parameter of a fake tensor is a fake
            new = torch.nn.Parameter(new, requires_grad=self.requires_grad)
        else:
            new.requires_grad_(self.requires_grad)
        memo[id(self)] = new
        return new

    return __deepcopy__


def _noop(name: str) -> Callable[..., None]:
    def noop(*args: Any, **kwargs: Any) -> None:
        return None

    noop.__name__ = name
    return noop


def _no_input(prompt: Any = "") -> str:
    raise EOFError("onnxlint: the script asked for input on stdin, which the analysis has none of")


WEIGHT_SUFFIXES = (".pt", ".pth", ".pth.tar", ".ckpt", ".bin", ".safetensors", ".pkl", ".tar")
"""What a downloaded file's name ends with when it holds weights (not code or a config)."""


def is_weights_file(path: Any) -> bool:
    """Whether a download's target names a weights file: such a download is skipped (the
    file stays missing and `torch.load` gives an empty checkpoint); any other download
    (a config, a dataset) fails, as the network is off."""
    return isinstance(path, (str, os.PathLike)) and str(path).lower().endswith(WEIGHT_SUFFIXES)


def _cv2(mod: types.ModuleType) -> Callable[[], None]:
    """`cv2.imread` of a file that is not here returns None, and the script fails a line
    later on `'NoneType' object has no attribute 'shape'`: it says so at the read."""
    original = mod.imread

    def imread(filename: Any, *args: Any, **kwargs: Any) -> Any:
        image = original(filename, *args, **kwargs)
        if image is None and not os.path.exists(filename):
            raise FileNotFoundError(
                f"cv2.imread({os.fspath(filename)!r}): the file is not here (cv2 returns None "
                "for it, and the script goes on with None)"
            )
        return image

    setattr(mod, "imread", imread)  # noqa: B010

    def undo() -> None:
        setattr(mod, "imread", original)  # noqa: B010

    return undo


def _gdown(state: ScriptRun) -> Callable[[types.ModuleType], Callable[[], None]]:
    """`gdown.download(url, "x.pt")`, how many projects fetch pretrained weights: skipped
    when the output is a weights file."""

    def patch(mod: types.ModuleType) -> Callable[[], None]:
        original = mod.download

        def download(url: Any = None, output: Any = None, *args: Any, **kwargs: Any) -> Any:
            if not is_weights_file(output):
                return original(url, output, *args, **kwargs)
            state.skip("gdown.download of weights (not fetched)")
            return output

        setattr(mod, "download", download)  # noqa: B010

        def undo() -> None:
            setattr(mod, "download", original)  # noqa: B010

        return undo

    return patch


def _hf_hub(state: ScriptRun) -> Callable[[types.ModuleType], Callable[[], None]]:
    """`hf_hub_download(repo, "model.safetensors")`, how timm (and many others) fetch
    pretrained weights: when the weights file is not in the local cache (the network is off
    for the run), the download gives a path where it is not, which the run reads as an empty
    checkpoint. Configs and other files still fail as they would."""

    def patch(mod: types.ModuleType) -> Callable[[], None]:
        saved = {
            name: getattr(mod, name)
            for name in ("_hf_hub_download_to_cache_dir", "_hf_hub_download_to_local_dir")
            if hasattr(mod, name)
        }

        def wrap(original: Callable[..., Any], folder_key: str) -> Callable[..., Any]:
            def download(*args: Any, **kwargs: Any) -> Any:
                try:
                    return original(*args, **kwargs)
                except Exception:
                    filename = str(kwargs.get("filename") or "")
                    if not is_weights_file(filename):
                        raise
                    state.skip("huggingface_hub download of weights (not fetched)")
                    folder = str(kwargs.get(folder_key) or ".")
                    return os.path.join(folder, "onnxlint-not-fetched", filename)

            return download

        for name, original in saved.items():
            key = "cache_dir" if name.endswith("cache_dir") else "local_dir"
            setattr(mod, name, wrap(original, key))

        def undo() -> None:
            for name, original in saved.items():
                setattr(mod, name, original)

        return undo

    return patch


def _transformers(state: ScriptRun) -> Callable[[types.ModuleType], Callable[[], None]]:
    """`PreTrainedModel.from_pretrained` builds the model from its config, no weights."""

    def patch(mu: types.ModuleType) -> Callable[[], None]:
        base = mu.PreTrainedModel
        original = base.__dict__["from_pretrained"]

        def from_pretrained(cls: Any, name_or_path: Any, *args: Any, **kwargs: Any) -> Any:
            state.skip("from_pretrained (built from its config, weights not loaded)")
            config = kwargs.pop("config", None)
            if config is None or isinstance(config, (str, os.PathLike)):
                config = cls.config_class.from_pretrained(config or name_or_path)
            keep = {
                k: kwargs[k] for k in ("dtype", "torch_dtype", "attn_implementation") if k in kwargs
            }
            return cls._from_config(config, **keep)

        base.from_pretrained = classmethod(from_pretrained)

        def undo() -> None:
            base.from_pretrained = original

        return undo

    return patch


@contextlib.contextmanager
def after_import(
    name: str, patch: Callable[[types.ModuleType], Callable[[], None]]
) -> Iterator[None]:
    """Apply `patch` to module `name` now if it is imported, else as soon as it is."""
    undo: list[Callable[[], None]] = []
    if name in sys.modules:
        undo.append(patch(sys.modules[name]))
        yield
    else:
        finder = _PatchOnImport(name, patch, undo)
        sys.meta_path.insert(0, finder)
        try:
            yield
        finally:
            with contextlib.suppress(ValueError):
                sys.meta_path.remove(finder)
    for u in undo:
        u()


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def __init__(
        self,
        name: str,
        patch: Callable[[types.ModuleType], Callable[[], None]],
        undo: list[Callable[[], None]],
    ) -> None:
        self.name, self.patch, self.undo = name, patch, undo

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        outer = self

        def exec_and_patch(module: types.ModuleType) -> None:
            exec_module(module)
            outer.undo.append(outer.patch(module))

        loader.exec_module = exec_and_patch  # type: ignore[method-assign]
        return spec


@contextlib.contextmanager
def no_network() -> Iterator[None]:
    """A download would hang or fail slowly on a closed network: fail at once, clearly."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise ConnectionRefusedError(
            "onnxlint: network access is off while the script runs under the analysis"
        )

    with patched(socket.socket, "connect", refuse), patched(socket, "create_connection", refuse):
        yield


class _Tee(io.TextIOBase):
    def __init__(self, inner: Any, copy: io.StringIO) -> None:
        self.inner, self.copy = inner, copy

    def write(self, s: str) -> int:
        self.copy.write(s)
        with contextlib.suppress(Exception):
            self.inner.write(s)
        return len(s)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self.inner.flush()


@contextlib.contextmanager
def quiet_stdio(state: ScriptRun) -> Iterator[None]:
    """No stdin (the worker's requests come there); what the script prints is kept to
    explain an exit."""
    saved = sys.stdin, sys.stderr, sys.stdout
    sys.stdin = open(os.devnull, encoding="utf-8")  # noqa: SIM115 - closed below
    sys.stderr = _Tee(sys.stderr, state.stderr)
    sys.stdout = _Tee(sys.stdout, state.stdout)
    try:
        yield
    finally:
        sys.stdin.close()
        sys.stdin, sys.stderr, sys.stdout = saved


def _is_cuda(v: Any) -> bool:
    if isinstance(v, torch.device):
        return v.type == "cuda"
    if isinstance(v, str):
        return v.startswith("cuda")
    return False


class CpuOnly(torch.overrides.TorchFunctionMode):
    """`.cuda()`, `.to("cuda")` and `device="cuda"` stay on the CPU (no GPU is needed to
    analyse what the export would see; dtypes and shapes are kept)."""

    def __init__(self, state: ScriptRun) -> None:
        super().__init__()
        self.state = state

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        kwargs = dict(kwargs or {})
        if func is torch.Tensor.cuda:
            self.state.skip(".cuda() (kept on the CPU)")
            return args[0]
        if _is_cuda(kwargs.get("device")):
            self.state.skip('device="cuda" (kept on the CPU)')
            kwargs["device"] = "cpu"
        if func is torch.Tensor.to and any(_is_cuda(a) for a in args[1:]):
            self.state.skip('.to("cuda") (kept on the CPU)')
            args = (args[0], *("cpu" if _is_cuda(a) else a for a in args[1:]))
        return func(*args, **kwargs)
