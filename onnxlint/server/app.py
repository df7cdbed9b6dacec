"""`OnnxlintServer`: the session, its diagnostics and checks, and the deep-analysis service.

The features (lifecycle, text_sync, notebooks, code_actions, hover, code_lens, commands) are
written against this class; `create_server` (server/__init__.py) builds it and registers them.
"""

from __future__ import annotations

from onnxlint.server.checks import Checks
from onnxlint.server.deep_service import DeepService


class OnnxlintServer(Checks):
    """The language server onnxlint runs (see the package and module docstrings)."""

    def __init__(self) -> None:
        super().__init__()
        # Analyses on request, in a worker process (None until `create_server` attaches it).
        self.deep: DeepService | None = None
