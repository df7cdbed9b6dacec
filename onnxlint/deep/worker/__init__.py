"""Code that runs inside the analysis worker, under the user's interpreter.

Nothing here may import onnxlint: the worker is started as a script file
(`zygote.py`) and loads these modules under a private package name, so it works
with an interpreter that does not have onnxlint installed. Only `wire` and
`frames` are imported by the parent; they use the standard library alone.
"""
