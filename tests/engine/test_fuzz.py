"""Hypothesis + hypothesmith: the engine never crashes on generated Python programs."""

from __future__ import annotations

import hypothesmith
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onnxlint.engine import Engine

ENGINE = Engine()
PREFIX = "import torch\nimport torch.nn as nn\n"


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_engine_never_crashes_on_grammatical_programs(source: str) -> None:
    found = ENGINE.check("fuzz.py", PREFIX + source)
    assert all(v.line >= 1 and v.column >= 1 for v in found)
    assert not ENGINE.last_stats.rule_errors, ENGINE.last_stats.rule_errors


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_node())
def test_engine_never_crashes_on_generated_syntax_trees(source: str) -> None:
    ENGINE.check("fuzz.py", PREFIX + source)
    assert not ENGINE.last_stats.rule_errors, ENGINE.last_stats.rule_errors


@settings(max_examples=200, deadline=None)
@given(st.text())
def test_engine_never_crashes_on_arbitrary_text(source: str) -> None:
    ENGINE.check("fuzz.py", PREFIX + source)
