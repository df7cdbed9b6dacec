"""One diagnostic per cause: a deep finding folded into the static finding it confirms."""

from __future__ import annotations

from onnxlint.core.confirmed import merge_confirmed
from onnxlint.core.violation import Severity, Span, Violation


def _v(code: str, line: int, message: str, severity: Severity, source: str) -> Violation:
    span = Span(line, 9, line, 25)
    return Violation("/p/export.py", span, code, message, severity, source=source)


def test_opset_the_exporter_does_not_write_folds_into_the_static_opset_warning() -> None:
    # OLX501 says an opset below 18 may be kept at 18; OLX827 is the analysis finding that
    # it is, on the same `opset_version=` line: one diagnostic, confirmed.
    static = [_v("OLX501", 65, "`opset_version=16` is below 18", Severity.WARNING, "static")]
    deep = [_v("OLX827", 65, "writes this model at opset 18", Severity.WARNING, "deep")]
    out = merge_confirmed(static, deep)
    assert [v.code for v in out] == ["OLX501"]
    assert out[0].message.endswith("(confirmed by the deep analysis)")
    assert "writes this model at opset 18" in out[0].related[0].message


def test_a_deep_finding_on_another_static_line_stays_its_own() -> None:
    static = [_v("OLX405", 65, "ignored argument", Severity.WARNING, "static")]
    deep = [_v("OLX827", 65, "writes this model at opset 18", Severity.WARNING, "deep")]
    assert [v.code for v in merge_confirmed(static, deep)] == ["OLX405", "OLX827"]


def test_an_export_failing_in_training_mode_folds_into_the_static_mode_warning() -> None:
    # OLX201 warns that the model is in training mode at the export; OLX828 is the deep
    # finding that the export fails because of it, at the same model argument: one
    # diagnostic, an error, whose message says what the deep analysis adds.
    static = [_v("OLX201", 35, "`model` is in training mode", Severity.WARNING, "static")]
    deep = [_v("OLX828", 35, "the export fails because `model`", Severity.ERROR, "deep")]
    out = merge_confirmed(static, deep)
    assert [v.code for v in out] == ["OLX201"]
    assert out[0].severity is Severity.ERROR
    assert out[0].message.endswith("(the deep analysis: the export fails because of it)")
    assert "the export fails because `model`" in out[0].related[0].message


def test_an_ignored_symbolic_the_capture_ran_folds_into_the_static_warning() -> None:
    # OLX410 warns that the export reaches `NMS.apply` of a Function with a `symbolic`;
    # OLX829 is the deep finding that the capture ran it, at the same line: one diagnostic.
    static = [_v("OLX410", 162, "`ORT_NMS` has a `symbolic`", Severity.WARNING, "static")]
    deep = [_v("OLX829", 162, "`ORT_NMS.apply(...)` is exported", Severity.WARNING, "deep")]
    assert [v.code for v in merge_confirmed(static, deep)] == ["OLX410"]


def test_a_graph_in_training_mode_folds_into_the_static_mode_warning() -> None:
    # OLX201 says the model may be in training mode at the export; OLX830 that the captured
    # graph computes so, at the same model argument: one diagnostic that says both.
    static = [_v("OLX201", 51, "`model` may be in training mode", Severity.WARNING, "static")]
    deep = [_v("OLX830", 51, "`model` is exported in training mode", Severity.WARNING, "deep")]
    out = merge_confirmed(static, deep)
    assert [v.code for v in out] == ["OLX201"]
    assert out[0].message.endswith("(the deep analysis: its dropouts drop in the file)")


def test_a_script_call_that_raises_folds_into_the_static_removed_argument_error() -> None:
    # OLX408 says the export call passes an argument torch 2.13 refuses; the deep OLX803 at
    # the same call, that the script's own call raises there: one diagnostic.
    static = [_v("OLX408", 3, "takes no `enable_onnx_checker=`", Severity.ERROR, "static")]
    deep = [_v("OLX803", 3, "refuses this call's arguments", Severity.ERROR, "deep")]
    out = merge_confirmed(static, deep)
    assert [v.code for v in out] == ["OLX408"]
    assert "refuses this call's arguments" in out[0].related[0].message
