"""Deep findings in plain words: what the line does, not what torch's symbolic shapes say.

torch reports a data-dependent branch as `Could not guard on data-dependent expression
Eq(u0, 1) (unhinted: ...)` and dynamo a branch on a tensor as `generic_jump
TensorVariable()`. The user's line says it better: "this `if` depends on tensor data
(`x.sum() > 0`)". `reword` builds that message from the source line and keeps torch's own
text as a note (the finding's details), so nothing is lost.
"""

from __future__ import annotations

import re

MAX_EXPR = 60

# What in a line makes Python read a tensor's value, first match wins.
_STATEMENTS = (
    (re.compile(r"^\s*(if|elif|while)\s+(?P<expr>.+?)\s*:\s*(#.*)?$"), "this `{kw}`"),
    (re.compile(r"^\s*(assert)\s+(?P<expr>[^,]+)"), "this `{kw}`"),
)
_TERNARY = re.compile(r"\bif\s+(?P<expr>.+?)\s+else\b")
_CONVERSION = re.compile(r"\b(?P<kw>int|float|bool)\((?P<expr>[^()]*(?:\([^()]*\)[^()]*)*)\)")
_ITEM = re.compile(r"(?P<expr>[\w.\[\]]+(?:\([^()]*\))?)\.(?P<kw>item|tolist)\(\)")
_DATA_DEPENDENT = ("Could not guard on data-dependent", "data-dependent condition")
# Dynamo's graph-break reasons for Python reading a tensor: a branch, `.item()`, `.tolist()`.
_GENERIC_JUMP = re.compile(r"generic_jump\s+\w*TensorVariable|Tensor\.(?:item|tolist)\(\)")


def _short(expr: str) -> str:
    expr = " ".join(expr.split())
    return expr if len(expr) <= MAX_EXPR else expr[: MAX_EXPR - 3] + "..."


def what_reads_data(line: str) -> str | None:
    """ "this `if` ... (`cond`)" for the construct of `line` that needs a tensor's value."""
    code = re.sub(r"\s+#[^'\"]*$", "", line)
    for pattern, words in _STATEMENTS:
        m = pattern.match(code)
        if m is not None:
            return f"{words.format(kw=m.group(1))} depends on tensor data (`{_short(m['expr'])}`)"
    m = _TERNARY.search(code)
    if m is not None:
        return f"this conditional expression depends on tensor data (`{_short(m['expr'])}`)"
    m = _CONVERSION.search(code)
    if m is not None:
        kw, expr = m["kw"], _short(m["expr"])
        return f"this `{kw}()` needs the value of tensor data (`{kw}({expr})`)"
    m = _ITEM.search(code)
    if m is not None:
        return f"this `.{m['kw']}()` needs the value of tensor data (`{_short(m['expr'])}`)"
    return None


def reword(code: str, message: str, line: str | None) -> tuple[str, tuple[str, ...]]:
    """(plain message, extra notes) for a deep finding on source line `line`; the message
    unchanged and no notes when there is nothing plainer to say."""
    if line is None:
        return message, ()
    if code == "OLX802" and any(k in message for k in _DATA_DEPENDENT):
        found = what_reads_data(line)
        if found is not None:
            return (
                f"{found}: torch.export cannot decide it without real data",
                (f"torch: {message}",),
            )
    if code == "OLX801" and _GENERIC_JUMP.search(message):
        found = what_reads_data(line)
        if found is not None:
            return f"graph break: {found}", (f"torch: {message}",)
    return message, ()
