"""Violations, config, suppressions, the start-up code cache. Imports no other onnxlint package."""
