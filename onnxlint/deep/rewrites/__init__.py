"""Rewrites of model code that answer deep findings (libcst), one module per kind of finding.

Each module has `REWRITERS`: a kind, the codes it answers, and how it makes its candidate
rewrites for one finding (`base.Site`). `deep/fixes.py` asks every rewriter for
candidates and has the worker prove them; none is offered unproven.

Not a kind: `register_buffer` in `__init__` for a tensor attribute that `forward` assigns.
Measured with torch 2.13 (2026-11-27): `torch.onnx.export` exports such a module (a new
attribute `self.last = y.detach()`, or a counter `self.count = self.count + 1`) with only
torch's UserWarning ("... must be registered as buffers"), and the buffer changes nothing
in the file: ONNX Runtime gives the same outputs for both files, eager's first call's (an ONNX
file keeps no state from one call to the next). The deep analysis has no finding there for
a rewrite to answer, and a rewrite that nothing proves is not offered; the state a forward
carries across calls is the static OLX107's.
"""

from __future__ import annotations

from onnxlint.deep.rewrites import (
    conditions,
    examples,
    grouped,
    loops,
    masks,
    ops,
    routing,
    scans,
    sizes,
    translations,
    views,
)
from onnxlint.deep.rewrites.base import Candidate, Rewriter, Site, Sources, edits_between, line_map

REWRITERS: list[Rewriter] = [
    *examples.REWRITERS,
    *sizes.REWRITERS,
    *ops.REWRITERS,
    *translations.REWRITERS,
    *views.REWRITERS,
    *grouped.REWRITERS,
    *masks.REWRITERS,
    *loops.REWRITERS,
    *scans.REWRITERS,
    *routing.REWRITERS,
    *conditions.REWRITERS,
]

KINDS: dict[str, str] = {r.kind: r.label for r in REWRITERS}


def candidates(site: Site) -> list[Candidate]:
    """Every rewriter's candidates for one finding, in the rewriters' order."""
    out: list[Candidate] = []
    for r in REWRITERS:
        out += r.candidates(site)
    return out


__all__ = [
    "KINDS",
    "REWRITERS",
    "Candidate",
    "Rewriter",
    "Site",
    "Sources",
    "candidates",
    "edits_between",
    "line_map",
]
