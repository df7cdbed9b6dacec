"""OLX2xx: the exported model must be in eval mode.

A module is in training mode when it is built; the dynamo exporter, `torch.export` and
tracing all capture whatever mode the model is in (the `training=` keyword of
`torch.onnx.export` is ignored by the dynamo exporter), so a missing `.eval()` silently
exports Dropout and training-mode BatchNorm. The rules follow the model variable through
the scope of the export call with `onnxlint.analysis.modes`.
"""
