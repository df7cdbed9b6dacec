"""One target's analysis, phase by phase, in a forked child of the warm worker.

Phases: load (factory under fake mode) -> explain (graph breaks) -> export
(non-strict torch.export, specialised dims) -> decompose (every node checked
against the ONNX registry) -> translate (ONNX structure, checker, signature)
-> verify (optional, real weights + onnxruntime). A phase that fails reports
findings and the phases that need its output are skipped; nothing here may
raise past `run`.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import math
import os
import re
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

import torch

from . import frames, torch_internals, wire
from .verify import resize_inputs
from .workarounds import workaround

Emit = Callable[[str, int | None], None]

DEFAULT_VERIFY_MAX_PARAMS = 50_000_000
"""Verification allocates real weights; above this many parameters it is skipped."""

PROBE_BUDGET_S = 30.0
"""Wall-time budget of the eager fake-mode runs that check output dims (OLX818)."""

_RAISED_AT = re.compile(r'The following call raised this error:\s*\n\s*File "([^"]+)", line (\d+)')


def _finding(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": kind,
        "message": message,
        "notes": [],
        "file": None,
        "line": None,
    }
    out.update(extra)
    return out


def _place(finding: dict[str, Any], fr: dict[str, Any] | None) -> dict[str, Any]:
    if fr is not None:
        finding["file"] = fr["file"]
        finding["line"] = fr["line"]
    return finding


def _first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return str(text).strip()


class Analysis:
    """State shared by the phases of one target's analysis."""

    def __init__(self, target: dict[str, Any], emit_progress: Emit) -> None:
        self.target = target
        self.root = os.path.realpath(target.get("root") or os.getcwd())
        self.progress = emit_progress
        self.findings: list[dict[str, Any]] = []
        self.phases: dict[str, float] = {}
        self.result: dict[str, Any] = {
            "target": target.get("name"),
            "torch": torch_internals.torch_version(),
            "findings": self.findings,
            "phases": self.phases,
            "skipped": {},
        }
        self.fake_mode: Any = None
        self.model: Any = None
        self.args: tuple[Any, ...] = ()
        self.kwargs: dict[str, Any] = {}
        self.dynamic_shapes: Any = _json_dynamic_shapes(target.get("dynamic_shapes"))
        self.opset: int | None = target.get("opset")
        self.translation_table: dict[Any, Any] | None = None
        self.ep: Any = None
        self._dim_bounds: dict[tuple[int, int], tuple[int | None, int | None]] = {}
        self.decomposed: Any = None
        self.onnx_program: Any = None

    # ------------------------------------------------------------------ helpers

    def add(self, finding: dict[str, Any]) -> None:
        self.findings.append(finding)

    def user_frame_of(self, exc: BaseException) -> dict[str, Any] | None:
        """The user's line for an exception: torch's own pointer first, then the traceback."""
        text = str(exc)
        m = _RAISED_AT.search(text)
        if m and not frames.is_library_file(m.group(1)):
            return frames.frame_dict(m.group(1), int(m.group(2)))
        stack: list[Any] = []
        e: BaseException | None = exc
        seen = set()
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            stack = list(traceback.extract_tb(e.__traceback__)) + stack
            e = e.__cause__ or e.__context__
        real_stack = getattr(exc, "real_stack", None)
        if real_stack:
            stack = stack + list(real_stack)
        return frames.pick(frames.user_frames(stack), self.root)

    def phase(self, name: str, percent: int) -> _Phase:
        self.progress(name, percent)
        return _Phase(self, name)

    # ------------------------------------------------------------------ phases

    def run(self) -> dict[str, Any]:
        if not torch_internals.is_tested_version():
            self.add(
                _finding(
                    wire.KIND_TORCH_UNSUPPORTED,
                    f"onnxlint's deep analysis was written for torch "
                    f"{', '.join(torch_internals.TESTED_TORCH)}; this is torch "
                    f"{torch_internals.torch_version()}. Results may be incomplete.",
                )
            )
        with self.phase("load", 0):
            ok = self.load()
        if not ok:
            return self.finish()
        with self.phase("explain", 10):
            self.explain()
        with self.phase("export", 30):
            self.export()
        if self.ep is not None:
            with self.phase("decompose", 55):
                self.decompose()
        if self.decomposed is not None:
            with self.phase("translate", 75):
                self.translate()
        if self.target.get("verify"):
            with self.phase("verify", 90):
                self.verify()
        return self.finish()

    def finish(self) -> dict[str, Any]:
        self.result["project_files"] = sorted(
            {
                os.path.realpath(f)
                for m in list(sys.modules.values())
                if (f := getattr(m, "__file__", None))
                and os.path.isabs(f)
                and frames.is_project_file(f, self.root)
            }
        )
        self.progress("done", 100)
        return self.result

    def load(self) -> bool:
        factory = str(self.target.get("factory") or "")
        name = self.target.get("name") or factory
        root = self.root
        for p in [root, *self.target.get("sys_path", [])]:
            if p not in sys.path:
                sys.path.insert(0, p)
        with contextlib.suppress(OSError):
            os.chdir(root)
        os.environ["ONNXLINT_DEEP"] = "1"
        mod_name, _, func_name = factory.partition(":")
        if not mod_name or not func_name:
            self.add(
                _finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: factory {factory!r} must look like "
                    "'package.module:function'",
                )
            )
            return False
        try:
            module = importlib.import_module(mod_name)
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            fr = self.user_frame_of(e)
            kind_msg = (
                f"cannot import module {mod_name!r}"
                if isinstance(e, ModuleNotFoundError) and e.name and mod_name.startswith(e.name)
                else f"importing {mod_name!r} raised {type(e).__name__}: {_first_line(str(e))}"
            )
            self.add(
                _place(
                    _finding(
                        wire.KIND_TARGET_ERROR,
                        f"target {name!r}: {kind_msg}",
                        notes=[
                            f"sys.path starts with {root!r}; is the module under the project root?"
                        ],
                    ),
                    fr,
                )
            )
            return False
        fn = getattr(module, func_name, None)
        if fn is None or not callable(fn):
            self.add(
                _finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: module {mod_name!r} has no callable {func_name!r}",
                )
            )
            return False
        self.result["factory_loc"] = _source_loc(fn)
        table_ref = self.target.get("translation_table")
        if table_ref:
            self.translation_table = self._load_table(str(table_ref), name)
        mode_cls = torch_internals.fake_mode_class()
        self.fake_mode = mode_cls(allow_non_fake_inputs=True)
        try:
            with self.fake_mode:
                out = fn()
        except BaseException as e:
            if isinstance(e, (KeyboardInterrupt, SystemExit)):
                raise
            fr = self.user_frame_of(e) or self.result["factory_loc"]
            notes = []
            text = str(e)
            if any(
                s in text
                for s in ("Cannot copy out of meta", "tensor subclasses", "FakeTensor", "fake")
            ) or isinstance(e, (FileNotFoundError, OSError)):
                notes.append(
                    "The factory runs under fake tensors (no real data). Skip weight loading "
                    "when the environment variable ONNXLINT_DEEP is set: the architecture is "
                    "what the analysis needs."
                )
            self.add(
                _place(
                    _finding(
                        wire.KIND_TARGET_ERROR,
                        f"target {name!r}: factory {factory!r} raised "
                        f"{type(e).__name__}: {_first_line(text)}",
                        notes=notes,
                    ),
                    fr,
                )
            )
            return False
        problem = self._unpack(out)
        if problem:
            self.add(
                _place(
                    _finding(
                        wire.KIND_TARGET_ERROR, f"target {name!r}: factory {factory!r} {problem}"
                    ),
                    self.result["factory_loc"],
                )
            )
            return False
        self.result["model"] = self._summary()
        return True

    def _load_table(self, ref: str, name: str) -> dict[Any, Any] | None:
        mod_name, _, attr = ref.partition(":")
        try:
            table = getattr(importlib.import_module(mod_name), attr)
        except Exception as e:
            self.add(
                _finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: cannot load translation_table {ref!r}: "
                    f"{type(e).__name__}: {_first_line(str(e))}",
                )
            )
            return None
        if not isinstance(table, dict):
            self.add(
                _finding(
                    wire.KIND_TARGET_ERROR,
                    f"target {name!r}: translation_table {ref!r} is a "
                    f"{type(table).__name__}, not a dict",
                )
            )
            return None
        return table

    def _unpack(self, out: Any) -> str | None:
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
            self.dynamic_shapes = out[3]
        self.model, self.args, self.kwargs = model, tuple(args), dict(kwargs)
        return None

    def _summary(self) -> dict[str, Any]:
        by_dtype: dict[str, dict[str, int]] = {}
        if isinstance(self.model, torch.nn.Module):
            seen: set[int] = set()
            for t in [*self.model.parameters(), *self.model.buffers()]:
                if id(t) in seen:
                    continue
                seen.add(id(t))
                d = by_dtype.setdefault(
                    str(t.dtype).replace("torch.", ""), {"count": 0, "bytes": 0}
                )
                d["count"] += int(t.numel())
                d["bytes"] += int(t.numel()) * int(t.element_size())
        cls = type(self.model)
        return {
            "class": f"{cls.__module__}.{cls.__qualname__}",
            "class_loc": _source_loc(cls),
            "params_by_dtype": by_dtype,
            "params": sum(v["count"] for v in by_dtype.values()),
            "weight_bytes": sum(v["bytes"] for v in by_dtype.values()),
            "inputs": [_describe(a) for a in self.args]
            + [f"{k}={_describe(v)}" for k, v in self.kwargs.items()],
        }

    def explain(self) -> None:
        records: list[dict[str, Any]] = []
        explain_out: Any = None
        try:
            with (
                torch_internals.record_graph_breaks(records),
                torch_internals.lenient_scalars(self.fake_mode),
            ):
                explain_out = torch_internals.explain(self.model, self.args, self.kwargs)
        except torch_internals.Unsupported as e:
            self.add(_finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
            return
        except Exception as e:
            fr = self.user_frame_of(e)
            text = _first_line(str(e))
            self.add(
                _place(
                    _finding(
                        wire.KIND_FAKE_MODE_LIMIT,
                        f"graph-break search stopped here: {type(e).__name__}: {text}",
                        notes=[
                            "This code cannot run on fake tensors (no data), so the breaks "
                            "after it were not looked for. `.numpy()` and data-dependent "
                            "Python values are the usual causes."
                        ],
                    ),
                    fr,
                )
            )
        finally:
            with contextlib.suppress(Exception):
                torch_internals.reset_dynamo()
        seen: set[tuple[str, int, str]] = set()
        for rec in records:
            fr = frames.pick(frames.user_frames(rec["stack"]), self.root)
            key = (fr["file"] if fr else "", fr["line"] if fr else 0, rec["gb_type"])
            if key in seen:
                continue
            seen.add(key)
            self.add(_place(_graph_break_finding(rec), fr))
        if explain_out is not None:
            self.result["explain"] = {
                "graphs": int(getattr(explain_out, "graph_count", 0)),
                "breaks": len(seen),
                "ops": int(getattr(explain_out, "op_count", 0)),
            }

    def export(self) -> None:
        """Non-strict torch.export; then, if it fails, the retries that let us go on.

        A constraint violation is retried with Dim.AUTO (each static dim is then
        reported where the code forces it); a data-dependent guard is reported
        and retried assuming every such condition holds, which finds the other
        conditions and yields a graph for the op checks.
        """
        requested = self.dynamic_shapes
        auto = False
        lenient = False
        placeholder = 0  # index into torch_internals.PLACEHOLDER_INTS
        first_error: BaseException | None = None
        assumed: list[dict[str, Any]] = []
        for _attempt in range(2 + len(torch_internals.PLACEHOLDER_INTS)):
            events: list[dict[str, Any]] = []
            guards: list[dict[str, Any]] = []
            assumed = []
            try:
                dims = torch_internals.to_export_dims(requested, auto=auto)
                with contextlib.ExitStack() as stack:
                    stack.enter_context(torch_internals.record_specializations(events))
                    stack.enter_context(torch_internals.record_guards(guards))
                    if lenient:
                        stack.enter_context(
                            torch_internals.assume_data_dependent(
                                assumed, torch_internals.PLACEHOLDER_INTS[placeholder]
                            )
                        )
                    self.ep = torch_internals.export(self.model, self.args, self.kwargs, dims)
            except torch_internals.Unsupported as e:
                self.add(_finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
                return
            except Exception as e:
                if first_error is None:
                    first_error = e
                if (
                    not auto
                    and requested is not None
                    and torch_internals.is_constraint_violation(e)
                ):
                    auto = True
                    continue
                if not lenient and torch_internals.is_data_dependent_error(e):
                    self._export_failure(e)
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
                if lenient:
                    self._report_assumed(assumed)
                if not (
                    lenient and e is not first_error and torch_internals.is_data_dependent_error(e)
                ) or not any(f["kind"] == wire.KIND_DATA_DEPENDENT for f in self.findings):
                    self._export_failure(e, numbers)
                self.ep = None
                return
            break
        if self.ep is None:
            return
        torch_error = str(first_error) if auto and first_error is not None else None
        if not self._report_specialized(events, torch_error) and auto and first_error is not None:
            self._export_failure(first_error)
        if lenient:
            self._report_assumed(assumed)
            self.result["assumed_branches"] = True
        self._report_constraints()
        try:
            self._report_output_dims(guards)
        except Exception as e:  # a probe must never cost the rest of the analysis
            self.result["skipped"]["output_dims"] = f"{type(e).__name__}: {_first_line(str(e))}"

    def _report_assumed(self, assumed: list[dict[str, Any]]) -> None:
        """Each further data-dependent site found while tracing on past the first ones."""
        known = {
            (f["file"], f["line"]) for f in self.findings if f["kind"] == wire.KIND_DATA_DEPENDENT
        }
        for rec in assumed:
            fr = frames.pick(frames.user_frames(rec["stack"]), self.root)
            key = (fr["file"], fr["line"]) if fr else (None, None)
            if key in known:
                continue
            known.add(key)
            if rec.get("value") is None:
                msg = f"torch.export cannot decide the data-dependent condition {rec['expr']}"
                notes = [
                    "Python control flow on a tensor value cannot be exported: use "
                    "torch.cond or torch.where, or tell export what holds with "
                    "torch._check(...).",
                    "Found by tracing on as if the earlier data-dependent conditions held.",
                ]
            else:
                msg = (
                    f"torch.export needs a Python number here, but it depends on the data "
                    f"({rec['expr']}): int()/float() of a tensor, or a data-dependent value "
                    "used where Python needs a real number"
                )
                notes = [
                    "Keep it a tensor (torch ops, torch.where), or use `.item()` (torch.export "
                    "keeps it symbolic) and state its range with torch._check(...).",
                    f"Found by tracing on with the placeholder value {rec['value']}; what "
                    "follows was checked for that value only.",
                ]
            self.add(_place(_finding(wire.KIND_DATA_DEPENDENT, msg, notes=notes), fr))

    def _export_failure(
        self, e: BaseException, placeholders: list[dict[str, Any]] | None = None
    ) -> None:
        fr = self.user_frame_of(e)
        text = str(e)
        head = _first_line(text)
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
        self.add(
            _place(
                _finding(kind, f"torch.export failed: {type(e).__name__}: {head}", notes=notes),
                fr,
            )
        )

    def _requested_dims(self) -> list[tuple[int, int, str, str]]:
        """(flat input index, dim, dim name, input label) for every requested dynamic dim."""
        spec = self.dynamic_shapes
        if spec is None:
            return []
        per_input: list[tuple[str, Any, Any]] = []  # (label, value, spec)
        try:
            sig = inspect.signature(getattr(self.model, "forward", self.model))
            bound = sig.bind(*self.args, **self.kwargs)
            names = list(bound.arguments)
        except (TypeError, ValueError):
            names = [f"args[{i}]" for i in range(len(self.args))] + list(self.kwargs)
        values = list(self.args) + list(self.kwargs.values())
        labels = names[: len(values)] + [f"input{i}" for i in range(len(names), len(values))]
        if isinstance(spec, dict):
            for label, value in zip(labels, values, strict=False):
                per_input.append((label, value, spec.get(label)))
        elif isinstance(spec, (list, tuple)):
            for i, (label, value) in enumerate(zip(labels, values, strict=False)):
                per_input.append((label, value, spec[i] if i < len(spec) else None))
        out = []
        flat = 0
        for label, value, s in per_input:
            leaves = torch.utils._pytree.tree_leaves(value)
            if isinstance(value, torch.Tensor) and s is not None:
                items = s.items() if isinstance(s, dict) else enumerate(s)
                for d, n in items:
                    if n is None or isinstance(n, int):
                        continue
                    self._dim_bounds[(flat, int(d))] = _bounds(n)
                    out.append((flat, int(d), n if isinstance(n, str) else str(n), label))
            flat += len(leaves)
        return out

    def _report_specialized(self, events: list[dict[str, Any]], torch_error: str | None) -> bool:
        """Compare the requested dynamic dims with the exported inputs; report each static one."""
        if self.ep is None:
            return False
        placeholders = _user_input_vals(self.ep)
        reported = False
        for flat, dim, name, label in self._requested_dims():
            if flat >= len(placeholders) or placeholders[flat] is None:
                continue
            shape = placeholders[flat].shape
            if dim >= len(shape):
                continue
            value = torch_internals.static_int(shape[dim])
            if value is None:
                continue
            fr = self._specialization_frame(events, label, dim, value)
            notes = [
                "torch.onnx.export would silently export this dim as static (it applies "
                "torch's suggested fix), so the ONNX model would only accept this size."
            ]
            if torch_error:
                notes.append("torch.export said: " + _first_line(torch_error.split("\n", 1)[-1]))
            self.add(
                _place(
                    _finding(
                        wire.KIND_DIM_SPECIALIZED,
                        f"dim {name!r} ({label}.shape[{dim}]) was requested dynamic, but the "
                        f"code forces it to {value}",
                        notes=notes,
                        dim={"input": label, "dim": dim, "name": name, "value": value},
                    ),
                    fr or self.result.get("model", {}).get("class_loc"),
                )
            )
            reported = True
        return reported

    def _specialization_frame(
        self, events: list[dict[str, Any]], label: str, dim: int, value: int
    ) -> dict[str, Any] | None:
        wanted = f"['{label}'].size()[{dim}]"
        ranked = sorted(
            events,
            key=lambda ev: (
                not any(s.endswith(wanted) for s in ev["sources"]),
                ev["value"] != str(value),
            ),
        )
        for ev in ranked:
            fr = frames.pick(frames.user_frames(ev["stack"]), self.root)
            if fr is not None and any(s.endswith(wanted) for s in ev["sources"]):
                return fr
        return None

    def _report_output_dims(self, guards: list[dict[str, Any]]) -> None:
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
        if self.ep is None or self.fake_mode is None:
            return
        requested = self._requested_dims()
        if not requested:
            return
        try:
            env = torch_internals.shape_env_of(self.ep)
            hints = torch_internals.symbol_hints(env)
            placeholders = _user_input_vals(self.ep)
            outputs = _user_output_nodes(self.ep)
        except Exception:  # introspection of the program must never stop the analysis
            return
        if env is None or not hints or not outputs:
            return
        groups: dict[str, list[tuple[int, int, Any]]] = {}
        for flat, dim, name, _label in requested:
            val = placeholders[flat] if flat < len(placeholders) else None
            if not isinstance(val, torch.Tensor) or dim >= val.dim():
                continue
            expr = torch_internals.size_expr(val.shape[dim])
            syms = torch_internals.free_symbols(expr)
            if len(syms) != 1 or expr not in syms or expr not in hints:
                continue  # static (OLX804 reports it) or not a plain symbol
            groups.setdefault(name, []).append((flat, dim, expr))
        found: dict[tuple[int, int], dict[str, Any]] = {}
        deadline = time.perf_counter() + PROBE_BUDGET_S
        for name, members in groups.items():
            symbols = {m[2] for m in members}
            for size in self._probe_sizes(members, hints):
                if time.perf_counter() > deadline:
                    self.result["skipped"]["output_dims"] = (
                        f"stopped after {PROBE_BUDGET_S:g} s of eager probes"
                    )
                    break
                values = dict(hints)
                for sym in symbols:
                    values[sym] = size
                eager = self._eager_shapes({(f, d): size for f, d, _ in members})
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
                        if exported is None or exported == shape[axis]:
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
                            "guard": _failing_guard(guards, symbols, values, self.root),
                        }
        for rec in found.values():
            self.add(self._output_dim_finding(rec))

    def _probe_sizes(self, members: list[tuple[int, int, Any]], hints: dict[Any, int]) -> list[int]:
        n = hints[members[0][2]]
        sizes = {1, 2, n - 1, n + 1, n + 3}
        lo, hi = torch_internals.symbol_range(self.ep, members[0][2])
        if lo is not None:
            sizes.add(lo - 1)
        if hi is not None:
            sizes.add(hi + 1)
        want_lo, want_hi = 1, None
        for f, d, _ in members:
            b_lo, b_hi = self._dim_bounds.get((f, d), (None, None))
            if b_lo is not None:
                want_lo = max(want_lo, b_lo)
            if b_hi is not None:
                want_hi = b_hi if want_hi is None else min(want_hi, b_hi)
        return sorted(
            s for s in sizes if s != n and s >= want_lo and (want_hi is None or s <= want_hi)
        )[:6]

    def _eager_shapes(self, changes: dict[tuple[int, int], int]) -> list[Any] | None:
        """The model's tensor output shapes, run eagerly on fake inputs resized per `changes`."""
        try:
            with (
                self.fake_mode,
                torch_internals.lenient_scalars(self.fake_mode),
                torch.no_grad(),
            ):
                args, kwargs = resize_inputs((self.args, self.kwargs), changes, _zeros_like)
                out = self.model(*args, **kwargs)
        except Exception:
            return None
        leaves = torch.utils._pytree.tree_leaves(out)
        return [tuple(int(s) for s in t.shape) for t in leaves if isinstance(t, torch.Tensor)]

    def _output_dim_finding(self, rec: dict[str, Any]) -> dict[str, Any]:
        name = rec["name"]
        size, eager, exported = rec["probes"][0]
        shown = _rename_symbols(rec["expr"], rec["symbols"], name)
        if rec["static"]:
            head = (
                f"output {rec['output']} dim {rec['axis']} is exported as the constant "
                f"{shown}, but it follows the dynamic dim {name!r}"
            )
        else:
            head = (
                f"output {rec['output']} dim {rec['axis']} is exported as {shown}, which is "
                f"wrong for other sizes of the dynamic dim {name!r}"
            )
        msg = f"{head}: eager PyTorch gives {eager} at {name}={size}, the export {exported}"
        notes = []
        guard = rec["guard"]
        fr = None
        if guard is not None:
            fr = guard["frame"]
            cond = _rename_symbols(guard["expr"], rec["symbols"], name)
            notes.append(
                f"torch.export assumed `{cond}` on this line and traced only that branch; "
                "the ONNX model does not check it, so for other sizes it declares (and may "
                "compute) the wrong shape."
            )
        if len(rec["probes"]) > 1:
            notes.append(
                "also differs at "
                + ", ".join(f"{name}={p} (eager {e}, export {x})" for p, e, x in rec["probes"][1:])
            )
        notes.append(
            "Make the output size follow the input (`x[: min(2, x.shape[0])]` is traced as a "
            "function of the size), branch with torch.cond, or do not ask for this dim to be "
            "dynamic."
        )
        if fr is None:
            fr = frames.pick(
                frames.parse_stack_trace(rec["node"].meta.get("stack_trace")), self.root
            )
        return _place(
            _finding(
                wire.KIND_OUTPUT_DIM_SPECIALIZED,
                msg,
                notes=notes,
                output_dim={
                    "output": rec["output"],
                    "dim": rec["axis"],
                    "name": name,
                    "exported": shown,
                    "probes": rec["probes"],
                },
            ),
            fr or self.result.get("model", {}).get("class_loc"),
        )

    def _report_constraints(self) -> None:
        """Record the range constraints export inferred for dynamic dims (for the report)."""
        rc = getattr(self.ep, "range_constraints", None) or {}
        self.result["range_constraints"] = {str(k): str(v) for k, v in rc.items()}

    def decompose(self) -> None:
        opset = self._opset()
        try:
            reg = torch_internals.registry(opset, self.translation_table)
            self.decomposed = torch_internals.decompose(self.ep, reg)
        except torch_internals.Unsupported as e:
            self.add(_finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
            return
        except Exception as e:
            self.add(
                _place(
                    _finding(
                        wire.KIND_TRANSLATION_FAILURE,
                        f"ONNX decomposition (step 2/3) failed: {type(e).__name__}: "
                        f"{_first_line(str(e))}",
                    ),
                    self.user_frame_of(e),
                )
            )
            return
        self.registry = reg
        groups: dict[tuple[str, str | None, int | None], dict[str, Any]] = {}
        fx_hist: Counter[str] = Counter()
        for gm in self.decomposed.graph_module.modules():
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
                fr = frames.pick(stack, self.root)
                key = (name, fr["file"] if fr else None, fr["line"] if fr else None)
                g = groups.setdefault(
                    key,
                    {
                        "op": name,
                        "custom": torch_internals.is_custom_op(node.target),
                        "count": 0,
                        "reason": message,
                        "frame": fr,
                        "stack": stack,
                    },
                )
                g["count"] += 1
        self.result["fx_op_histogram"] = dict(fx_hist.most_common())
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
            self.add(_place(_finding(kind, msg, notes=[note, g["reason"]], op=g["op"]), g["frame"]))
            unsupported.append(
                {
                    "op": g["op"],
                    "count": g["count"],
                    "file": g["frame"]["file"] if g["frame"] else None,
                    "line": g["frame"]["line"] if g["frame"] else None,
                    "workaround": note,
                }
            )
        self.result["unsupported_ops"] = unsupported

    def _opset(self) -> int:
        try:
            _torchlib, default, _max = torch_internals.onnx_opset_bounds()
        except torch_internals.Unsupported:
            return int(self.opset or 18)
        return int(self.opset or default)

    def translate(self) -> None:
        if self.result.get("unsupported_ops"):
            self.result["skipped"]["translate"] = (
                "skipped: torch.onnx.export stops at the first op without a translation"
            )
            return
        try:
            self.onnx_program = torch_internals.to_onnx(
                self.decomposed, self.registry, self._opset(), self.dynamic_shapes
            )
        except torch_internals.Unsupported as e:
            self.add(_finding(wire.KIND_TORCH_UNSUPPORTED, str(e)))
            return
        except Exception as e:
            self.add(self._translation_failure(e))
            return
        problem = torch_internals.convert_opset(self.onnx_program, self._opset())
        if problem:
            self.result["skipped"]["opset"] = f"conversion to opset {self._opset()}: {problem}"
        self.result["onnx"] = _onnx_summary(self.onnx_program, self._opset(), self)

    def _translation_failure(self, e: BaseException) -> dict[str, Any]:
        text = str(e)
        fr = None
        m = re.search(r"translating node %(\w+)", text)
        if m is not None:
            for node in self.decomposed.graph.nodes:
                if node.name == m.group(1):
                    fr = frames.pick(
                        frames.parse_stack_trace(node.meta.get("stack_trace")), self.root
                    )
                    break
        cause = e.__cause__
        detail = (
            f"{type(cause).__name__}: {_first_line(str(cause))}" if cause else _first_line(text)
        )
        return _place(
            _finding(
                wire.KIND_TRANSLATION_FAILURE,
                f"ONNX translation (step 3/3) failed: {detail}",
                notes=[_first_line(text)],
            ),
            fr or self.user_frame_of(e),
        )

    def verify(self) -> None:
        from . import verify as verify_mod

        summary = self.result.get("model", {})
        limit = int(self.target.get("verify_max_params") or DEFAULT_VERIFY_MAX_PARAMS)
        if summary.get("params", 0) > limit:
            self.result["skipped"]["verify"] = (
                f"skipped: {summary.get('params'):,} parameters is above the verification "
                f"limit of {limit:,} (real weights would be allocated)"
            )
            return
        if any(f["kind"] in _BLOCKING for f in self.findings):
            self.result["skipped"]["verify"] = "skipped: the model does not export"
            return
        verify_mod.run(self)


_BLOCKING = {
    wire.KIND_DATA_DEPENDENT,
    wire.KIND_EXPORT_FAILURE,
    wire.KIND_UNSUPPORTED_OP,
    wire.KIND_CUSTOM_OP_NO_FAKE,
    wire.KIND_CUSTOM_OP_NO_TRANSLATION,
    wire.KIND_TRANSLATION_FAILURE,
    wire.KIND_TARGET_ERROR,
}


class _Phase:
    """Times a phase; an unexpected error becomes a finding, never a crash."""

    def __init__(self, analysis: Analysis, name: str) -> None:
        self.analysis = analysis
        self.name = name
        self.start = 0.0

    def __enter__(self) -> _Phase:
        self.start = time.perf_counter()
        return self

    def __exit__(self, et: Any, ev: Any, tb: Any) -> bool:
        self.analysis.phases[self.name] = round(time.perf_counter() - self.start, 3)
        if ev is None or not isinstance(ev, Exception):
            return False
        self.analysis.add(
            _place(
                _finding(
                    wire.KIND_EXPORT_FAILURE,
                    f"onnxlint's {self.name} phase failed: {type(ev).__name__}: "
                    f"{_first_line(str(ev))}",
                    notes=["".join(traceback.format_exception(et, ev, tb))[-2000:]],
                ),
                self.analysis.user_frame_of(ev),
            )
        )
        return True


def _graph_break_finding(rec: dict[str, Any]) -> dict[str, Any]:
    lines = [ln.strip() for ln in rec["reason"].splitlines()]
    lines = [ln for ln in lines if ln and not ln.startswith("Encountered graph break")]
    title = lines[0] if lines else rec["gb_type"]
    explanation = next(
        (ln[len("Explanation:") :].strip() for ln in lines if ln.startswith("Explanation:")), ""
    )
    hints = [ln[len("Hint:") :].strip() for ln in lines if ln.startswith("Hint:")]
    hints = [h for h in hints if "report an issue to PyTorch" not in h]
    url = torch_internals.graph_break_doc_url(rec["gb_type"])
    msg = f"graph break: {title}"
    if explanation:
        msg += f" ({explanation})"
    notes = hints + ([url] if url else [])
    return _finding(wire.KIND_GRAPH_BREAK, msg, notes=notes, gb_type=rec["gb_type"], url=url)


def _json_dynamic_shapes(spec: Any) -> Any:
    """JSON objects have string keys: `{"0": "batch"}` -> `{0: "batch"}`; lists stay tuples."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        if spec and all(isinstance(k, str) and k.isdigit() for k in spec):
            return {int(k): v for k, v in spec.items()}
        return {k: _json_dynamic_shapes(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return tuple(_json_dynamic_shapes(v) for v in spec)
    return spec


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
        fr = frames.pick(frames.user_frames(g["stack"]), root)
        if fr is not None:
            return {"expr": g["expr"], "frame": fr}
    return None


def _rename_symbols(expr: Any, symbols: set[Any], name: str) -> str:
    """`s77 + s12 - 1` -> `2*batch - 1`: the dim's name for the symbols torch gave it."""
    return str(torch_internals.rename_symbols(expr, symbols, name))


def _bounds(dim: Any) -> tuple[int | None, int | None]:
    """The min/max a `Dim("batch", min=..., max=...)` asks for (None when unbounded)."""
    lo, hi = getattr(dim, "min", None), getattr(dim, "max", None)
    lo = lo if isinstance(lo, int) else None
    hi = hi if isinstance(hi, int) and hi < 2**62 else None
    return lo, hi


def _zeros_like(leaf: torch.Tensor, shape: list[int]) -> torch.Tensor:
    return torch.zeros(shape, dtype=leaf.dtype, device=leaf.device)


def _user_input_vals(ep: Any) -> list[Any]:
    sig = ep.graph_signature
    names = list(getattr(sig, "user_inputs", []))
    by_name = {n.name: n for n in ep.graph.nodes if n.op == "placeholder"}
    return [by_name[n].meta.get("val") if n in by_name else None for n in names]


def _describe(v: Any) -> str:
    if isinstance(v, torch.Tensor):
        return f"Tensor[{str(v.dtype).replace('torch.', '')}]({', '.join(map(str, v.shape))})"
    if isinstance(v, (list, tuple)):
        return type(v).__name__ + "(" + ", ".join(_describe(x) for x in v) + ")"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_describe(x)}" for k, x in v.items()) + "}"
    return repr(v)[:60]


def _source_loc(obj: Any) -> dict[str, Any] | None:
    try:
        file = inspect.getsourcefile(obj)
        _, line = inspect.getsourcelines(obj)
    except (OSError, TypeError):
        return None
    if not file:
        return None
    return {
        "file": os.path.realpath(file),
        "line": int(line),
        "name": getattr(obj, "__qualname__", ""),
    }


def _dim_str(d: Any) -> str | int:
    if isinstance(d, int):
        return d
    value = getattr(d, "value", None)
    return str(value if value is not None else d)


def _onnx_summary(program: Any, opset: int, analysis: Analysis) -> dict[str, Any]:
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
    checker_ok, problem = _check_structure(model)
    out["checker"] = "ok" if checker_ok else problem
    if not checker_ok:
        analysis.add(
            _place(
                _finding(wire.KIND_CHECKER_FAILURE, f"the ONNX model fails the checker: {problem}"),
                _onnx_node_frame(model, problem, analysis.root),
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


def _check_structure(model: Any) -> tuple[bool, str]:
    """onnx.checker (full, with shape inference) on the graph with initializers as inputs.

    Fake initializers cannot be serialized; turning them into graph inputs keeps
    the structure valid and checkable.
    """
    try:
        import onnx
        import onnx_ir as ir
    except ImportError as e:
        return False, f"onnx/onnx_ir not importable: {e}"
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
        for v in inits.values():
            model.graph.inputs.append(v)
        proto = ir.serde.serialize_model(model)
    finally:
        model.graph.inputs.clear()
        model.graph.inputs.extend(saved_inputs)
        for k, v in inits.items():
            model.graph.initializers[k] = v
        for out, shape in saved_shapes:
            out.shape = shape
    try:
        onnx.checker.check_model(proto, full_check=True)
    except Exception as e:
        return False, f"{type(e).__name__}: {_first_line(str(e))}"
    return True, ""


def finite(x: float) -> float | None:
    return x if math.isfinite(x) else None
