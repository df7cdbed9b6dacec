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
    """Each module's attributes at the time of the snapshot, and the items of its lists and
    dicts that hold tensors (`self.grid[i] = ...` changes the list in place; buffers live
    in `_buffers`). All of them, not only the tensors: ultralytics' Detect keeps
    `self.shape` next to `self.anchors`, and putting one back without the other would give
    the export a state no real call has."""

    def __init__(self, model: Any) -> None:
        self._saved: list[tuple[torch.nn.Module, dict[str, Any], dict[str, Any]]] = []
        if not isinstance(model, torch.nn.Module):
            return
        for module in model.modules():
            attrs = dict(vars(module))
            items = {
                name: list(value) if isinstance(value, list) else dict(value)
                for name, value in attrs.items()
                if isinstance(value, (list, dict)) and name != "_modules" and _holds_tensor(value)
            }
            self._saved.append((module, attrs, items))

    def restore(self) -> None:
        """Put back each module's attributes (what a run added is dropped) and the saved
        items of its containers."""
        for module, attrs, items in self._saved:
            now = vars(module)
            for name in [n for n in now if n not in attrs]:
                del now[name]
            now.update(attrs)
            for name, saved in items.items():
                value = attrs[name]
                if isinstance(value, list):
                    value[:] = saved
                else:
                    value.clear()
                    value.update(saved)
