"""Output formats of `onnxlint check`: text (for people), json, sarif, github (for tools)."""

from __future__ import annotations

FORMATS = ("text", "json", "sarif", "github")
