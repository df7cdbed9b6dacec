"""A script's export call in a loop: each model its passes export is analysed.

`for name, model in models.items(): torch.onnx.export(model, ...)` exports several models
from one line. The run captures the first pass's call and, when the line is inside a loop of
the script (`loop_around`), goes on: each later pass that exports a model of a new
structure (its modules' classes: the chunks of a split `nn.Sequential` differ, a wrapper
built again with another option does not) is recorded (`on_pass`), the others return the
inert stand-in, and the run ends at the first export call of another line, at the end of
the script, or at a limit (`MAX_MODELS` more models, `MAX_PASSES` passes, `BUDGET_S` seconds
after the first capture), so that a training loop that exports every epoch cannot hold the
analysis. The phases then analyse
each recorded model after the first one's (`analysis.later_passes`).
"""

from __future__ import annotations

import ast
import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

import torch

from .script_fakes import Captured, Inert, ScriptRun, ScriptStop, bound_arguments

MAX_MODELS = 3  # models of new structures after the first pass's
MAX_PASSES = 32
BUDGET_S = 10.0


def loop_around(source: str, line: int) -> int | None:
    """The line of the innermost `for` / `while` of the script whose body holds `line` (a
    loop in the script's own statements or functions), else None."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    found: int | None = None
    for node in ast.walk(tree):
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)) and node.body:
            first, last = node.body[0].lineno, node.body[-1].end_lineno or node.lineno
            if first <= line <= last and (found is None or node.lineno > found):
                found = node.lineno
    return found


def model_of(call: Captured) -> Any:
    """The module an export call exports (the module a `torch.export` program came from)."""
    a = bound_arguments(call)
    model = next((a[k] for k in ("model", "mod", "func") if a.get(k) is not None), None)
    pending = getattr(model, "_call", None) if isinstance(model, Inert) else None
    if pending is not None:
        model = bound_arguments(pending).get("mod")
    return model


def structure(call: Captured) -> tuple[str, ...]:
    """What tells the models of a loop's passes apart: the classes of their modules."""
    model = model_of(call)
    if isinstance(model, torch.nn.Module):
        return tuple(type(m).__qualname__ for m in model.modules())
    return (type(model).__qualname__,)


def on_pass(state: ScriptRun, call: Captured) -> None:
    """Each pass of the wanted call in a loop (`ScriptRun.repeat`): the first starts the
    clock; a later one is recorded when its model has a new structure; at a limit the run
    ends."""
    assert state.captured is not None
    state.passes += 1
    call.loop_pass = state.passes
    if state.passes == 1:
        if threading.current_thread() is threading.main_thread():
            signal.setitimer(signal.ITIMER_REAL, BUDGET_S)
        return
    if structure(call) not in {structure(c) for c in (state.captured, *state.later)}:
        state.later.append(call)
    if len(state.later) >= MAX_MODELS or state.passes >= MAX_PASSES:
        raise ScriptStop(state.captured)


@contextlib.contextmanager
def budget(state: ScriptRun) -> Iterator[None]:
    """Ends the run `BUDGET_S` seconds after the loop's first capture (a SIGALRM timer in
    the analysis process's main thread; elsewhere the pass limits alone)."""
    if state.repeat is None or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expired(_sig: int, _frame: Any) -> None:
        if state.captured is not None:
            raise ScriptStop(state.captured)

    previous = signal.signal(signal.SIGALRM, expired)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def label(call: Captured, calls: list[Captured]) -> str:
    """`Head`, or `Sequential` (pass 2) when several passes' models share a class name."""
    name = type(model_of(call)).__name__
    same = sum(type(model_of(c)).__name__ == name for c in calls)
    return f"`{name}`" if same == 1 else f"`{name}` (pass {call.loop_pass})"


def note(line: int, loop: int, passes: int, calls: list[Captured]) -> str:
    """What the analysis says of a loop's export call (the CLI, the report, the editor)."""
    listed = ", ".join(label(c, calls) for c in calls)
    made = f"{passes} pass{'es' * (passes != 1)}"
    return (
        f"the export call at line {line} is in the loop at line {loop}: of the {made} the "
        f"run made, each model of another structure was analysed ({listed})"
    )
