"""Every finding kind maps to a documented, deep-only OLX8xx rule (no torch needed)."""

from __future__ import annotations

from onnxlint.deep import codes
from onnxlint.deep.worker import wire
from onnxlint.rules import all_rules, rule_by_code

SECTIONS = [
    "What it does",
    "Why is this bad?",
    "Example",
    "Use instead",
    "Fix safety",
    "References",
]


def test_every_kind_and_status_has_a_deep_rule() -> None:
    kinds = {v for k, v in vars(wire).items() if k.startswith("KIND_")}
    assert set(codes.KIND_TO_CODE) == kinds
    for code in [*codes.KIND_TO_CODE.values(), *codes.STATUS_TO_CODE.values()]:
        rule = rule_by_code(code)
        assert rule is not None, code
        assert rule.from_deep_analysis is True
        assert list(rule.doc_sections()) == SECTIONS, code
        assert codes.severity_for(code) is rule.severity


def test_deep_codes_are_all_used() -> None:
    deep = {r.code for r in all_rules() if r.from_deep_analysis}
    used = set(codes.KIND_TO_CODE.values()) | set(codes.STATUS_TO_CODE.values())
    used.add(codes.RUN_MEMORY_OVER_BUDGET)  # decided by onnxlint from the worker's figures
    assert deep == used
    assert all(c.startswith("OLX8") for c in deep)
