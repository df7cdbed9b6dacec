"""Every rule's own VALID and INVALID cases, and the registry's invariants."""

from __future__ import annotations

import re

import pytest

from onnxlint.core.config import parse_table
from onnxlint.engine import Engine
from onnxlint.rules import all_rules
from onnxlint.rules.base import Invalid, Rule, Valid
from onnxlint.source.fixes import fix_text

RULES = [r for r in all_rules() if not r.from_deep_analysis]


def _config(rule: type[Rule], case: Valid | Invalid):
    table = {"select": [rule.code], **case.config}
    return parse_table(table, None)


def _cases(kind: str):
    for rule in RULES:
        for i, case in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, case, id=f"{rule.code}-{kind.lower()}-{i}")


@pytest.mark.parametrize(("rule", "case"), list(_cases("VALID")))
def test_valid(rule: type[Rule], case: Valid) -> None:
    found = [
        v for v in Engine().check("case.py", case.code, _config(rule, case)) if v.code == rule.code
    ]
    assert not found, f"{rule.code} reported on valid code: {[(v.line, v.message) for v in found]}"


@pytest.mark.parametrize(("rule", "case"), list(_cases("INVALID")))
def test_invalid(rule: type[Rule], case: Invalid) -> None:
    engine = Engine()
    config = _config(rule, case)
    found = [v for v in engine.check("case.py", case.code, config) if v.code == rule.code]
    assert found, f"{rule.code} did not report on:\n{case.code}"
    first = found[0]
    assert first.line == case.line, f"expected line {case.line}, got {first.line}: {first.message}"
    assert case.message in first.message
    if case.severity is not None:
        assert first.severity == case.severity
    if case.count is not None:
        assert len(found) == case.count, [(v.line, v.message) for v in found]
    if case.fixed is not None:
        assert any(v.fix for v in found), f"{rule.code} offered no fix"
        result = fix_text(
            case.code,
            found,
            lambda t: [v for v in engine.check("case.py", t, config) if v.code == rule.code],
            unsafe=True,
        )
        assert result.text == case.fixed
    elif rule.fix_safety is None:
        assert all(v.fix is None for v in found), "a rule without fix_safety offered a fix"


def test_codes_are_unique_and_well_formed() -> None:
    codes = [r.code for r in all_rules()]
    assert len(codes) == len(set(codes))
    for r in all_rules():
        assert re.fullmatch(r"OLX[0-9]{3}", r.code), r.code
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", r.name), r.name
    names = [r.name for r in all_rules()]
    assert len(names) == len(set(names))


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_docs_have_every_section(rule: type[Rule]) -> None:
    sections = rule.doc_sections()
    needed = [
        "What it does",
        "Why is this bad?",
        "Example",
        "Use instead",
        "Fix safety",
        "References",
    ]
    missing = [s for s in needed if s not in sections]
    assert not missing, f"{rule.code} docstring lacks: {missing}"


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.code)
def test_every_static_rule_has_cases(rule: type[Rule]) -> None:
    assert rule.VALID, f"{rule.code} has no VALID case"
    assert rule.INVALID, f"{rule.code} has no INVALID case"
