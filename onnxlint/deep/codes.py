"""Which OLX8xx code each worker finding kind becomes.

The worker says what happened (a `wire.KIND_*`); the code, name and default
severity come from the doc-only rule classes in `onnxlint/rules/deep_analysis/`, so the
docs, `onnxlint rule OLX8nn` and the findings can never disagree.
"""

from __future__ import annotations

from onnxlint.core.violation import Severity
from onnxlint.deep.worker import wire

KIND_TO_CODE: dict[str, str] = {
    wire.KIND_GRAPH_BREAK: "OLX801",
    wire.KIND_DATA_DEPENDENT: "OLX802",
    wire.KIND_EXPORT_FAILURE: "OLX803",
    wire.KIND_DIM_SPECIALIZED: "OLX804",
    wire.KIND_UNSUPPORTED_OP: "OLX805",
    wire.KIND_CUSTOM_OP_NO_FAKE: "OLX806",
    wire.KIND_CUSTOM_OP_NO_TRANSLATION: "OLX807",
    wire.KIND_TRANSLATION_FAILURE: "OLX808",
    wire.KIND_CHECKER_FAILURE: "OLX809",
    wire.KIND_VERIFY_MISMATCH: "OLX810",
    wire.KIND_VERIFY_FAILURE: "OLX811",
    wire.KIND_TARGET_ERROR: "OLX812",
    wire.KIND_FAKE_MODE_LIMIT: "OLX816",
    wire.KIND_TORCH_UNSUPPORTED: "OLX817",
    wire.KIND_OUTPUT_DIM_SPECIALIZED: "OLX818",
    wire.KIND_ORT_MEMORY_LEAK: "OLX820",
    wire.KIND_ORT_MEMORY_OPTIONS: "OLX821",
    wire.KIND_ALIASED_INPUTS: "OLX822",
    wire.KIND_SCALAR_INPUT: "OLX823",
    wire.KIND_NAME_COLLISION: "OLX824",
    wire.KIND_DIM_RELATION: "OLX825",
    wire.KIND_AXES_MOVED: "OLX826",
    wire.KIND_OPSET_KEPT: "OLX827",
    wire.KIND_TRAINING_MODE: "OLX828",
    wire.KIND_SYMBOLIC_IGNORED: "OLX829",
    wire.KIND_EXPORTED_TRAINING: "OLX830",
}

RUN_MEMORY_OVER_BUDGET = "OLX819"
"""Decided by onnxlint (the budget and the user's export call), not by the worker."""

STATUS_TO_CODE: dict[str, str] = {
    wire.STATUS_CRASHED: "OLX813",
    wire.STATUS_TIMEOUT: "OLX814",
    wire.STATUS_MEMORY: "OLX815",
}

_FALLBACK_SEVERITY = {
    "OLX801": Severity.WARNING,
    "OLX816": Severity.WARNING,
    "OLX817": Severity.WARNING,
    "OLX819": Severity.WARNING,
    "OLX821": Severity.INFO,
}


def code_for_kind(kind: str) -> str:
    return KIND_TO_CODE.get(kind, "OLX803")


def severity_for(code: str) -> Severity:
    """The rule class's default severity (rules are imported lazily: they pull in libcst)."""
    try:
        from onnxlint.rules import rule_by_code

        rule = rule_by_code(code)
    except Exception:  # the rule registry must never stop deep findings
        rule = None
    if rule is not None:
        return rule.severity
    return _FALLBACK_SEVERITY.get(code, Severity.ERROR)
