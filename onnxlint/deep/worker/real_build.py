"""The model built again with real random weights (seed 0), for the phases that run it for
real: `verify` (a script target's model) and a rewrite's `proof`. load.py and script.py
read `wire.RETRY_REAL_TENSORS` and build with real tensors instead of fake ones."""

from __future__ import annotations

import torch

from . import load, script, wire
from .record import Analysis, Emit, cause, first_line


def build_real(target: dict[str, object], progress: Emit, why: str) -> Analysis | str:
    """The record of a real-tensor build of `target` (its factory, or its script run up to
    the export call), or why it could not be built."""
    rec = Analysis({**target, wire.RETRY_REAL_TENSORS: {"why": why}}, progress)
    torch.manual_seed(0)
    try:
        ok = script.run(rec) if target.get("script") else load.run(rec)
    except Exception as e:
        return f"the model could not be built with real tensors: {cause(e)}"
    if not ok:
        said = "; ".join(f["message"] for f in rec.findings[:2]) or "it stopped"
        return f"the model could not be built with real tensors: {first_line(said)}"
    return rec
