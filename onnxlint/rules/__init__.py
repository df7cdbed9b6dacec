"""Rules: the registry, the Rule base, its walk Context, the docs. Imports project and below.

Rules live one per module, grouped by family folder (`unparsable/` OLX0xx, `trace_hostile/`
OLX1xx, `model_mode/` OLX2xx, `dynamic_shapes/` OLX3xx, `exporter_api/` OLX4xx,
`export_config/` OLX5xx, `deep_analysis/` OLX8xx). The registry (`all_rules`) finds every
`Rule` subclass by importing the family folders' modules: adding a rule is adding a module;
nothing else to register. The modules beside the folders (`base`, `docs`) hold no rule.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from onnxlint.rules.base import Rule


@cache
def all_rules() -> tuple[type[Rule], ...]:
    """Every rule class, sorted by code. Raises if two rules share a code."""
    found: dict[str, type[Rule]] = {}
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        if not info.ispkg and info.name.count(".") == 2:
            continue  # base, docs: beside the family folders, no rule in them
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
