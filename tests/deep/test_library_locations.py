"""Issue 13: every deep finding at the line that causes it, inside libraries too.

A tiny model library (tests/deep/fixtures/olxfakelib) is installed into a
`site-packages` folder on the worker's path, so its frames are library frames
exactly as transformers' or MONAI's are. The project's factories build its models.
"""

from __future__ import annotations

import os
import shutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]

FIXTURES = Path(__file__).parent / "fixtures"

PROJECT_MODELS = """
import torch
from olxfakelib.models import Encoder, Scan, VitLike


def lib_encoder():
    return Encoder(), (torch.randn(3, 4),)


def lib_scan():
    return Scan(), (torch.randn(2, 5, 4),), {}, ({1: "seq"},)


def vit_like():
    return VitLike().eval(), (torch.randn(2, 3, 4),)


class Clean(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 8)

    def forward(self, x):
        return self.proj(x)


def batch_one():
    model = Clean().eval()
    example = torch.randn(1, 4)
    return model, (example,), {}, ({0: "batch"},)


class Guarded(torch.nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x * 2
        k = int(x.sum())
        return x.view(k, 5)


def guarded():
    return Guarded(), (torch.randn(3, 4),)


class Pinned(torch.nn.Module):
    def forward(self, x):
        return x.reshape(6, 4)


def pinned():
    return Pinned(), (torch.randn(2, 3, 4),), {}, ({0: "batch"},)


class Staged(torch.nn.Module):
    def __init__(self):
        super().__init__()
        rates = [r.tolist() for r in torch.linspace(0, 0.1, 4).split([2, 2])]
        self.drops = torch.nn.ModuleList(torch.nn.Dropout(r[0]) for r in rates)
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        for drop in self.drops:
            x = drop(x)
        return self.proj(x)


def staged():
    return Staged().eval(), (torch.randn(2, 4),)


class NeedsData(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4))
        if self.w.abs().max() > 10:
            raise ValueError("bad init")

    def forward(self, x):
        return x * self.w


def needs_data():
    return NeedsData(), (torch.randn(2, 4),)


class ScatterMean(torch.nn.Module):
    def forward(self, x, index):
        y = x * 2
        base = torch.zeros(4, x.shape[1])
        z = base.scatter_reduce(0, index, y, reduce="mean", include_self=False)
        return z.relu() + 1


def scatter_mean():
    index = torch.tensor([[0, 0, 0], [1, 1, 1], [0, 0, 0], [2, 2, 2], [3, 3, 3], [1, 1, 1]])
    return ScatterMean(), (torch.randn(6, 3), index)
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site-packages folder holding the fake library (as `pip install` would lay it out)."""
    site = tmp_path_factory.mktemp("venv") / "lib" / "site-packages"
    shutil.copytree(FIXTURES / "olxfakelib", site / "olxfakelib")
    return site


@pytest.fixture(scope="module")
def libproject(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("libproj")
    pkg = root / "libproj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(textwrap.dedent(PROJECT_MODELS).lstrip())
    (root / "pyproject.toml").write_text('[project]\nname = "libproj"\n')
    return root


@pytest.fixture(scope="module")
def lib_analyzer(site: Path) -> Iterator[object]:
    pytest.importorskip("torch")
    from onnxlint.deep.analyzer import DeepAnalyzer

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    a = DeepAnalyzer(env=env)
    a.start()
    yield a
    a.shutdown()


def _target(root: Path, factory: str, **kw: object) -> Target:
    return Target(name=factory, factory=factory, root=root, **kw)  # type: ignore[arg-type]


def _lib(site: Path, name: str) -> Path:
    return (site / "olxfakelib" / name).resolve()


def test_unsupported_op_in_a_library_lands_on_the_library_line_with_the_chain(
    site: Path, libproject: Path, lib_analyzer
) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:lib_encoder"))
    ops = _lib(site, "ops.py")
    v = next(v for v in res.violations if v.code == "OLX805")
    assert (v.path, v.line) == (str(ops), line_of(ops, "torch.cdist"))
    # the chain: the project's factory, the library's forward, the helper
    models = _lib(site, "models.py")
    factory_file = (libproject / "libproj" / "models.py").resolve()
    assert [(r.path, r.line) for r in v.related[:2]] == [
        (str(factory_file), line_of(factory_file, "def lib_encoder")),
        (str(models), line_of(models, "ops.pairwise(y)")),
    ]
    assert v.related[-1].path.endswith("pyproject.toml")  # the target's declaration
    via = next(n for n in v.notes if n.startswith("via: "))
    assert via == (
        f"via: models.py:{line_of(factory_file, 'def lib_encoder')} (factory lib_encoder) -> "
        f"models.py:{line_of(models, 'ops.pairwise(y)')} -> ops.py:{line_of(ops, 'torch.cdist')}"
    )
    assert v.to_json()["related"][0]["path"] == str(factory_file)
    assert not any(x.path.endswith("pyproject.toml") for x in res.violations)
    assert res.outcome == "fails at step 3/3 (ONNX translation)"


def test_dim_pinned_by_a_range_loop_in_a_library_is_at_the_loop(
    site: Path, libproject: Path, lib_analyzer
) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:lib_scan"))
    models = _lib(site, "models.py")
    spec = [v for v in res.violations if v.code == "OLX804"]
    assert len(spec) == 1, res.violations
    assert (spec[0].path, spec[0].line) == (str(models), line_of(models, "for index in range"))
    assert "'seq'" in spec[0].message and "forces it to 5" in spec[0].message
    # torch.onnx.export's own retry with torch's suggested fix fails too (as it really does)
    assert res.outcome == "fails at step 1/3 (torch.export)"
    assert any("fails at step 1/3" in n for n in spec[0].notes)


def test_trunc_normal_init_builds_and_its_graph_break_is_info(
    site: Path, libproject: Path, lib_analyzer
) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:vit_like"))
    assert not [v for v in res.violations if v.code in ("OLX812", "OLX816")], res.violations
    models = _lib(site, "models.py")
    breaks = [v for v in res.violations if v.code == "OLX801"]
    assert [(v.path, v.line) for v in breaks] == [(str(models), line_of(models, "print("))]
    assert breaks[0].severity.value == "info"
    assert any("non-strict torch.export" in n for n in breaks[0].notes)
    assert res.data["onnx"]["checker"] == "ok"  # the model was analysed to the end
    assert res.outcome == "ok"  # every phase succeeded; the break does not stop the export
    strict = lib_analyzer.analyze(_target(libproject, "libproj.models:vit_like", strict=True))
    assert [v.severity.value for v in strict.violations if v.code == "OLX801"] == ["warning"]


def test_graph_breaks_match_dynamo_explain_with_real_tensors(
    site: Path, project: Path, analyzer
) -> None:
    import importlib

    import torch

    sys.path.insert(0, str(project))
    try:
        models = importlib.import_module("deepproj.models")
        model, args = models.breaks()
        torch._dynamo.reset()
        truth = torch._dynamo.explain(model)(*args)
    finally:
        sys.path.remove(str(project))
        torch._dynamo.reset()
    expected: dict[int, int] = {}
    for r in truth.break_reasons:
        line = r.user_stack[-1].lineno
        expected[line] = expected.get(line, 0) + 1
    res = analyzer.analyze(_target(project, "deepproj.models:breaks"))
    got: dict[int, int] = {}
    for v in res.violations:
        if v.code == "OLX801":
            n = int(v.message.rsplit("(", 1)[1].split()[0]) if "breaks here)" in v.message else 1
            got[v.line] = got.get(v.line, 0) + n
    assert got == expected
    assert res.data["explain"]["breaks"] == truth.graph_break_count


def test_a_batch_one_example_stays_dynamic_through_torch_onnx(
    libproject: Path, lib_analyzer
) -> None:
    # torch.onnx.export (torch 2.13) captures with backed_size_oblivious: an example of size
    # 1 no longer pins a dynamic dim (the real export keeps "batch" and runs at batch 5).
    # Plain torch.export still pins it: tests/deep/test_scripts.py, the torch.export script.
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:batch_one"))
    assert res.outcome == "ok", res.violations
    assert not [v for v in res.violations if v.code == "OLX804"], res.violations


def test_no_findings_from_tracing_on_past_a_data_dependent_guard(
    libproject: Path, lib_analyzer
) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:guarded"))
    models = libproject / "libproj" / "models.py"
    got = {(v.code, v.line) for v in res.violations}
    assert ("OLX802", line_of(models, "if x.sum() > 0")) in got
    assert ("OLX802", line_of(models, "k = int(x.sum())")) in got
    # view(k, 5) fails for every placeholder k: an artefact of the assumption, not reported
    assert not [v for v in res.violations if v.code == "OLX803"], res.violations
    assert "continuation" in res.data["skipped"]


def test_constraints_violated_failure_has_the_pinning_line(libproject: Path, lib_analyzer) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:pinned"))
    models = libproject / "libproj" / "models.py"
    spec = [v for v in res.violations if v.code in ("OLX803", "OLX804")]
    assert spec, res.violations
    assert {v.line for v in spec} == {line_of(models, "x.reshape(6, 4)")}
    assert all(v.path == str(models.resolve()) for v in spec)


def test_verify_mismatch_is_at_the_first_differing_op(libproject: Path, lib_analyzer) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:scatter_mean", verify=True))
    models = libproject / "libproj" / "models.py"
    bad = [v for v in res.violations if v.code == "OLX810"]
    assert bad, res.violations
    assert {v.line for v in bad} == {line_of(models, "z = base.scatter_reduce")}
    assert "aten.scatter_reduce" in bad[0].message and "ScatterElements" in bad[0].message
    assert "max abs diff" in bad[0].message


def test_a_data_check_in_init_is_a_fake_tensor_limitation_not_a_raising_factory(
    libproject: Path, lib_analyzer
) -> None:
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:needs_data"))
    models = libproject / "libproj" / "models.py"
    assert [v.code for v in res.violations] == ["OLX816"], res.violations
    assert res.outcome == "cannot be analysed: fake tensors cannot build the model"
    v = res.violations[0]
    assert v.line == line_of(models, "if self.w.abs().max() > 10")
    assert "raised" not in v.message and "limitation of the analysis" in " ".join(v.notes)
    # the chain leads from the factory to the line
    assert [r.line for r in v.related[:1]] == [line_of(models, "return NeedsData()")]


def test_values_read_from_tensors_in_init_do_not_stop_the_build(
    libproject: Path, lib_analyzer
) -> None:
    """ConvNeXt-style drop-path rates (`torch.linspace(...).tolist()`) have no value on fake
    tensors; the model is built with placeholders for them and analysed to the end."""
    res = lib_analyzer.analyze(_target(libproject, "libproj.models:staged"))
    models = libproject / "libproj" / "models.py"
    assert res.violations == []
    assert res.outcome == "ok"
    line = line_of(models, "rates = [r.tolist()")
    assert [(a["line"], a["count"]) for a in res.data["assumed_in_build"]] == [(line, 4)]
