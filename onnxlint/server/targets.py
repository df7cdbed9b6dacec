"""Which target an "Analyze export" runs: the lenses over export calls, model classes and
target factories (the code lens feature, code_lens.py, shows them; the deep service runs them).

Which target a lens runs is decided by what the static engine knows, never by names in the
text: the project index's export sites (`onnxlint.project.exports.export_sites`) say which
class each export call exports, and `returned_classes` says which classes each declared deep
target (`onnxlint.deep.targets`) builds. A lens runs the target whose model is the class the
call exports; over an export call that no target builds, in a script, the lens runs the
script itself up to that call (`onnxlint.deep.scripts`: no set-up), and a second lens offers
to create a target (`onnxlint.createTarget`). Each lens names what it analyses.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from onnxlint.server.protocol import ANALYZE_EXPORT, CREATE_TARGET
from onnxlint.server.session import Session

log = logging.getLogger("onnxlint.server")

ClassKey = tuple[str, str]  # (real path of the defining file, class name)


@dataclass(frozen=True)
class Lens:
    """One lens: its 1-based line, title, command and argument object."""

    line: int
    title: str
    command: str
    argument: dict[str, Any] = field(default_factory=dict)


def _real(path: str | Path) -> str:
    return os.path.realpath(str(path))


def target_classes(index: Any, target: Any) -> set[ClassKey]:
    """The project classes a deep target's factory returns, as the static engine reads them
    (through local builders and imports, like the export sites)."""
    from onnxlint.deep.targets import factory_location
    from onnxlint.project.exports import returned_classes

    loc = factory_location(target)
    if loc is None:
        return set()
    facts = index.facts(str(loc[0]))
    func = facts.semantic.functions.get(target.factory.partition(":")[2]) if facts else None
    if facts is None or func is None:
        return set()
    return {(_real(f.path), c.name) for f, c in returned_classes(index, facts, func, depth=2)}


def _class_line(facts: Any, cls: Any) -> int | None:
    from onnxlint.source.positions import node_span

    for b in facts.blocks:
        if b.module is not None and any(stmt is cls.node for stmt in b.module.body):
            span = node_span(b, cls.node.name)
            return span.line if span is not None else None
    return None


def lenses_for(
    ls: Session, uri: str, text: str, targets_of: Callable[[str], list[Any]] | None
) -> list[Lens]:
    """On the engine thread: the file's lenses, sorted by line (`targets_of`: the deep
    targets of the project holding a file, None without the deep service)."""
    from onnxlint.deep.scripts import is_script
    from onnxlint.deep.targets import factory_location
    from onnxlint.project.exports import export_sites

    path = ls.path_of(uri)
    index = ls.engine.project
    cfg, _, _ = ls.config_for(uri)
    saved = index.deps  # not a check: what is read here is no check's dependency
    index.deps = {}
    try:
        index.use_config(cfg)
        facts = index.facts(os.path.abspath(path), text)
        if facts is None:
            return []
        targets: list[Any] = []
        if targets_of is not None and ls.is_file(uri):
            targets = list(targets_of(uri))
        builds = {t.name: target_classes(index, t) for t in targets}
        out: list[Lens] = []
        here = _real(path)

        def analyze(line: int, name: str) -> Lens:
            return Lens(
                line, f"Analyze export ({name})", ANALYZE_EXPORT, {"line": line, "target": name}
            )

        for t in targets:
            loc = factory_location(t)
            if t.origin == "exportable" and t.decl_path is not None:
                loc = (t.decl_path, t.decl_line)  # the class is its own target
            if loc is not None and _real(loc[0]) == here:
                out.append(analyze(loc[1], t.name))
        for cls in facts.semantic.module_classes():
            line = _class_line(facts, cls)
            key = (here, cls.name)
            for t in targets:
                if line is not None and key in builds[t.name]:
                    out.append(analyze(line, t.name))
        script = is_script(text) and ls.is_file(uri)
        for site, classes in export_sites(index, facts):
            keys = {(_real(f.path), c.name) for f, c in classes}
            chosen = [t.name for t in targets if keys & builds[t.name]]
            for name in chosen:
                out.append(analyze(site.line, name))
            if chosen:
                continue
            what = classes[0][1].name if classes else f"line {site.line}"
            if script:  # no set-up: the lens runs this script up to this call
                out.append(
                    Lens(
                        site.line,
                        f"Analyze export ({what}, runs this script)",
                        ANALYZE_EXPORT,
                        {"line": site.line, "script": here},
                    )
                )
            if classes:
                f, c = classes[0]
                title = (
                    f"Create a target for {c.name}"
                    if script
                    else f"No analysis target builds {c.name}: create one"
                )
                out.append(
                    Lens(
                        site.line,
                        title,
                        CREATE_TARGET,
                        {"line": site.line, "class": c.name, "path": f.path},
                    )
                )
        unique = {(lens.line, lens.title): lens for lens in out}
        return sorted(unique.values(), key=lambda lens: (lens.line, lens.title))
    finally:
        index.deps = saved
