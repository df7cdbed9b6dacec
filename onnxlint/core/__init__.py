"""Violations, config, suppressions, own codes, the code cache. Imports nothing of onnxlint."""
