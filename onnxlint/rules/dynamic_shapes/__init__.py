"""OLX3xx: `dynamic_axes` / `dynamic_shapes` / `input_names` that the exporter rejects or misreads.

The dynamo exporter keys `dynamic_shapes` by the `forward` parameter names, converts the
legacy `dynamic_axes` (keyed by `input_names`) with a deprecation warning and fails on any
mismatch; the legacy exporter rejects `dynamic_shapes`. These rules check the literal
arguments of the export call against each other, against the model's `forward` (when its
class is in the same file, or in a project module it is imported from: `onnxlint.project`)
and against the example inputs' ranks.
"""
