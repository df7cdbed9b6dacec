"""One finding per cause: a deep finding folded into the static finding it confirms.

The static rules say what the code will do at the export; the deep analysis, where it ran,
says what torch did. Where both speak of the same line, the user reads one finding (the
static one, its message saying what the deep analysis adds; the deep messages are its
related information). The editor (`server/diagnostics.py`) and the CLI (`check --deep`)
merge through this one function.
"""

from __future__ import annotations

import dataclasses
import os

from onnxlint.core.violation import FixSafety, Related, Violation

# Deep findings that confirm a static OLX1xx finding on the same line (one cause).
CONFIRMING = frozenset(
    {"OLX801", "OLX802", "OLX803", "OLX804", "OLX818", "OLX827", "OLX828", "OLX829", "OLX830"}
)
# Other static findings a deep one confirms: OLX501 warns that an opset below 18 may not be
# written, OLX827 is the analysis finding that it is not; OLX201 warns that the model is in
# training mode, OLX828 that the export fails because of it; OLX410 warns that an export
# reaches an autograd Function's `symbolic`, OLX829 that the capture ran it; OLX830 that
# the file's dropouts really drop.
# OLX402, OLX403, OLX408 and OLX409 say that the export call raises in torch 2.13; the deep
# analysis's OLX803 at that call, that the script's own call does.
CONFIRMS = {
    "OLX827": {"OLX501"},
    "OLX828": {"OLX201"},
    "OLX829": {"OLX410"},
    "OLX830": {"OLX201"},
    "OLX803": {"OLX402", "OLX403", "OLX408", "OLX409"},
}
# What the folded diagnostic adds when the deep finding says more than "it is so".
CONFIRMED_AS = {
    "OLX828": "the deep analysis: the export fails because of it",
    "OLX830": "the deep analysis: its dropouts drop in the file",
}


def merge_confirmed(static: list[Violation], deep: list[Violation]) -> list[Violation]:
    """One diagnostic per cause: deep findings (OLX801/802/...) on the line of a static
    OLX1xx finding (or of the static finding a deep one confirms, `CONFIRMS`) are folded
    into it (its message says, in a few words, that the deep analysis confirmed it; the
    deep findings' own messages are its related information), and several such deep
    findings on a line without one become one, the most severe, with the others as
    related."""
    by_line: dict[tuple[str, int], list[Violation]] = {}
    rest: list[Violation] = []
    for v in deep:
        if v.code in CONFIRMING:
            by_line.setdefault((os.path.realpath(v.path), v.line), []).append(v)
        else:
            rest.append(v)
    out = list(static)
    for (path, line), found in by_line.items():
        found.sort(key=lambda v: (-v.severity.rank, v.code))
        also = {code for v in found for code in CONFIRMS.get(v.code, ())}
        at = [
            i
            for i, s in enumerate(out)
            if (s.code.startswith("OLX1") or s.code in also)
            and s.line == line
            and os.path.realpath(s.path) == path
        ]
        if at:
            i = min(at, key=lambda i: -out[i].severity.rank)
            said = [CONFIRMED_AS[v.code] for v in found if v.code in CONFIRMED_AS]
            lead = said[0] if said else "confirmed by the deep analysis"
            primary, others = out[i], found
        elif len(found) > 1:
            primary, others = found[0], found[1:]
            lead = f"and {len(others)} more deep finding{'s' if len(others) > 1 else ''} here"
            i = -1
        else:
            rest.append(found[0])
            continue
        related = tuple(
            Related(o.path, o.line, o.column, f"{o.code} ({o.source}): {o.message}") for o in others
        )
        severity = max([primary, *others], key=lambda v: v.severity.rank).severity
        fix = primary.fix
        if fix is None or fix.safety is FixSafety.DISPLAY or not fix.changes:
            # a deep finding's proven rewrite is the fix of the one diagnostic of that cause
            fix = next((o.fix for o in others if o.fix is not None and o.fix.changes), fix)
        merged = dataclasses.replace(
            primary,
            fix=fix,
            message=f"{primary.message} ({lead})",
            severity=severity,
            notes=(*primary.notes, *(n for o in others for n in o.notes if n.startswith("torch:"))),
            related=(*related, *primary.related),
        )
        if i >= 0:
            out[i] = merged
        else:
            out.append(merged)
    return out + rest


def merge_confirmed_files(static: list[Violation], deep: list[Violation]) -> list[Violation]:
    """`merge_confirmed` over findings of several files (and notebook cells), as the CLI has
    them: each file's (each cell's) deep findings fold into its own static ones."""

    def key(v: Violation) -> tuple[str, int]:
        return os.path.realpath(v.path), v.cell or 0

    deep_by: dict[tuple[str, int], list[Violation]] = {}
    for v in deep:
        deep_by.setdefault(key(v), []).append(v)
    static_by: dict[tuple[str, int], list[Violation]] = {}
    for v in static:
        static_by.setdefault(key(v), []).append(v)
    out: list[Violation] = []
    for k, vs in static_by.items():
        out += merge_confirmed(vs, deep_by.pop(k, [])) if k in deep_by else vs
    for vs in deep_by.values():
        out += merge_confirmed([], vs)
    return out
