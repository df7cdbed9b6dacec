"""The analysis record: what one target's phases share, and how a finding is made.

Each phase (`load`, `explain`, `export`, `decompose`, `translate`, `verify`) is a
module with a `run(rec)` function that reads and fills this record; `analysis`
runs them in order. Locations come from `frames` (innermost line outside torch,
and the chain from the user's code to it).
"""

from __future__ import annotations

import inspect
import os
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from . import frames, torch_internals

Emit = Callable[[str, int | None], None]


def finding(kind: str, message: str, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "kind": kind,
        "message": message,
        "notes": [],
        "file": None,
        "line": None,
    }
    out.update(extra)
    return out


def first_few(names: Sequence[str], limit: int = 3) -> str:
    """`a`, `b`, `c`, ...: the first few of a list a message names, each in backquotes."""
    shown = ", ".join(f"`{n}`" for n in names[:limit])
    return shown + (", ..." if len(names) > limit else "")


def first_line(text: str) -> str:
    for line in str(text).splitlines():
        if line.strip():
            return line.strip()
    return str(text).strip()


def cause(exc: BaseException) -> str:
    """`Type: first line` of an error, with torch's own reason when a wrapper hides it:
    the innermost error of the chain that says something ("GraphConstructionError: Error
    when calling function ..." -> "AssertionError: only 4D query, key, and value are
    supported"). Every deep message keeps this one line."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    said = [c for c in chain if first_line(str(c))]
    inner = said[-1] if said else exc
    if inner is exc or first_line(str(inner)) in str(exc):
        return f"{type(exc).__name__}: {first_line(str(exc))}"
    return f"{type(inner).__name__}: {first_line(str(inner))}"


def place(
    f: dict[str, Any], fr: dict[str, Any] | None, chain: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Put a finding at a frame; `chain` (outermost first) is how the user's code gets there."""
    if fr is not None:
        f["file"] = fr["file"]
        f["line"] = fr["line"]
        if fr.get("where") == "library":
            f["in_library"] = True
    if chain:
        f["chain"] = [
            {"file": c["file"], "line": c["line"], "name": c.get("name", "")} for c in chain
        ]
    return f


@dataclass
class Analysis:
    """State shared by the phases of one target's analysis."""

    target: dict[str, Any]
    progress: Emit
    root: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    phases: dict[str, float] = field(default_factory=dict)
    result: dict[str, Any] = field(default_factory=dict)
    fake_mode: Any = None
    model: Any = None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    dynamic_shapes: Any = None
    opset: int | None = None
    autograd: str = ""  # a script's export call made under inference_mode / no_grad
    onnx_capture: bool = True  # False: the script's own call is torch.export.export itself
    translation_table: dict[Any, Any] | None = None
    io_names: dict[str, list[str]] = field(default_factory=dict)
    """A script's export call's `input_names` / `output_names` (the ONNX graph's names)."""
    axes_names: list[dict[int, str]] = field(default_factory=list)
    """A script's `dynamic_axes` names of each input's dims, by position (`script_axes`)."""
    optimized: bool = True  # False: the script's export call passes optimize=False
    ep: Any = None
    decomposed: Any = None
    registry: Any = None
    onnx_program: Any = None
    dim_bounds: dict[tuple[int, int], tuple[int | None, int | None]] = field(default_factory=dict)
    input_lines: dict[int, dict[str, Any]] = field(default_factory=dict)
    """flat input index -> the factory's line that made that example tensor."""
    failed: dict[str, str] = field(default_factory=dict)
    """phase -> why it did not succeed (the result's status reads it)."""
    loop_calls: list[Any] = field(default_factory=list)
    """A script's export call in a loop: the calls of the passes whose models are analysed
    (`script_loop`), the first pass's first; `analysis.later_passes` analyses the others."""
    module_sites: Any = field(default_factory=weakref.WeakKeyDictionary)
    """torch's own module (`FakeQuantize`, `MultiheadAttention`) -> the user's line that
    built it (load's `module_sites`): where a failure wholly inside torch's code goes."""

    def __post_init__(self) -> None:
        self.root = os.path.realpath(self.target.get("root") or os.getcwd())
        self.result = {
            "target": self.target.get("name"),
            "torch": torch_internals.torch_version(),
            "findings": self.findings,
            "phases": self.phases,
            "skipped": {},
            "failed": self.failed,
        }
        self.dynamic_shapes = json_dynamic_shapes(self.target.get("dynamic_shapes"))
        self.opset = self.target.get("opset")

    def add(self, f: dict[str, Any]) -> None:
        self.findings.append(f)

    @property
    def factory_loc(self) -> dict[str, Any] | None:
        loc = self.result.get("factory_loc")
        return dict(loc) if loc else None

    def locate(
        self, stack: Iterable[Any], *, in_project: bool = False
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        return frames.locate(stack, self.root, self.factory_loc, in_project=in_project)

    def place_at(self, f: dict[str, Any], stack: Iterable[Any]) -> dict[str, Any]:
        fr, chain = self.locate(stack)
        return place(f, fr, chain)

    def exception_frames(self, exc: BaseException) -> list[Any]:
        """The visible stack of an exception, ending at torch's own pointer when it gives one."""
        stack = frames.visible(frames.exception_stack(exc))
        at = frames.raised_at(exc)
        if at is None:
            return stack
        for i in range(len(stack) - 1, -1, -1):
            if (stack[i]["file"], stack[i]["line"]) == (at["file"], at["line"]):
                return stack[: i + 1]
        return [*stack, at]

    def place_exc(self, f: dict[str, Any], exc: BaseException) -> dict[str, Any]:
        return self.place_at(f, self.exception_frames(exc))

    def built_at(self, exc: BaseException) -> tuple[dict[str, Any], str] | None:
        """(the user's line that built it, its class name) for the innermost torch module
        whose code raised `exc`, when the traceback has no line of the user's own: a
        failure inside torch's `FakeQuantize.forward` belongs where the model made it."""
        if not len(self.module_sites):
            return None
        e: BaseException | None = exc
        seen: set[int] = set()
        while e is not None and id(e) not in seen:
            seen.add(id(e))
            tb = e.__traceback__
            selves = []
            while tb is not None:
                me = tb.tb_frame.f_locals.get("self")
                if isinstance(me, torch.nn.Module):
                    selves.append(me)
                tb = tb.tb_next
            for me in reversed(selves):
                site = self.module_sites.get(me)
                if site is not None:
                    return dict(site), type(me).__name__
            e = e.__cause__ or e.__context__
        return None

    def class_loc(self) -> dict[str, Any] | None:
        loc = self.result.get("model", {}).get("class_loc")
        return dict(loc) if loc else None

    def opset_or_default(self) -> int:
        try:
            _torchlib, default, _max = torch_internals.onnx_opset_bounds()
        except torch_internals.Unsupported:
            return int(self.opset or 18)
        return int(self.opset or default)

    def input_labels(self) -> list[tuple[str, Any]]:
        """(label, value) of each forward argument, in order (names from the signature)."""
        try:
            sig = inspect.signature(getattr(self.model, "forward", self.model))
            bound = sig.bind(*self.args, **self.kwargs)
            names = list(bound.arguments)
        except (TypeError, ValueError):
            names = [f"args[{i}]" for i in range(len(self.args))] + list(self.kwargs)
        values = list(self.args) + list(self.kwargs.values())
        labels = names[: len(values)] + [f"input{i}" for i in range(len(names), len(values))]
        return list(zip(labels, values, strict=False))

    def input_specs(self) -> list[tuple[str, Any, Any]]:
        """(label, value, its `dynamic_shapes` entry or None) of each forward argument."""
        spec = self.dynamic_shapes
        labelled = self.input_labels()
        if isinstance(spec, dict):
            return [(label, value, spec.get(label)) for label, value in labelled]
        if isinstance(spec, (list, tuple)):
            return [
                (label, value, spec[i] if i < len(spec) else None)
                for i, (label, value) in enumerate(labelled)
            ]
        return []

    def requested_dims(self) -> list[tuple[int, int, str, str]]:
        """(flat input index, dim, dim name, input label) for every requested dynamic dim."""
        if self.dynamic_shapes is None:
            return []
        out = []
        flat = 0
        for i, (label, value, s) in enumerate(self.input_specs()):
            leaves = torch.utils._pytree.tree_leaves(value)
            written = self.axes_names[i] if i < len(self.axes_names) else {}
            if isinstance(value, torch.Tensor) and s is not None:
                items = s.items() if isinstance(s, dict) else enumerate(s)
                for d, n in items:
                    if n is None or isinstance(n, int):
                        continue
                    self.dim_bounds[(flat, int(d))] = _bounds(n)
                    name = _dim_name(n)
                    if not isinstance(n, str) and not getattr(n, "__name__", None):
                        name = written.get(int(d), name)  # `dynamic_axes`' own name
                    out.append((flat, int(d), name, label))
            flat += len(leaves)
        return out


def json_dynamic_shapes(spec: Any) -> Any:
    """JSON objects have string keys: `{"0": "batch"}` -> `{0: "batch"}`; lists stay tuples."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        if spec and all(isinstance(k, str) and k.isdigit() for k in spec):
            return {int(k): v for k, v in spec.items()}
        return {k: json_dynamic_shapes(v) for k, v in spec.items()}
    if isinstance(spec, list):
        return tuple(json_dynamic_shapes(v) for v in spec)
    return spec


def _dim_name(dim: Any) -> str:
    """A requested dim's name: the string, or a `Dim`'s own name (`Dim("height", min=320)`
    -> "height", as torch names its symbol; its repr with the bounds was shown in messages),
    else its text (`Dim.DYNAMIC`)."""
    if isinstance(dim, str):
        return dim
    name = getattr(dim, "__name__", None)
    return name if isinstance(name, str) and name else str(dim)


def _bounds(dim: Any) -> tuple[int | None, int | None]:
    """The min/max a `Dim("batch", min=..., max=...)` asks for (None when unbounded)."""
    lo, hi = getattr(dim, "min", None), getattr(dim, "max", None)
    lo = lo if isinstance(lo, int) else None
    hi = hi if isinstance(hi, int) and hi < 2**62 else None
    return lo, hi


def source_loc(obj: Any) -> dict[str, Any] | None:
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


def resize_inputs(
    tree: Any,
    changes: dict[tuple[int, int], int],
    new_leaf: Callable[[torch.Tensor, list[int]], torch.Tensor],
) -> Any:
    """A copy of the inputs with the given (flat leaf, dim) sizes; `new_leaf(old, shape)`
    makes each resized tensor (random data for verification, zeros for the shape probe)."""
    leaves, spec = torch.utils._pytree.tree_flatten(tree)
    out = []
    for i, leaf in enumerate(leaves):
        mine = {d: s for (f, d), s in changes.items() if f == i}
        if not mine or not isinstance(leaf, torch.Tensor):
            out.append(leaf)
            continue
        shape = list(leaf.shape)
        for d, s in mine.items():
            shape[d] = s
        out.append(new_leaf(leaf, shape))
    return torch.utils._pytree.tree_unflatten(out, spec)
