"""OLX8xx: findings of the deep analysis (reported by the worker, never by the static walk).

These classes carry the codes, names, severities and docs; `onnxlint.deep.codes` maps the
worker's finding kinds to them.
"""
