"""OLX5xx: export-call configuration (opset, custom operators, translation table, external data).

These rules read the arguments of a `torch.onnx.export` call together with what the file
defines (custom operators, the exported model's class) and the facts in
`onnxlint.rules.exporter_api.api_table`.
"""
