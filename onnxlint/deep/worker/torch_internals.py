"""Every use of torch's private APIs, in one place, guarded by version.

torch.onnx's exporter modules (`_registration`, `_dispatching`, `_core`,
`_dynamic_shapes`), dynamo's graph-break logging and the ShapeEnv are private
and change every release. The rest of the worker calls only the functions
here; each raises `Unsupported` (never AttributeError deep inside a phase)
when this torch does not have what it needs, so the caller can report
"not supported on torch X" and go on with the phases that still work.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import logging
import logging.handlers
import re
import sys
import traceback
from collections.abc import Iterator
from typing import Any

import torch

TESTED_TORCH = ("2.13",)
"""Minor versions whose internals this module was written against."""


class Unsupported(RuntimeError):
    """This torch lacks an internal API a phase needs."""


def torch_version() -> str:
    return str(torch.__version__).split("+")[0]


def is_tested_version() -> bool:
    return any(torch_version().startswith(v + ".") or torch_version() == v for v in TESTED_TORCH)


def _patch(owner: Any, name: str, value: Any) -> None:
    """Replace a torch attribute (a method we wrap); always undone in a `finally`."""
    setattr(owner, name, value)


def _exporter() -> Any:
    try:
        from torch.onnx._internal.exporter import (
            _core,
            _dispatching,
            _dynamic_shapes,
            _registration,
        )
    except ImportError as e:  # pragma: no cover - depends on the torch version
        raise Unsupported(
            f"torch {torch_version()} has no dynamo ONNX exporter internals: {e}"
        ) from e
    return _core, _dispatching, _dynamic_shapes, _registration


# --------------------------------------------------------------------------- fake mode


PLACEHOLDER_INTS = (2, 8)
"""Values given, in turn, to a data-dependent int (`int(tensor)`) so tracing can go on.

Python's `int()` must return a real number, so no torch API keeps it symbolic
(`.item()` does: torch.export then carries an unbacked symbol). 1 and 0 are
special sizes (broadcasting, empty tensors), so the first placeholder is 2;
when the trace then fails on an error that follows from the placeholder (a
`view(-1, 8)` of 2 elements), the next one is tried.
"""


def fake_mode_class() -> type[Any]:
    """A FakeTensorMode whose data-dependent scalars can be answered with a placeholder.

    Under plain fake mode `.item()` raises, so `torch._dynamo.explain` stops at
    the first data-dependent graph break. With `lenient_scalars` on, `.item()`
    returns the example's real value when the input was built from literal data
    (`torch.tensor([2, 4])` keeps its value as a fake tensor's constant), else a
    placeholder (True, 1.0, or `PLACEHOLDER_INTS[0]`). The values are not the
    data's, so this is used for explain and shape probes only.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    class LenientFakeTensorMode(FakeTensorMode):  # type: ignore[no-untyped-call]
        lenient_scalars = False

        on_answer: Any = None  # called once per placeholder answer (load counts them)

        def dispatch(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if self.lenient_scalars and func in _data_dependent_scalar_ops():
                if self.on_answer is not None:
                    self.on_answer()
                t = args[0] if args else None
                constant = getattr(t, "constant", None)
                if isinstance(constant, torch.Tensor) and func is not torch.ops.aten.equal.default:
                    with contextlib.suppress(Exception):
                        if func is torch.ops.aten.is_nonzero.default:
                            return bool(constant)
                        return constant.item()
                dtype = getattr(t, "dtype", torch.float32)
                if (
                    func in (torch.ops.aten.equal.default, torch.ops.aten.is_nonzero.default)
                    or dtype == torch.bool
                ):
                    return self._decide(True)
                if dtype.is_floating_point or dtype.is_complex:
                    return 1.0
                return PLACEHOLDER_INTS[0]
            out = super().dispatch(func, types, args, kwargs)
            if self.concrete_sizes and torch.Tag.dynamic_output_shape in func.tags:
                return self._concrete(out)
            return out

        concrete_sizes = False

        def _concrete(self, out: Any) -> Any:
            """The output of a data-dependent-size op run eagerly (between two of
            dynamo's graphs) at a placeholder size: on real tensors it has a real size,
            so the code after it (a resumed frame) sees a number, not a symbol, and
            `if boxes.numel() == 0:` is no graph break there, as with real data."""
            env = self.shape_env
            if env is None:
                return out
            values = dict(symbol_hints(env))
            ranges = getattr(env, "var_to_range", {})

            def size_of(sym: Any) -> None:
                if sym not in values:
                    # the larger placeholder: a data-dependent index (`.item()`, the
                    # smaller one) then stays in range, as real data's does
                    looping = hasattr(env, "_placeholder") and env._placeholder() == 0
                    n = 0 if looping else PLACEHOLDER_INTS[1]
                    upper: Any = getattr(ranges.get(sym), "upper", None)
                    with contextlib.suppress(Exception):
                        n = min(n, int(upper))
                    values[sym] = n

            def fix(t: Any) -> Any:
                if not isinstance(t, torch.Tensor):
                    return t
                exprs = [size_expr(d) for d in t.shape]
                syms = set().union(*(free_symbols(e) for e in exprs)) if exprs else set()
                if not syms:
                    return t
                for sym in syms:
                    size_of(sym)
                shape = [substitute(e, values) for e in exprs]
                sizes = [n for n in shape if isinstance(n, int)]
                return t.new_empty(sizes) if len(sizes) == len(shape) else t

            return torch.utils._pytree.tree_map(fix, out)

        def _decide(self, answer: bool) -> bool:
            """A placeholder yes/no, the other way at a line `decisions` flipped."""
            decisions = getattr(self.shape_env, "decisions", None)
            if decisions is None:
                return answer
            line = _user_line()
            if line in decisions.flipped:
                answer = not answer
            decisions.made.append((line, answer))
            return answer

    return LenientFakeTensorMode


def _data_dependent_scalar_ops() -> tuple[Any, ...]:
    aten = torch.ops.aten
    return (aten._local_scalar_dense.default, aten.is_nonzero.default, aten.equal.default)


@contextlib.contextmanager
def lenient_scalars(mode: Any) -> Iterator[None]:
    if mode is None:  # real tensors: their values exist
        yield
        return
    old = getattr(mode, "lenient_scalars", False)
    mode.lenient_scalars = True
    try:
        yield
    finally:
        mode.lenient_scalars = old


# --------------------------------------------------------------------------- graph breaks


def explain(
    model: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    fake_mode: Any = None,
    seen: list[Any] | None = None,
    decisions: Decisions | None = None,
) -> Any:
    """`torch._dynamo.explain` on the fake model. With the fake mode given, it gets a
    ShapeEnv for the run (`unbacked_sizes`): an op whose output size depends on the data
    (`nonzero`, boolean indexing, `unique`) then runs eagerly after its graph break, as on
    real tensors, instead of raising DynamicOutputShapeException and ending the search.
    `seen` gets the break reasons gathered so far, so that they are not lost when a later
    line stops the run. `decisions`: the conditions to decide the other way, and where
    the run decided at a placeholder (see `Decisions`)."""
    import torch._dynamo

    torch._dynamo.reset()
    with unbacked_sizes(fake_mode, decisions), _breaks_so_far(seen), _concrete(fake_mode):
        return torch._dynamo.explain(model)(*args, **kwargs)


@contextlib.contextmanager
def _concrete(fake_mode: Any) -> Iterator[None]:
    """Data-dependent sizes of ops run eagerly become placeholder numbers for a while."""
    if fake_mode is None or not hasattr(fake_mode, "concrete_sizes"):
        yield
        return
    from torch._subclasses.fake_tensor import FakeTensor

    def format_as_a_number(self: Any, spec: str) -> str:
        # torch.Tensor.__format__ formats a 0-d tensor as its number, but only for plain
        # tensors: `f"expert_{idx[0]}"` (transformers' MoE experts) must not read
        # "expert_FakeTensor(...)"; the number is the lenient scalar's (`.item()`)
        if self.dim() == 0:
            return format(self.item(), spec)
        return object.__format__(self, spec)

    had = "__format__" in vars(FakeTensor)
    old = vars(FakeTensor).get("__format__")
    fake_mode.concrete_sizes = True
    FakeTensor.__format__ = format_as_a_number  # type: ignore[method-assign]
    try:
        yield
    finally:
        fake_mode.concrete_sizes = False
        if had:
            FakeTensor.__format__ = old  # type: ignore[method-assign,assignment]
        else:
            del FakeTensor.__format__


@dataclasses.dataclass
class Decisions:
    """Data-dependent yes/no conditions decided at placeholder sizes in one run.

    `flipped`: the user lines whose condition is decided the other way (the placeholder
    took the branch that raises: `if num_tokens != n: raise ValueError(...)`, a model's
    own consistency check, which real data passes). `made`: the user lines decided, in
    order, with the answer given."""

    flipped: set[tuple[str, int]] = dataclasses.field(default_factory=set)
    made: collections.deque[tuple[tuple[str, int], bool]] = dataclasses.field(
        default_factory=lambda: collections.deque(maxlen=256)
    )


@contextlib.contextmanager
def unbacked_sizes(fake_mode: Any, decisions: Decisions | None = None) -> Iterator[None]:
    """Give a fake mode without one a ShapeEnv for a while: data-dependent output sizes
    become unbacked symbols (as under torch.export's own fake mode), and what Python asks
    of them is decided as if each were `PLACEHOLDER_INTS[0]` (`if idx.numel() == 0:` goes
    on as for data that selects two elements), never an error."""
    if fake_mode is None or getattr(fake_mode, "shape_env", None) is not None:
        yield
        return
    fake_mode.shape_env = _placeholder_shape_env(decisions or Decisions())
    try:
        yield
    finally:
        fake_mode.shape_env = None


LOOP_DECISIONS = 64
"""Decisions at one line before its unbacked sizes count as 0 (a data loop ends)."""

MAX_PLACEHOLDER_DECISIONS = 10_000
"""Data-dependent conditions decided at a placeholder size in one explain run; beyond it,
a loop is waiting on the data and the search stops there (OLX816)."""


def _placeholder_shape_env(decisions: Decisions) -> Any:
    import sympy  # type: ignore[import-untyped]

    try:
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()} has no ShapeEnv: {e}") from e

    class PlaceholderShapeEnv(ShapeEnv):
        decided = 0
        decisions: Decisions
        per_line: dict[tuple[str, int], int]

        def _evaluate_expr(
            self,
            orig_expr: Any,
            hint: Any = None,
            fx_node: Any = None,
            size_oblivious: bool = False,
            fallback_value: Any = None,
            **kw: Any,
        ) -> Any:
            if fallback_value is None and isinstance(orig_expr, sympy.Basic):
                values = dict(symbol_hints(self))
                size = self._placeholder()
                values.update({s: size for s in free_symbols(orig_expr) if s not in values})
                decided = substitute(orig_expr, values)
                if isinstance(decided, bool):
                    line = _user_line()
                    if line in decisions.flipped:
                        decided = not decided
                    decisions.made.append((line, decided))
                if decided is not None:
                    self.decided += 1
                    if self.decided > MAX_PLACEHOLDER_DECISIONS:
                        # `while len(idxs) > 0:` never ends on placeholder sizes
                        raise RuntimeError(
                            f"more than {MAX_PLACEHOLDER_DECISIONS} data-dependent decisions: "
                            "a loop runs until the data decides"
                        )
                    fallback_value = sympy.sympify(decided)
            return super()._evaluate_expr(
                orig_expr, hint, fx_node, size_oblivious, fallback_value, **kw
            )

        def _placeholder(self) -> int:
            """`PLACEHOLDER_INTS[0]`, until the same line has decided `LOOP_DECISIONS`
            times: then 0, as if the data ran out, so that `while len(idx) > 0:` ends."""
            if not hasattr(self, "per_line"):
                self.per_line = {}
            return PLACEHOLDER_INTS[0] if not _looping(self.per_line) else 0

    env = PlaceholderShapeEnv()
    env.decisions = decisions
    return env


def _looping(per_line: dict[tuple[str, int], int]) -> bool:
    """Count one data-dependent decision at the user's line that asks for it; True once
    that line has decided `LOOP_DECISIONS` times (a loop that waits on the data)."""
    key = _user_line()
    per_line[key] = per_line.get(key, 0) + 1
    return per_line[key] > LOOP_DECISIONS


def _user_line() -> tuple[str, int]:
    """(file, line) of the innermost frame outside torch, sympy and this worker."""
    f: Any = sys._getframe(1)
    while f is not None and internal_file(f.f_code.co_filename):
        f = f.f_back
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("", 0)


def internal_file(name: str) -> bool:
    """A file of torch, sympy or this worker (not the user's code)."""
    name = name.replace("\\", "/")
    return "/torch/" in name or "/sympy/" in name or "/onnxlint/deep/worker/" in name


@contextlib.contextmanager
def _breaks_so_far(seen: list[Any] | None) -> Iterator[None]:
    """Copy explain's break reasons into `seen` each time a graph is compiled."""
    try:
        from torch._dynamo.backends import debugging
    except ImportError:  # pragma: no cover
        yield
        return
    original = getattr(debugging, "_explain_graph_detail", None)
    if seen is None or original is None:
        yield
        return

    def hooked(*a: Any) -> Any:
        out = original(*a)
        with contextlib.suppress(Exception):  # recording must never change what explain does
            seen[:] = list(out[4])
        return out

    _patch(debugging, "_explain_graph_detail", hooked)
    try:
        yield
    finally:
        _patch(debugging, "_explain_graph_detail", original)


def reset_dynamo() -> None:
    import torch._dynamo

    torch._dynamo.reset()


# --------------------------------------------------------------------------- shapes


@contextlib.contextmanager
def record_specializations(records: list[dict[str, Any]]) -> Iterator[None]:
    """Record each time the ShapeEnv replaces a size symbol by a constant, with the stack.

    That is the moment user code forces a dimension static (`x.view(2, 12)`);
    torch's own error names the dimension but not the line.
    """
    try:
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()} has no ShapeEnv: {e}") from e
    original = getattr(ShapeEnv, "_set_replacement", None)
    if original is None:
        raise Unsupported(f"torch {torch_version()}: ShapeEnv has no _set_replacement")

    def hooked(self: Any, a: Any, tgt: Any, msg: str) -> Any:
        result = original(self, a, tgt, msg)
        try:
            if getattr(tgt, "is_number", False):
                sources = []
                for s in self.var_to_sources.get(a, []):
                    name = s.name
                    sources.append(name() if callable(name) else str(name))
                records.append(
                    {
                        "symbol": str(a),
                        "value": str(tgt),
                        "reason": str(msg),
                        "sources": sources,
                        "stack": traceback.extract_stack()[:-1],
                    }
                )
        except Exception:  # recording must never change what export does
            pass
        return result

    _patch(ShapeEnv, "_set_replacement", hooked)
    try:
        yield
    finally:
        _patch(ShapeEnv, "_set_replacement", original)


@contextlib.contextmanager
def assume_data_dependent(
    records: list[dict[str, Any]], int_value: int = PLACEHOLDER_INTS[0]
) -> Iterator[None]:
    """Let export go on past data-dependent values, recording each one.

    Plain export stops at the first `if tensor_value:` or `int(tensor)`. With
    this, a data-dependent condition is traced as if it held (the way
    `guard_or_true` does) and a data-dependent number that Python needs as a
    real one (`int(t)`, `float(t)`, `range(t.item())`, an index) gets the
    placeholder `int_value`; each is recorded (expression, stack, assumed value).
    The graph is then that of one branch and one size, enough to find the
    sites after it and check the ops. Sympy's Symbol is also a Boolean: only
    relations and logic are conditions, any other expression is a number.
    """
    import sympy

    try:
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()} has no ShapeEnv: {e}") from e
    orig_eval = getattr(ShapeEnv, "_evaluate_expr", None)
    orig_log = getattr(ShapeEnv, "_log_suppressed_dde", None)
    if orig_eval is None or orig_log is None:
        raise Unsupported(
            f"torch {torch_version()}: ShapeEnv cannot suppress data-dependent errors"
        )
    boolean = sympy.logic.boolalg.Boolean
    per_line: dict[tuple[str, int], int] = {}

    def evaluate(
        self: Any,
        orig_expr: Any,
        hint: Any = None,
        fx_node: Any = None,
        size_oblivious: bool = False,
        fallback_value: Any = None,
        **kw: Any,
    ) -> Any:
        if fallback_value is None and isinstance(orig_expr, sympy.Basic):
            # past LOOP_DECISIONS at one line, the data "runs out": `while n > 0:` ends
            held = not _looping(per_line)
            if isinstance(orig_expr, boolean) and not isinstance(orig_expr, sympy.Expr):
                assumed: Any = held
            elif getattr(orig_expr, "is_integer", False):
                assumed = sympy.Integer(int_value if held else 0)
            else:
                assumed = sympy.Float(float(int_value if held else 0))
            self._onnxlint_assuming = True
            try:
                return orig_eval(self, orig_expr, hint, fx_node, size_oblivious, assumed, **kw)
            finally:
                self._onnxlint_assuming = False
        return orig_eval(self, orig_expr, hint, fx_node, size_oblivious, fallback_value, **kw)

    def log(self: Any, a: Any, assumed: Any) -> Any:
        if getattr(self, "_onnxlint_assuming", False):
            value = None if assumed is True else str(assumed)
            stack = traceback.extract_stack()[:-1]
            records.append({"expr": str(a), "value": value, "stack": stack})
        return orig_log(self, a, assumed)

    _patch(ShapeEnv, "_evaluate_expr", evaluate)
    _patch(ShapeEnv, "_log_suppressed_dde", log)
    try:
        yield
    finally:
        _patch(ShapeEnv, "_evaluate_expr", orig_eval)
        _patch(ShapeEnv, "_log_suppressed_dde", orig_log)


def has_symbolic(cls: Any) -> bool:
    """A `torch.autograd.Function` subclass of the user's with a `symbolic` of its own."""
    base = torch.autograd.Function
    return any(
        "symbolic" in vars(c)
        for c in getattr(cls, "__mro__", ())
        if c is not base and issubclass(c, base) and c.__module__.split(".")[0] != "torch"
    )


@contextlib.contextmanager
def record_symbolic_functions(records: list[dict[str, Any]]) -> Iterator[None]:
    """Record each `torch.autograd.Function` with a `symbolic` that the (non-strict) capture
    applies (`NMS.apply(boxes, scores)`), with the stack that applied it: the dynamo
    exporter exports its `forward`, the `symbolic` only feeds the TorchScript exporter."""
    function = torch.autograd.Function
    original = vars(function).get("apply")
    if not isinstance(original, classmethod):  # pragma: no cover - another torch
        yield
        return

    def apply(cls: Any, *args: Any, **kwargs: Any) -> Any:
        with contextlib.suppress(Exception):  # recording must never change what export does
            if has_symbolic(cls):
                records.append({"cls": cls, "stack": traceback.extract_stack()[:-1]})
        return original.__func__(cls, *args, **kwargs)

    function.apply = classmethod(apply)  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        function.apply = original  # type: ignore[method-assign,assignment]


@contextlib.contextmanager
def record_guards(records: list[dict[str, Any]]) -> Iterator[None]:
    """Record each shape guard export installs (`s0 > 2`), with the stack that installed it.

    A guard on a dynamic dim means the code took one side of a size condition
    (`if x.shape[0] > 2:`) and export traced only that side. The ShapeEnv keeps
    the guards with one frame each; we want the whole stack to pick the user's.
    """
    try:
        from torch.fx.experimental.symbolic_shapes import ShapeEnv
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()} has no ShapeEnv: {e}") from e
    original = getattr(ShapeEnv, "_maybe_guard_rel", None)
    if original is None:
        raise Unsupported(f"torch {torch_version()}: ShapeEnv has no _maybe_guard_rel")

    def hooked(self: Any, expr: Any) -> Any:
        with contextlib.suppress(Exception):  # recording must never change what export does
            records.append({"expr": expr, "stack": traceback.extract_stack()[:-1]})
        return original(self, expr)

    _patch(ShapeEnv, "_maybe_guard_rel", hooked)
    try:
        yield
    finally:
        _patch(ShapeEnv, "_maybe_guard_rel", original)


def shape_env_of(ep: Any) -> Any:
    """The ShapeEnv an ExportedProgram's symbolic sizes live in (None if all static)."""
    for node in ep.graph.nodes:
        val = node.meta.get("val") if node.op == "placeholder" else None
        mode = getattr(val, "fake_mode", None)
        env = getattr(mode, "shape_env", None)
        if env is not None:
            return env
    return None


def symbol_hints(shape_env: Any) -> dict[Any, int]:
    """Each backed size symbol's value at the example inputs."""
    if shape_env is None:
        return {}
    table = getattr(shape_env, "backed_var_to_val", None)
    if table is None:  # older torch spelled it var_to_val
        table = getattr(shape_env, "var_to_val", {})
    out = {}
    for k, v in dict(table).items():
        with contextlib.suppress(Exception):
            out[k] = int(v)
    return out


def size_expr(d: Any) -> Any:
    """The sympy expression of a size (a constant for an int), replacements applied."""
    if isinstance(d, int):
        import sympy

        return sympy.Integer(d)
    node = getattr(d, "node", None)
    expr = getattr(node, "expr", None)
    if expr is None:
        return None
    env = getattr(node, "shape_env", None)
    replace = getattr(env, "replace", None)
    if callable(replace):
        with contextlib.suppress(Exception):
            expr = replace(expr)
    return expr


def substitute(expr: Any, values: dict[Any, int]) -> int | bool | None:
    """An int or bool expression at the given symbol values (None if still symbolic)."""
    import sympy

    try:
        out = expr.xreplace({k: sympy.Integer(v) for k, v in values.items()})
    except Exception:
        return None
    if out is sympy.true or out is True:
        return True
    if out is sympy.false or out is False:
        return False
    if getattr(out, "is_number", False):
        with contextlib.suppress(Exception):
            return int(out)
    return None


def symbol_range(ep: Any, symbol: Any) -> tuple[int | None, int | None]:
    """The [lower, upper] export inferred for a size symbol (None where unbounded)."""
    rc = getattr(ep, "range_constraints", None) or {}
    vr = rc.get(symbol)
    if vr is None:
        return None, None

    def as_int(v: Any) -> int | None:
        try:
            i = int(v)
        except Exception:  # int_oo, sympy infinities
            return None
        return i if abs(i) < 2**62 else None

    return as_int(getattr(vr, "lower", None)), as_int(getattr(vr, "upper", None))


def rename_symbols(expr: Any, symbols: set[Any], name: str) -> Any:
    """Replace size symbols by one named symbol (`s77 + s12 - 1` -> `2*batch - 1`)."""
    import sympy

    try:
        named = sympy.Symbol(name, integer=True, positive=True)
        return expr.xreplace({s: named for s in symbols})
    except Exception:
        return expr


def free_symbols(expr: Any) -> set[Any]:
    return set(getattr(expr, "free_symbols", ()) or ())


_RELATION_FIX = re.compile(r"^\s*(\w+) = (\d+)\*_\w+(?: \+ (\d+))?\s*$", re.M)


def suggested_relations(
    model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dynamic_shapes: Any
) -> dict[str, tuple[int, int]]:
    """The relations torch.export asks for (`h = 4*_h` -> {"h": (4, 0)}): it is run with
    each requested dim as a named `Dim`, which makes it check the dims' constraints and
    suggest fixes (strings and Dim.DYNAMIC, what torch.onnx.export passes, do not)."""
    try:
        export(model, args, kwargs, to_export_dims(dynamic_shapes, named=True), onnx=False)
    except Exception as e:
        text = str(e)
    else:
        return {}
    if "Suggested fixes:" not in text:
        return {}
    fixes = text.split("Suggested fixes:", 1)[1].split("\n\n", 1)[0]
    return {m[1]: (int(m[2]), int(m[3] or 0)) for m in _RELATION_FIX.finditer(fixes)}


def to_export_dims(dynamic_shapes: Any, *, auto: bool = False, named: bool = False) -> Any:
    """Strings (named dims, as torch.onnx accepts them) -> Dim.DYNAMIC, or Dim.AUTO.

    With `auto`, every requested dim (string or Dim) becomes Dim.AUTO: export then
    falls back to static where the code forces it, instead of failing, so the
    rest of the analysis can go on and we can name each specialised dim.
    """
    from torch.export import Dim

    target = Dim.AUTO if auto else Dim.DYNAMIC

    def conv(v: Any) -> Any:
        if named and isinstance(v, str):
            return Dim(v if v.isidentifier() else re.sub(r"\W", "_", v))
        if isinstance(v, str) or (auto and v is not None and not isinstance(v, int)):
            return target
        return v

    def walk(spec: Any) -> Any:
        if spec is None:
            return None
        if isinstance(spec, dict):
            if all(isinstance(k, int) for k in spec):
                return {k: conv(v) for k, v in spec.items()}
            return {k: walk(v) for k, v in spec.items()}
        if isinstance(spec, (list, tuple)):
            if spec and all(isinstance(v, (str, type(None))) or _is_dim(v) for v in spec):
                return type(spec)(conv(v) for v in spec)
            return type(spec)(walk(v) for v in spec)
        return conv(spec)

    return walk(dynamic_shapes)


def _is_dim(v: Any) -> bool:
    from torch.export import Dim

    return isinstance(v, Dim) or type(v).__name__ in ("_DimHint", "Dim", "_Dim", "_DerivedDim")


def static_int(d: Any) -> int | None:
    """The value of a dim that is a constant (an int, or a SymInt specialised to one)."""
    if isinstance(d, int):
        return d
    try:
        from torch.fx.experimental.symbolic_shapes import is_concrete_int

        if is_concrete_int(d):
            return int(d)
    except ImportError:  # pragma: no cover
        pass
    node = getattr(d, "node", None)
    maybe = getattr(node, "maybe_as_int", None)
    value = maybe() if callable(maybe) else None
    return int(value) if value is not None else None


def is_constraint_violation(exc: BaseException) -> bool:
    text = str(exc)
    return (
        "Constraints violated" in text
        or "specialized it to be a constant" in text
        or ("user-specified" in text and "static shape" in text)
        or "conflicts between user-specified ranges and inferred ranges" in text
    )


def is_data_dependent_error(exc: BaseException) -> bool:
    names = {c.__name__ for c in type(exc).__mro__}
    if names & {"GuardOnDataDependentSymNode", "DataDependentOutputException"}:
        return True
    text = str(exc)
    return "data-dependent" in text or "data dependent" in text


def export(
    model: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    dynamic_shapes: Any,
    *,
    onnx: bool = True,
    strict: bool = False,
) -> Any:
    """Non-strict torch.export as torch.onnx.export's first capture strategy runs it: with
    its patches and flags (`onnx_capture_settings`), or the decisions differ (an LSTM's
    sequence dim, a dim whose example is 1, are pinned without them). `onnx=False`: plain
    torch.export, for a script whose own call is `torch.export.export`. `strict=True`:
    torch.onnx.export's second strategy (strict torch.export, TorchDynamo), which it
    falls back to when the first fails."""
    settings: contextlib.AbstractContextManager[dict[str, Any]] = (
        onnx_capture_settings(dynamic_shapes, strict=strict) if onnx else contextlib.nullcontext({})
    )
    with full_stack_traces(), settings as extra:
        return torch.export.export(
            model,
            args,
            kwargs=kwargs or None,
            dynamic_shapes=dynamic_shapes,
            strict=strict,
            **extra,
        )


@contextlib.contextmanager
def onnx_exporting(on: bool) -> Iterator[None]:
    """`torch.onnx.is_in_onnx_export()` is True inside torch.onnx.export (torch 2.13 sets
    `_flags._is_onnx_exporting` around it). Models branch on it (mmcls's head returns the
    tensor, not a NumPy list), so the analysis of an ONNX export sets it too."""
    try:
        from torch.onnx._internal.exporter import _flags
    except ImportError:  # pragma: no cover - other torch versions
        yield
        return
    saved = _flags._is_onnx_exporting
    _flags._is_onnx_exporting = on or saved
    try:
        yield
    finally:
        _flags._is_onnx_exporting = saved


@contextlib.contextmanager
def onnx_capture_settings(dynamic_shapes: Any, *, strict: bool = False) -> Iterator[dict[str, Any]]:
    """What torch.onnx.export's capture strategies (`TorchExportNonStrictStrategy`, then
    `TorchExportStrictStrategy`, torch 2.13) set around torch.export: the LSTM/GRU
    while-loop decompositions when any shape is dynamic, `backed_size_oblivious` (a
    dynamic dim may be 0 or 1), its deferred-runtime-asserts flag, and for the strict one
    `torch.jit.isinstance` as `isinstance`. Yields the extra torch.export arguments; where
    this torch has none of it, nothing."""
    try:
        from torch.onnx import _flags
        from torch.onnx._internal.exporter import _capture_strategies as strategies

        rnn = strategies._patch_dynamic_shape_rnn_decompositions
        unsupported = strategies._patch_dynamo_unsupported_functions
        deferred = bool(_flags.PREFER_DEFERRED_RUNTIME_ASSERTS_OVER_GUARDS)
        patch = torch.fx.experimental._config.patch  # type: ignore[attr-defined]
    except (ImportError, AttributeError):  # pragma: no cover - other torch versions
        yield {}
        return
    with contextlib.ExitStack() as stack:
        if strict:
            stack.enter_context(unsupported())
        stack.enter_context(rnn(dynamic_shapes))
        stack.enter_context(patch(backed_size_oblivious=True))
        yield {"prefer_deferred_runtime_asserts_over_guards": deferred}


@contextlib.contextmanager
def full_stack_traces() -> Iterator[None]:
    """Nodes' `stack_trace` with every frame from the first `forward` in, not only the
    frames of functions named `forward` (export's default): a helper function's line
    (`ops.pairwise` calling `torch.cdist`) is where its op comes from. Metadata only."""
    try:
        from torch.fx.proxy import TracerBase
    except ImportError:  # pragma: no cover
        yield
        return
    original = getattr(TracerBase, "_filter_traceback_frames", None)
    if original is None:
        yield
        return

    def filtered(self: Any, summary: Any) -> Any:
        only_forward = getattr(self, "_record_forward_stack_traces_only", False)
        if only_forward:
            self._record_forward_stack_traces_only = False
        try:
            return original(self, summary)
        finally:
            if only_forward:
                self._record_forward_stack_traces_only = True

    _patch(TracerBase, "_filter_traceback_frames", filtered)
    try:
        yield
    finally:
        _patch(TracerBase, "_filter_traceback_frames", original)


# --------------------------------------------------------------------------- ONNX registry


def onnx_opset_bounds() -> tuple[int, int, int]:
    """(torchlib opset, default opset, max opset) of this torch."""
    try:
        from torch.onnx import _constants as public_constants
        from torch.onnx._internal.exporter import _constants
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()}: {e}") from e
    return (
        int(_constants.TORCHLIB_OPSET),
        int(public_constants.ONNX_DEFAULT_OPSET),
        int(public_constants.ONNX_MAX_OPSET),
    )


_REGISTRY_CACHE: dict[int, Any] = {}


def registry(opset: int, custom_translation_table: dict[Any, Any] | None = None) -> Any:
    """The ONNX registry torch.onnx.export would build (cached in the warm zygote)."""
    _core, _dispatching, _dynamic_shapes, _registration = _exporter()
    torchlib_opset, _, _ = onnx_opset_bounds()
    reg_opset = max(opset, torchlib_opset)
    if custom_translation_table:
        reg = _registration.ONNXRegistry.from_torchlib(opset_version=reg_opset)
        for op, fn in custom_translation_table.items():
            reg.register_op(op, fn, is_complex=False)
        return reg
    if reg_opset not in _REGISTRY_CACHE:
        _REGISTRY_CACHE[reg_opset] = _registration.ONNXRegistry.from_torchlib(
            opset_version=reg_opset
        )
    return _REGISTRY_CACHE[reg_opset]


def decompose(ep: Any, reg: Any) -> Any:
    """The exporter's step 2/3: ONNX-friendly decompositions and type promotion."""
    _core = _exporter()[0]
    prepare = getattr(_core, "_prepare_exported_program_for_export", None)
    if prepare is None:
        raise Unsupported(f"torch {torch_version()}: no _prepare_exported_program_for_export")
    return prepare(ep, registry=reg)


def dispatch(node: Any, reg: Any) -> tuple[bool, str]:
    """Whether the registry has an ONNX function for this FX node, and why not."""
    _dispatching = _exporter()[1]
    try:
        fn, message = _dispatching.dispatch(node, reg)
    except Exception as e:
        return False, f"dispatcher error: {type(e).__name__}: {e}"
    return fn is not None, str(message or "")


def to_onnx(decomposed_ep: Any, reg: Any, opset: int, dynamic_shapes: Any) -> Any:
    """The exporter's step 3/3 on an already decomposed program; optimize=False.

    Skips a second decomposition (which costs tens of seconds on a 7B model).
    Dim names given as strings become the ONNX dim names, as in torch.onnx.export.
    """
    _core, _dispatching, _dynamic_shapes, _registration = _exporter()
    convert = getattr(_core, "_exported_program_to_onnx_program", None)
    if convert is None:
        raise Unsupported(f"torch {torch_version()}: no _exported_program_to_onnx_program")
    program = convert(decomposed_ep, registry=reg)
    if dynamic_shapes is not None:
        with contextlib.suppress(Exception):
            program._rename_dynamic_axes(dynamic_shapes)
    return program


def convert_opset(program: Any, opset: int) -> str | None:
    """Version-convert to the requested opset, as torch.onnx.export does; the problem, if any."""
    try:
        from torch.onnx._internal._lazy_import import (  # type: ignore[attr-defined]
            onnxscript_apis,
        )
    except ImportError as e:  # pragma: no cover
        raise Unsupported(f"torch {torch_version()}: no onnxscript_apis: {e}") from e
    before = int(program.model.opset_imports.get("", 0))
    if before == opset:
        return None
    handler = logging.handlers.BufferingHandler(capacity=1000)  # keeps what it logs
    handler.setLevel(logging.WARNING)
    log = logging.getLogger("onnxscript.version_converter")
    log.addHandler(handler)
    swapped = _small_weights_as_zeros(program.model)
    try:
        program.model = onnxscript_apis.convert_version(program.model, opset)
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    finally:
        log.removeHandler(handler)
        _put_back(program.model, swapped)
    after = int(program.model.opset_imports.get("", 0))
    if after != opset:
        # onnxscript logs the ONNX C API's error ("No Adapter To Version $17 for Pad") and
        # keeps the model: that error is the cause
        why = [
            _root(r.exc_info[1]) for r in handler.buffer if r.exc_info and r.exc_info[1] is not None
        ]
        cause = f": {type(why[-1]).__name__}: {_last_line(str(why[-1]))}" if why else ""
        stayed = f"the model stayed at opset {after} (conversion from {before} to {opset} failed)"
        return stayed + cause
    return None


_C_API_KEEPS = 1000
"""Elements up to which onnxscript's call of the ONNX C API keeps an initializer's values
in the proto it serialises (`_c_api_utils._BIG_TENSOR_SIZE_LIMIT`); larger ones it drops."""


def _small_weights_as_zeros(model: Any) -> dict[str, Any]:
    """The weights the C API would serialise have no values here (fake tensors): it failed
    with "SerdeError: Error calling serialize_model_into", where a real export serialises
    them. They become zeros of their shape for the conversion (at most 1000 elements each);
    the conversion reads the graph, not the weights' values. Returns name -> the original."""
    import numpy as np
    import onnx_ir as ir

    swapped: dict[str, Any] = {}
    for name, value in list(model.graph.initializers.items()):
        tensor = value.const_value
        if tensor is None or tensor.size > _C_API_KEEPS:
            continue
        try:
            tensor.numpy()
        except Exception:
            dims = tuple(int(d) for d in tensor.shape)
            value.const_value = ir.tensor(np.zeros(dims, dtype=tensor.dtype.numpy()), name=name)
            swapped[name] = tensor
    return swapped


def _put_back(model: Any, swapped: dict[str, Any]) -> None:
    """The fake weights back in place of the zeros (by name: the converted model is new)."""
    for name, tensor in swapped.items():
        value = model.graph.initializers.get(name)
        if value is not None:
            value.const_value = tensor


def _root(error: BaseException) -> BaseException:
    """The exception at the bottom of a chain (`raise ... from`), which says why."""
    seen = {id(error)}
    while error.__cause__ is not None and id(error.__cause__) not in seen:
        error = error.__cause__
        seen.add(id(error))
    return error


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return lines[-1] if lines else text


def is_custom_op(target: Any) -> bool:
    ns = getattr(target, "namespace", None)
    return ns not in (None, "aten", "prims", "_operator", "onnx", "higher_order")


def op_name(target: Any) -> str:
    name = getattr(target, "name", None)
    if callable(name):
        with contextlib.suppress(Exception):
            return str(name())
    return str(target)


def missing_fake_impl_error(exc: BaseException) -> bool:
    return "no fake impl registered" in str(exc) or "There was no fake impl" in str(exc)


def is_fake(t: Any) -> bool:
    """Whether a tensor is a FakeTensor (shape and dtype, no data)."""
    from torch._subclasses.fake_tensor import FakeTensor

    return isinstance(t, FakeTensor)


_ARGUMENT_TYPES = re.compile(
    r"received an invalid combination of arguments|argument '\w+' must be .+, but found"
)


def is_fake_limitation(exc: BaseException) -> bool:
    """Whether an error is fake tensors' (no data), not the user's code's."""
    names = {type(e).__name__ for e in _exc_chain(exc)}
    if names & {
        "DataDependentOutputException",
        "DynamicOutputShapeException",
        "UnsupportedFakeTensorException",
        "GuardOnDataDependentSymNode",
        "UnsupportedOperatorException",
    }:
        return True
    # The innermost error says what happened; torch wraps the model's own error raised
    # under fake tensors ("RuntimeError when making fake tensor call") around it.
    innermost = list(_exc_chain(exc))[-1]
    text = str(innermost)
    if isinstance(innermost, TypeError) and _ARGUMENT_TYPES.search(text):
        # an op's argument check names the types it got ("got (FakeTensor, NoneType, ...)"):
        # the code passes the wrong kind of argument, and real tensors fail the same way
        return False
    return any(
        s in text
        for s in (
            "Cannot copy out of meta",
            "not supported for tensor subclasses",
            "FakeTensor",
            "fake tensor",
            "data-dependent",
        )
    )


def _exc_chain(exc: BaseException) -> Iterator[BaseException]:
    e: BaseException | None = exc
    seen: set[int] = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def refined_shapes(exc: BaseException, dims: Any) -> Any:
    """The dynamic shapes torch.onnx.export retries with after a `UserError` (torch's
    suggested fixes applied), or None when it does not retry."""
    try:
        from torch._dynamo.exc import UserError
    except ImportError:  # pragma: no cover
        return None
    if not isinstance(exc, UserError):
        return None
    try:
        return torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes(exc.msg, dims)
    except Exception:
        return None


def onnx_export_refines(
    exc: BaseException, model: Any, args: tuple[Any, ...], kwargs: dict[str, Any], dims: Any
) -> bool:
    """Whether torch.onnx.export gets past this torch.export error by itself, as its capture
    strategy does: a `torch._dynamo.exc.UserError` is retried once with
    `refine_dynamic_shapes_from_suggested_fixes` (the dim becomes static); any other error,
    or a retry that fails, stops the export at step 1/3."""
    refined = refined_shapes(exc, dims)
    if refined is None:
        return False
    try:
        export(model, args, kwargs, refined)
    except Exception:
        return False
    return True
