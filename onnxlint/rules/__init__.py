"""The rule registry: every `Rule` subclass in this package, found by importing its modules.

Rules live one per module, grouped by family folder (`trace_hostile/` for OLX1xx,
`model_mode/` OLX2xx, `dynamic_shapes/` OLX3xx, `exporter_api/` OLX4xx, `export_config/`
OLX5xx, `deep/` OLX8xx). Adding a rule is adding a module; nothing else to register.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from onnxlint.rule import Rule


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code. Raises if two rules share a code."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        module = importlib.import_module(info.name)
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
                and "code" in vars(obj)
            ):
                other = found.get(obj.code)
                if other is not None and other is not obj:
                    raise RuntimeError(f"{obj.code} is defined twice: {other} and {obj}")
                found[obj.code] = obj
    return tuple(found[c] for c in sorted(found))


def rule_by_code(code: str) -> type[Rule] | None:
    for r in all_rules():
        if r.code == code.upper():
            return r
    return None
