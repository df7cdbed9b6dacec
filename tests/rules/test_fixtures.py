"""Whole-file fixtures, one per rule family: every finding on the file, and nothing else.

Each `fixtures/<family>.py` is a small realistic file with code that must be reported and code
that must not; `fixtures/<family>.snap` lists every finding the engine reports on it with the
default settings (all default rules, not only the family's), one per line: the span, code,
severity, whether it carries a fix, and the message, with the fix's edits below it. A rule's
own cases check its first finding; these check that nothing else is found around it (ruff's
snapshot tests, pylint's functional tests). After a deliberate change, rewrite the snapshots
with `ONNXLINT_UPDATE_SNAPSHOTS=1 python -m pytest tests/rules/test_fixtures.py` and read the
diff: every line added or gone is a finding gained or lost.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path

import pytest

from onnxlint.core.config import Config
from onnxlint.core.violation import Violation
from onnxlint.engine import Engine

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FAMILIES = sorted(p.stem for p in FIXTURES.glob("*.py"))


def render(found: list[Violation]) -> str:
    lines = []
    for v in found:
        s = v.span
        fix = f" [fix: {v.fix.safety.value}]" if v.fix is not None else ""
        lines.append(
            f"{s.line}:{s.column}-{s.end_line}:{s.end_column} {v.code} {v.severity.value}{fix}"
            f" {v.message}"
        )
        for e in v.fix.edits if v.fix is not None else ():
            r = e.span
            lines.append(f"    edit {r.line}:{r.column}-{r.end_line}:{r.end_column} {e.text!r}")
    return "\n".join(lines) + "\n"


def test_every_family_has_a_fixture() -> None:
    assert FAMILIES == [
        "dynamic_shapes",
        "export_call",
        "model_mode",
        "trace_hostile",
        "unparsable",
    ]


@pytest.mark.parametrize("family", FAMILIES)
def test_fixture_findings_are_exactly_the_snapshot(family: str) -> None:
    source = FIXTURES / f"{family}.py"
    found = Engine().check(f"{family}.py", source.read_text(encoding="utf-8"), Config())
    got = render(found)
    snap = FIXTURES / f"{family}.snap"
    if os.environ.get("ONNXLINT_UPDATE_SNAPSHOTS"):
        snap.write_text(got, encoding="utf-8")
    want = snap.read_text(encoding="utf-8")
    diff = "".join(
        difflib.unified_diff(want.splitlines(True), got.splitlines(True), "snapshot", "now")
    )
    assert got == want, f"{family}.py: the findings differ from {snap.name}:\n{diff}"
