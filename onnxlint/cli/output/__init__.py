"""Output formats of `onnxlint check`: text, json, sarif, github. Imports core, rules."""

from __future__ import annotations

FORMATS = ("text", "json", "sarif", "github")
