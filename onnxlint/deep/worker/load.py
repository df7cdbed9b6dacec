"""Phase 1, load: import the factory's module and build the model under fake tensors.

Init functions with data-dependent checks (`torch.nn.init.trunc_normal_`
resamples `while mask.any()`) cannot run on fake tensors; init values do not
matter for the analysis, so on fake tensors they leave the tensor as it is.
What fake tensors still cannot do is OLX816 (a limitation of the analysis, at
the line that needs data), never "your factory raised".
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import torch

from . import frames, torch_internals, wire
from .record import Analysis, finding, first_line, place, source_loc


def run(rec: Analysis) -> bool:
    factory = str(rec.target.get("factory") or "")
    name = rec.target.get("name") or factory
    for p in [rec.root, *rec.target.get("sys_path", [])]:
        if p not in sys.path:
            sys.path.insert(0, p)
    with contextlib.suppress(OSError):
        os.chdir(rec.root)
    os.environ["ONNXLINT_DEEP"] = "1"
    mod_name, _, func_name = factory.partition(":")
    if not mod_name or not func_name:
        rec.add(
            finding(
                wire.KIND_TARGET_ERROR,
                f"target {name!r}: factory {factory!r} must look like 'package.module:function'",
            )
        )
        rec.failed["load"] = "bad factory"
        return False
    try:
        module = importlib.import_module(mod_name)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        what = (
            f"cannot import module {mod_name!r}"
            if isinstance(e, ModuleNotFoundError) and e.name and mod_name.startswith(e.name)
            else f"importing {mod_name!r} raised {type(e).__name__}: {first_line(str(e))}"
        )
        rec.add(
            rec.place_exc(
                finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: {what}",
                    notes=[
                        f"sys.path starts with {rec.root!r}; is the module under the project root?"
                    ],
                ),
                e,
            )
        )
        rec.failed["load"] = "import failed"
        return False
    fn = getattr(module, func_name, None)
    if fn is None or not callable(fn):
        rec.add(
            finding(
                wire.KIND_TARGET_ERROR,
                f"target {name!r}: module {mod_name!r} has no callable {func_name!r}",
            )
        )
        rec.failed["load"] = "no factory"
        return False
    rec.result["factory_loc"] = source_loc(fn)
    if isinstance(fn, type) and issubclass(fn, torch.onnx.ExportableModule):
        fn = _exportable(fn)
    table_ref = rec.target.get("translation_table")
    if table_ref:
        rec.translation_table = _load_table(rec, str(table_ref), name)
    made: dict[int, int] = {}
    if rec.target.get(wire.RETRY_REAL_TENSORS):
        out = _build_real(rec, fn, made)
        if out is None:
            rec.failed["load"] = "factory raised"
            return False
        return _finish_load(rec, out, name, factory, made)
    try:
        out = _build(rec, fn, made, assume=False)
    except BaseException as e:
        if isinstance(e, (KeyboardInterrupt, SystemExit)):
            raise
        if not torch_internals.is_fake_limitation(e):
            _factory_failed(rec, e, name, factory)
            return False
        # Values computed in __init__ (drop-path rates from torch.linspace(...).tolist())
        # do not exist on fake tensors: build again with placeholders for them.
        made.clear()
        try:
            out = _build(rec, fn, made, assume=True)
        except BaseException as e2:
            if isinstance(e2, (KeyboardInterrupt, SystemExit)):
                raise
            if in_quantization(e2):
                # eager-mode int8: build with real tensors, in a fresh child (see wire)
                rec.result[wire.RETRY_REAL_TENSORS] = _quantization_reason(rec, e2)
                return False
            # past the values fake tensors lack, the factory's own error (if any) shows
            err = e if torch_internals.is_fake_limitation(e2) else e2
            _factory_failed(rec, err, name, factory)
            return False
    return _finish_load(rec, out, name, factory, made)


def _finish_load(rec: Analysis, out: Any, name: str, factory: str, made: dict[int, int]) -> bool:
    """Check the factory's result and put it on the record."""
    problem = unpack(rec, out)
    if problem:
        rec.add(
            place(
                finding(wire.KIND_TARGET_ERROR, f"target {name!r}: factory {factory!r} {problem}"),
                rec.factory_loc,
            )
        )
        rec.failed["load"] = "bad factory result"
        return False
    loc = rec.factory_loc
    if loc is not None:
        for i, leaf in enumerate(torch.utils._pytree.tree_leaves((rec.args, rec.kwargs))):
            line = made.get(id(leaf))
            if line is not None:
                rec.input_lines[i] = {"file": loc["file"], "line": line, "name": loc["name"]}
    rec.result["model"] = summary(rec)
    return True


def _exportable(cls: type[Any]) -> Any:
    """A `torch.onnx.ExportableModule` is its own factory: built with no arguments, it says
    its example arguments and dynamic shapes."""

    def build() -> tuple[Any, Any, Any, Any]:
        model = cls()
        args, kwargs = model.example_arguments()
        return model, args, kwargs, model.dynamic_shapes()

    return build


MAX_ASSUMED_VALUES = 10_000
"""Placeholder answers allowed while building; more means a loop waits on real data."""


def _build(rec: Analysis, fn: Any, made: dict[int, int], *, assume: bool) -> Any:
    """Call the factory under a fresh fake mode. With `assume`, a Python value read from a
    fake tensor (`.tolist()`, `.item()`, `if t:`) gets a placeholder; each place it happens
    is recorded in the result (`assumed_in_build`)."""
    rec.fake_mode = torch_internals.fake_mode_class()(allow_non_fake_inputs=True)
    places: dict[tuple[str, int], int] = {}

    def answered() -> None:
        fr, _chain = rec.locate(traceback.extract_stack()[:-2])
        if fr is not None:
            key = (fr["file"], fr["line"])
            places[key] = places.get(key, 0) + 1
        if sum(places.values()) > MAX_ASSUMED_VALUES:
            raise RuntimeError(
                f"more than {MAX_ASSUMED_VALUES} data-dependent values while building the "
                "model on fake tensors"
            )

    with contextlib.ExitStack() as stack:
        stack.enter_context(rec.fake_mode)
        stack.enter_context(fake_safe_init())
        stack.enter_context(ExampleLines(getattr(fn, "__code__", None), made))
        stack.enter_context(module_sites(rec))
        if assume:
            rec.fake_mode.on_answer = answered
            stack.enter_context(torch_internals.lenient_scalars(rec.fake_mode))
            stack.enter_context(torch_internals.unbacked_sizes(rec.fake_mode))
        try:
            return fn()
        finally:
            rec.fake_mode.on_answer = None
            if places:
                rec.result["assumed_in_build"] = [
                    {"file": f, "line": ln, "count": n} for (f, ln), n in places.items()
                ]


def in_quantization(e: BaseException) -> bool:
    """Whether fake tensors failed inside torch's eager-mode quantization (`torch.ao`):
    observers and packed int8 weights need real values."""
    return any("/torch/ao/" in fr.filename.replace("\\", "/") for fr in frames.exception_stack(e))


def _quantization_reason(rec: Analysis, e: BaseException) -> dict[str, Any]:
    """Why and where the fake build failed in quantization (carried to the fresh child)."""
    at, _chain = rec.locate(rec.exception_frames(e))
    return {
        "why": f"{type(e).__name__}: {first_line(str(e))}",
        "at": {"file": at["file"], "line": at["line"]} if at else None,
    }


def _build_real(rec: Analysis, fn: Any, made: dict[int, int]) -> Any:
    """Build a model that fake tensors cannot build (eager-mode int8 quantization) with
    real tensors, so that torch itself says what it does with it. Such models are small
    (their weights are int8); the worker's memory limit still applies. Runs in a fresh
    child: a failed fake build of such a model leaves torch in a state that crashes it."""
    rec.fake_mode = None  # the phases run on the real tensors
    reason = rec.target.get(wire.RETRY_REAL_TENSORS)
    reason = reason if isinstance(reason, dict) else {}
    rec.result["built_with_real_tensors"] = (
        "eager-mode quantization (torch.ao) cannot run on fake tensors"
        + (f" ({reason['why']})" if reason.get("why") else "")
    )
    if reason.get("at"):
        rec.result["quantized_at"] = reason["at"]
    try:
        with ExampleLines(getattr(fn, "__code__", None), made), module_sites(rec):
            return fn()
    except Exception as e:
        _factory_failed(rec, e, str(rec.target.get("name")), str(rec.target.get("factory")))
        return None


def _factory_failed(rec: Analysis, e: BaseException, name: str, factory: str) -> None:
    text = str(e)
    if torch_internals.is_fake_limitation(e):
        rec.add(
            rec.place_exc(
                finding(
                    wire.KIND_FAKE_MODE_LIMIT,
                    f"target {name!r}: the model cannot be built on fake tensors here: "
                    f"{type(e).__name__}: {first_line(text)}",
                    notes=[
                        "The analysis builds the model on fake tensors (shapes, no data) so "
                        "that any size fits in memory; this line needs real values. It is a "
                        "limitation of the analysis, not an error in the model.",
                        "If it is weight loading or a data check, skip it when the environment "
                        "variable ONNXLINT_DEEP is set: the architecture is what the analysis "
                        "needs.",
                    ],
                ),
                e,
            )
        )
        rec.failed["load"] = "fake tensors cannot build the model"
        return
    notes = []
    if isinstance(e, (FileNotFoundError, OSError)):
        notes.append(
            "The factory runs under fake tensors (no real data). Skip weight loading when the "
            "environment variable ONNXLINT_DEEP is set: the architecture is what the analysis "
            "needs."
        )
    f = finding(
        wire.KIND_TARGET_ERROR,
        f"target {name!r}: factory {factory!r} raised {type(e).__name__}: {first_line(text)}",
        notes=notes,
    )
    fr, chain = rec.locate(rec.exception_frames(e), in_project=True)
    rec.add(place(f, fr or rec.factory_loc, chain))
    rec.failed["load"] = "factory raised"


class ExampleLines(torch.overrides.TorchFunctionMode):
    """Record, for each tensor a torch function returns while the factory runs, the
    factory's line that made it: the example inputs' lines (blame for size-1 examples)."""

    def __init__(self, code: Any, made: dict[int, int], file: str | None = None) -> None:
        super().__init__()
        self.code = code
        self.made = made
        self.file = file  # a script: any of its functions makes example inputs

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        if self.code is not None and isinstance(out, torch.Tensor):
            f: Any = sys._getframe(1)
            depth = 0
            while f is not None and depth < 6:
                if f.f_code is self.code or (self.file and f.f_code.co_filename == self.file):
                    self.made[id(out)] = f.f_lineno
                    break
                f = f.f_back
                depth += 1
        return out


@contextlib.contextmanager
def module_sites(rec: Analysis) -> Iterator[None]:
    """Record, for each of torch's own modules built while the factory runs, the innermost
    line outside torch that built it (`rec.module_sites`): a failure wholly inside torch's
    code (FakeQuantize's flag checks) is then reported at the user's `FakeQuantize()`,
    not at the factory's `return`. Only torch's classes: their frames are all internal."""
    module_init = torch.nn.Module.__init__

    def init(self: torch.nn.Module, *args: Any, **kwargs: Any) -> None:
        module_init(self, *args, **kwargs)
        if not type(self).__module__.startswith("torch."):
            return
        f: Any = sys._getframe(1)
        while f is not None and frames.classify(f.f_code.co_filename) == "internal":
            f = f.f_back
        if f is not None and self not in rec.module_sites:
            rec.module_sites[self] = frames.frame_dict(
                f.f_code.co_filename, f.f_lineno, f.f_code.co_name
            ) | {"where": frames.classify(f.f_code.co_filename)}

    init.__wrapped__ = module_init  # type: ignore[attr-defined]
    torch.nn.Module.__init__ = init  # type: ignore[method-assign]
    try:
        yield
    finally:
        torch.nn.Module.__init__ = module_init  # type: ignore[method-assign]


def _fake_aware(original: Any) -> Any:
    def init(tensor: Any, *args: Any, **kwargs: Any) -> Any:
        if torch_internals.is_fake(tensor):
            return tensor
        return original(tensor, *args, **kwargs)

    init.__wrapped__ = original  # type: ignore[attr-defined]
    return init


_INIT_INTERNALS = ("_no_grad_trunc_normal_",)


@contextlib.contextmanager
def fake_safe_init() -> Iterator[None]:
    """torch.nn.init leaves fake tensors as they are (their values do not exist)."""
    init_mod = torch.nn.init
    saved = {}
    for attr in _INIT_INTERNALS:
        original = getattr(init_mod, attr, None)
        if original is not None:
            saved[attr] = original
            setattr(init_mod, attr, _fake_aware(original))
    try:
        yield
    finally:
        for attr, original in saved.items():
            setattr(init_mod, attr, original)


def _load_table(rec: Analysis, ref: str, name: str) -> dict[Any, Any] | None:
    mod_name, _, attr = ref.partition(":")
    try:
        table = getattr(importlib.import_module(mod_name), attr)
    except Exception as e:
        rec.add(
            finding(
                wire.KIND_TARGET_ERROR,
                f"target {name!r}: cannot load translation_table {ref!r}: "
                f"{type(e).__name__}: {first_line(str(e))}",
            )
        )
        return None
    if not isinstance(table, dict):
        rec.add(
            finding(
                wire.KIND_TARGET_ERROR,
                f"target {name!r}: translation_table {ref!r} is a "
                f"{type(table).__name__}, not a dict",
            )
        )
        return None
    return table


def unpack(rec: Analysis, out: Any) -> str | None:
    """Accept (model, args), (model, args, kwargs) or (model, args, kwargs, dynamic_shapes)."""
    if not isinstance(out, (tuple, list)) or not 2 <= len(out) <= 4:
        return (
            f"returned {type(out).__name__}; it must return (model, args), "
            "(model, args, kwargs) or (model, args, kwargs, dynamic_shapes)"
        )
    model, args = out[0], out[1]
    kwargs = out[2] if len(out) > 2 and out[2] is not None else {}
    if not callable(model):
        return f"returned a {type(model).__name__} as the model; expected a torch.nn.Module"
    if isinstance(args, torch.Tensor):
        args = (args,)
    if not isinstance(args, (tuple, list)):
        return f"returned args of type {type(args).__name__}; expected a tuple"
    if not isinstance(kwargs, dict):
        return f"returned kwargs of type {type(kwargs).__name__}; expected a dict"
    if len(out) == 4 and out[3] is not None:
        rec.dynamic_shapes = out[3]
    rec.model, rec.args, rec.kwargs = model, tuple(args), dict(kwargs)
    return None


def summary(rec: Analysis) -> dict[str, Any]:
    by_dtype: dict[str, dict[str, int]] = {}
    if isinstance(rec.model, torch.nn.Module):
        seen: set[int] = set()
        for t in [*rec.model.parameters(), *rec.model.buffers()]:
            if id(t) in seen:
                continue
            seen.add(id(t))
            d = by_dtype.setdefault(str(t.dtype).replace("torch.", ""), {"count": 0, "bytes": 0})
            d["count"] += int(t.numel())
            d["bytes"] += int(t.numel()) * int(t.element_size())
    cls = type(rec.model)
    return {
        "class": f"{cls.__module__}.{cls.__qualname__}",
        "class_loc": source_loc(cls),
        "params_by_dtype": by_dtype,
        "params": sum(v["count"] for v in by_dtype.values()),
        "weight_bytes": sum(v["bytes"] for v in by_dtype.values()),
        "inputs": [describe(a) for a in rec.args]
        + [f"{k}={describe(v)}" for k, v in rec.kwargs.items()],
    }


def describe(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"Tensor[{str(v.dtype).replace('torch.', '')}]({', '.join(map(str, v.shape))})"
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + "(" + ", ".join(describe(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {describe(x)}" for k, x in v.items()) + "}"
    return repr(v)[:60]
