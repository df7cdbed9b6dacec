"""The codes the engine and its front ends report themselves, defined once."""

# A file, or a top-level statement of it, that cannot be parsed or read (rules/unparsable).
SYNTAX_ERROR_CODE = "OLX000"
# onnxlint itself failed on a file (a bug: the message asks to report it).
INTERNAL_ERROR_CODE = "OLX001"
