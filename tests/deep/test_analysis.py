"""The analysis phases on small real models, through the real warm worker."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]


def _target(project: Path, factory: str, **kw: object) -> Target:
    return Target(name=factory, factory=factory, root=project, **kw)  # type: ignore[arg-type]


def _codes_at(result: object) -> set[tuple[str, int]]:
    return {(v.code, v.line) for v in result.violations}  # type: ignore[attr-defined]


def test_every_break_and_unsupported_op_at_the_users_line(project: Path, analyzer) -> None:
    models = project / "deepproj" / "models.py"
    progress: list[str] = []
    res = analyzer.analyze(
        _target(project, "deepproj.models:breaks"), lambda p, _pct: progress.append(p)
    )
    assert res.status == "ok", res.detail
    got = _codes_at(res)
    # the print is the first statement: torch._dynamo.explain does not list that break, and
    # the breaks reported are explain's own (test_library_locations compares them)
    assert ("OLX801", line_of(models, 'print("first statement")')) not in got
    assert ("OLX801", line_of(models, "if y.sum().item() > 0")) in got
    # both data-dependent branches, although export stops at the first one
    assert ("OLX802", line_of(models, "if y.sum().item() > 0")) in got
    assert ("OLX802", line_of(models, "if m.sum() > 1")) in got
    # every unsupported op, each on its line
    ops = {v.message.split()[2]: v.line for v in res.violations if v.code == "OLX805"}
    assert ops == {
        "aten._linalg_eigh.default": line_of(models, "torch.linalg.eigh"),
        "aten._cdist_forward.default": line_of(models, "torch.cdist"),
        "aten.median.dim": line_of(models, "torch.median"),
    }
    assert all(v.path == str(models) and v.source == "deep" for v in res.violations)
    cdist = next(v for v in res.violations if "cdist" in v.message)
    assert any("unsqueeze" in n for n in cdist.notes)  # the workaround travels with it
    assert progress[:5] == ["starting worker", "load", "memory", "explain", "export"]
    assert "translate" in res.data["skipped"]
    assert res.peak_rss and res.peak_rss < 2 * 2**30


def test_clean_model_has_no_findings_and_a_symbolic_signature(project: Path, analyzer) -> None:
    res = analyzer.analyze(_target(project, "deepproj.models:clean"))
    assert res.status == "ok"
    assert res.violations == []
    onnx = res.data["onnx"]
    assert onnx["checker"] == "ok"
    assert onnx["inputs"][0]["shape"] == ["batch", 4]
    assert onnx["outputs"][0]["shape"][0] == "batch"
    assert set(onnx["op_histogram"]) >= {"Gemm", "Relu", "Softmax"}
    assert set(res.phases) >= {"load", "explain", "export", "decompose", "translate"}
    assert onnx["opset"] == 20  # version-converted to the default opset, as torch.onnx.export
    model = res.data["model"]
    assert model["params"] == 4 * 8 + 8
    assert model["params_by_dtype"]["float32"]["bytes"] == 4 * (4 * 8 + 8)


def test_requested_dynamic_dim_forced_static_is_reported_at_the_line(
    project: Path, analyzer
) -> None:
    models = project / "deepproj" / "models.py"
    res = analyzer.analyze(_target(project, "deepproj.models:specialized"))
    spec = [v for v in res.violations if v.code == "OLX804"]
    assert len(spec) == 1, res.violations
    assert spec[0].line == line_of(models, "x.view(2, 12)")
    assert "'batch'" in spec[0].message and "forces it to 2" in spec[0].message


def test_custom_op_without_fake_impl(project: Path, analyzer) -> None:
    custom = project / "deepproj" / "custom.py"
    res = analyzer.analyze(_target(project, "deepproj.custom:no_fake"))
    found = [v for v in res.violations if v.code == "OLX806"]
    assert found and found[0].path == str(custom)
    assert found[0].line == line_of(custom, "return nofake(x) + 1")


def test_custom_op_without_and_with_translation(project: Path, analyzer) -> None:
    custom = project / "deepproj" / "custom.py"
    res = analyzer.analyze(_target(project, "deepproj.custom:no_translation"))
    assert [(v.code, v.line) for v in res.violations] == [
        ("OLX807", line_of(custom, "return twice(x) + 1"))
    ]
    res = analyzer.analyze(
        _target(
            project,
            "deepproj.custom:no_translation",
            translation_table="deepproj.custom:TABLE",
            verify=True,
        )
    )
    assert res.violations == [], res.violations
    assert res.data["onnx"]["op_histogram"].get("Add", 0) >= 2
    assert [c["status"] for c in res.data["verify"]] == ["ok"]


def test_a_wrongly_typed_translation_fails_the_checker_at_the_call(project: Path, analyzer) -> None:
    custom = project / "deepproj" / "custom.py"
    res = analyzer.analyze(
        _target(
            project, "deepproj.custom:no_translation", translation_table="deepproj.custom:BAD_TABLE"
        )
    )
    [v] = res.violations
    assert (v.code, v.line) == ("OLX809", line_of(custom, "return twice(x) + 1"))
    assert "elem type differs" in v.message


@pytest.mark.parametrize(
    ("factory", "needle"),
    [
        ("deepproj.nowhere:make", "cannot import module 'deepproj.nowhere'"),
        ("deepproj.models:missing", "has no callable 'missing'"),
        ("deepproj.models:not_a_tuple", "it must return (model, args)"),
        ("deepproj.models:raises", "raised RuntimeError: weights.pt not found"),
    ],
)
def test_bad_targets_are_one_clear_finding(
    project: Path, analyzer, factory: str, needle: str
) -> None:
    res = analyzer.analyze(_target(project, factory))
    assert res.status == "ok"
    assert [v.code for v in res.violations] == ["OLX812"]
    assert needle in res.violations[0].message
    assert factory in res.violations[0].message


def test_an_edit_is_picked_up_by_the_warm_worker(project: Path, analyzer) -> None:
    mod = project / "deepproj" / "edited.py"
    body = """
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            return {expr}

    def make():
        return M(), (torch.randn(2, 3),)
    """
    mod.write_text(textwrap.dedent(body.format(expr="torch.cdist(x, x)")))
    first = analyzer.analyze(_target(project, "deepproj.edited:make"))
    assert [v.code for v in first.violations] == ["OLX805"]
    mod.write_text(textwrap.dedent(body.format(expr="x * 2")))
    second = analyzer.analyze(_target(project, "deepproj.edited:make"))
    assert second.violations == []
    assert second.data["onnx"]["op_histogram"]["Mul"] == 1


def test_verification_runs_other_sizes_of_each_dynamic_dim(project: Path, analyzer) -> None:
    res = analyzer.analyze(_target(project, "deepproj.models:clean"), verify=True)
    cases = [c["case"] for c in res.data["verify"]]
    assert cases == ["example inputs", "batch=4", "batch=6"]
    assert all(c["status"] == "ok" for c in res.data["verify"])
    assert res.violations == []


def test_verification_reports_onnxruntime_disagreeing_with_eager(project: Path, analyzer) -> None:
    mod = project / "deepproj" / "noisy.py"
    mod.write_text(
        textwrap.dedent(
            """
            import torch

            class M(torch.nn.Module):
                def forward(self, x):
                    return x + torch.rand_like(x)

            def make():
                return M(), (torch.randn(3, 2),), {}, ({0: "batch"},)
            """
        )
    )
    res = analyzer.analyze(_target(project, "deepproj.noisy:make", verify=True))
    assert res.status == "ok"
    mismatches = [v for v in res.violations if v.code == "OLX810"]
    assert mismatches, res.violations
    assert "example inputs" in mismatches[0].message
    assert res.data["verify"][0]["max_abs"] > 1e-3


def test_verification_is_skipped_above_the_parameter_limit(project: Path, analyzer) -> None:
    res = analyzer.analyze(
        _target(project, "deepproj.models:clean", verify=True, verify_max_params=10)
    )
    assert "verification limit" in res.data["skipped"]["verify"]
    assert "verify" not in res.data


def test_numpy_in_forward_fails_the_first_capture_at_its_line(project: Path, analyzer) -> None:
    mod = project / "deepproj" / "usesnumpy.py"
    mod.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import torch

            class M(torch.nn.Module):
                def forward(self, x):
                    y = x * 2
                    return torch.from_numpy(np.exp(y.numpy()))

            def make():
                return M(), (torch.randn(2, 3),)
            """
        )
    )
    res = analyzer.analyze(_target(project, "deepproj.usesnumpy:make"))
    [v] = res.violations
    assert (v.code, v.line) == ("OLX803", line_of(mod, "y.numpy()"))
    assert "not supported for tensor subclasses" in v.message
    # torch.onnx.export's strict fallback captures it (test_agreement compares with torch)
    assert res.outcome == "ok" and v.severity.value == "info"


def test_graph_break_search_goes_on_past_a_data_dependent_size(project: Path, analyzer) -> None:
    mod = project / "deepproj" / "dynshape.py"
    mod.write_text(
        textwrap.dedent(
            """
            import torch

            class M(torch.nn.Module):
                def forward(self, x):
                    idx = torch.nonzero(x > 0)
                    return idx.sum()

            def make():
                return M(), (torch.randn(4, 3),)
            """
        )
    )
    res = analyzer.analyze(_target(project, "deepproj.dynshape:make"))
    # as torch._dynamo.explain on real tensors: a break at the op, and no stop
    assert {(v.code, v.line) for v in res.violations} == {
        ("OLX801", line_of(mod, "torch.nonzero"))
    }, res.violations
    assert "Dynamic shape operator" in res.violations[0].message


def test_weights_loaded_from_disk_are_faked_and_a_missing_file_is_explained(
    project: Path, analyzer
) -> None:
    mod = project / "deepproj" / "loads.py"
    mod.write_text(
        textwrap.dedent(
            """
            import os
            import torch

            def make():
                model = torch.nn.Linear(4, 4)
                model.load_state_dict(torch.load(os.environ["WEIGHTS"]))
                return model.eval(), (torch.randn(2, 4),)
            """
        )
    )
    import torch

    weights = project / "w.pt"
    torch.save(torch.nn.Linear(4, 4).state_dict(), weights)
    (project / "deepproj" / "env.py").write_text(
        f"import os\nos.environ['WEIGHTS'] = {str(weights)!r}\n"
    )
    mod.write_text("import deepproj.env  # noqa: F401\n" + mod.read_text())
    res = analyzer.analyze(_target(project, "deepproj.loads:make"))
    assert res.violations == [] and res.data["onnx"]["checker"] == "ok"
    weights.unlink()
    res = analyzer.analyze(_target(project, "deepproj.loads:make"))
    [v] = res.violations
    assert (v.code, v.line) == ("OLX812", line_of(mod, "torch.load"))
    assert "FileNotFoundError" in v.message
    assert any("ONNXLINT_DEEP" in n for n in v.notes)
