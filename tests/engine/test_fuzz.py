"""Hypothesis + hypothesmith: the engine never crashes on generated Python programs, and
fixes never turn code that compiles into code that does not."""

from __future__ import annotations

import warnings

import hypothesmith
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onnxlint.core.config import parse_table
from onnxlint.core.violation import Violation
from onnxlint.engine import Engine
from onnxlint.rules import all_rules
from onnxlint.source.fixes import fix_text

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


# The rules' own cases, glued together and spliced with fragments that fixes must cope with
# (keywords the fixes add or remove, suppressions, line continuations, starred arguments).
SEEDS = [c.code for r in all_rules() if not r.from_deep_analysis for c in r.INVALID] + [
    c.code for r in all_rules() if not r.from_deep_analysis for c in r.VALID
]
FRAGMENTS = [
    ", dynamo=False",
    ", dynamo=True",
    ", dynamic_axes={'x': {0: 'b'}}",
    ", opset_version=9",
    ", training=torch.onnx.TrainingMode.TRAINING",
    ", export_params=True",
    ", f=None",
    "**kw",
    ", *a",
    " # onnxlint: disable=OLX401",
    " # noqa: OLX402",
    "model.eval()\n",
    "\\\n",
    "\n",
    "    ",
    ",",
    "(",
    ")",
]
ALL = parse_table({"select": ["ALL"]}, None)


def _compiles(text: str) -> bool:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for "'int' object is not callable"
        try:
            compile(text, "fuzz.py", "exec")
        except (SyntaxError, ValueError):
            return False
    return True


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.lists(st.sampled_from(SEEDS), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(min_value=0), st.sampled_from(FRAGMENTS)), max_size=3),
)
def test_fixes_keep_compiling_code_compiling(
    parts: list[str], splices: list[tuple[int, str]]
) -> None:
    text = "\n".join(parts)
    for where, fragment in splices:
        i = where % (len(text) + 1)
        text = text[:i] + fragment + text[i:]
    assume(_compiles(text))
    engine = Engine()

    def check(t: str) -> list[Violation]:
        return engine.check("fuzz.py", t, ALL)

    result = fix_text(text, check(text), check, unsafe=True)
    assert not engine.last_stats.rule_errors, engine.last_stats.rule_errors
    assert _compiles(result.text), f"fixes {[v.code for v in result.applied]} broke:\n{text}"
