"""The model's own state as the export call sees it, put back after each phase's run.

A forward that caches tensors on its module (YOLOv5-style detection heads keep `self.grid`, a
list they fill on the first eval call at a size) changes what the next run sees. A real
export runs the forward once, on the state the script left; the analysis runs it several
times (the memory count, torch._dynamo.explain, then the export). Without this, the export
traced the grids the memory count made under its own fake mode, and torch.export failed with
"fake mode ... from fake tensor input 0 doesn't match mode ... from fake tensor input 928"
where torch exports (YOLOP's export_onnx.py).
"""

from __future__ import annotations

from typing import Any

import torch

_SKIP = frozenset({"_parameters", "_modules", "training"})


def _holds_tensor(value: Any, depth: int = 0) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if depth > 2:
        return False
    if isinstance(value, (list, tuple)):
        return any(_holds_tensor(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v, depth + 1) for v in value.values())
    return False


class ModuleState:
    """Each module's buffers and tensor-holding plain attributes (the containers' items
    too: `self.grid[i] = ...` changes the list in place), at the time of `snapshot`."""

    def __init__(self, model: Any) -> None:
        self._saved: list[tuple[torch.nn.Module, str, Any, Any]] = []
        self._names: list[tuple[torch.nn.Module, frozenset[str]]] = []
        if not isinstance(model, torch.nn.Module):
            return
        for module in model.modules():
            self._names.append((module, frozenset(vars(module))))
            self._saved.append((module, "_buffers", module._buffers, dict(module._buffers)))
            for name, value in vars(module).items():
                if name in _SKIP or name.startswith("__") or not _holds_tensor(value):
                    continue
                items = (
                    list(value)
                    if isinstance(value, list)
                    else dict(value)
                    if isinstance(value, dict)
                    else None
                )
                self._saved.append((module, name, value, items))

    def restore(self) -> None:
        """Put back what each saved attribute was (and held); tensors a run cached in a new
        attribute (`self.cache = x` on a first call) are dropped."""
        for module, names in self._names:
            for name in [n for n in vars(module) if n not in names]:
                if _holds_tensor(vars(module)[name]):
                    del module.__dict__[name]
        for module, name, value, items in self._saved:
            if isinstance(value, list) and items is not None:
                value[:] = items
            elif isinstance(value, dict) and items is not None:
                value.clear()
                value.update(items)
            module.__dict__[name] = value
