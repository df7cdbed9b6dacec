"""Output dims baked by a size branch (OLX818), data-dependent numbers used as sizes (OLX802),
and verification findings placed on the user's own export call (OLX810)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from onnxlint.deep.callsite import export_call_for_class
from onnxlint.deep.targets import Target

from .conftest import line_of

pytestmark = [pytest.mark.deep, pytest.mark.xdist_group("deep")]

SHAPES = """
import torch


class Baked(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x[:2]
        return x


def baked():
    return Baked(), (torch.randn(3, 3),), {}, ({0: "batch"},)


class Follows(torch.nn.Module):
    def forward(self, x):
        return x[: min(2, x.shape[0])], x.sum(1)


def follows():
    return Follows(), (torch.randn(3, 3),), {}, ({0: "batch"},)


class Formula(torch.nn.Module):
    def forward(self, x, y):
        z = torch.cat([x, y])
        if x.shape[0] >= 4:
            return z[1:]
        return z


def formula():
    return Formula(), (torch.randn(5, 3), torch.randn(5, 3)), {}, ({0: "batch"}, {0: "batch"})


class Bounded(torch.nn.Module):
    def forward(self, x):
        if x.shape[0] > 2:
            return x[:2]
        return x


def bounded():
    batch = torch.export.Dim("batch", min=3, max=64)
    return Bounded(), (torch.randn(3, 3),), {}, ({0: batch},)


class IntAsSize(torch.nn.Module):
    def forward(self, x, n):
        k = int(n)
        idx = torch.arange(k).view(-1, 2)
        if x.sum() > 0:
            x = x * 2
        return torch.cdist(x, x) + idx.sum()


def int_as_size():
    return IntAsSize(), (torch.randn(5, 3), torch.tensor(4))


class IntAsSizeRandom(torch.nn.Module):
    def forward(self, x, n):
        k = int(n.sum())
        y = x.new_zeros(k).view(-1, 8)
        if y.sum() > 0:
            y = y * 2
        return torch.cdist(y, y)


def int_as_size_random():
    return IntAsSizeRandom(), (torch.randn(5, 3), torch.randint(0, 3, (4,)))
"""


def _target(project: Path, factory: str, **kw: object) -> Target:
    return Target(name=factory, factory=factory, root=project, **kw)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def shapes(project: Path) -> Path:
    mod = project / "deepproj" / "shapes.py"
    mod.write_text(textwrap.dedent(SHAPES).lstrip())
    return mod


def test_output_dim_baked_by_a_size_branch_is_reported_at_the_branch(
    project: Path, analyzer, shapes: Path
) -> None:
    res = analyzer.analyze(_target(project, "deepproj.shapes:baked"))
    assert res.status == "ok", res.detail
    [v] = res.violations
    assert (v.code, v.path, v.line) == ("OLX818", str(shapes), line_of(shapes, "> 2:"))
    assert "output 0 dim 0 is exported as the constant 2" in v.message
    assert "'batch'" in v.message and "gives 1 at batch=1" in v.message
    assert any("`batch > 2`" in n for n in v.notes)
    # the input stayed dynamic: this is not OLX804, and the ONNX signature shows why it matters
    assert res.data["onnx"]["inputs"][0]["shape"] == ["batch", 3]
    assert res.data["onnx"]["outputs"][0]["shape"] == [2, 3]


def test_outputs_that_follow_the_dim_are_not_reported(
    project: Path, analyzer, shapes: Path
) -> None:
    res = analyzer.analyze(_target(project, "deepproj.shapes:follows"))
    assert res.status == "ok", res.detail
    assert res.violations == []


def test_a_formula_valid_for_one_branch_only_is_reported(
    project: Path, analyzer, shapes: Path
) -> None:
    res = analyzer.analyze(_target(project, "deepproj.shapes:formula"))
    [v] = res.violations
    assert (v.code, v.line) == ("OLX818", line_of(shapes, "if x.shape[0] >= 4"))
    assert "exported as 2*batch - 1" in v.message


def test_sizes_outside_the_requested_range_are_not_probed(
    project: Path, analyzer, shapes: Path
) -> None:
    res = analyzer.analyze(_target(project, "deepproj.shapes:bounded"))
    assert res.status == "ok", res.detail
    assert res.violations == []


def test_int_of_a_tensor_used_as_a_size_does_not_stop_the_analysis(
    project: Path, analyzer, shapes: Path
) -> None:
    res = analyzer.analyze(_target(project, "deepproj.shapes:int_as_size"))
    got = {(v.code, v.line) for v in res.violations}
    assert ("OLX802", line_of(shapes, "k = int(n)")) in got
    assert ("OLX802", line_of(shapes, "if x.sum() > 0")) in got
    assert ("OLX805", line_of(shapes, "torch.cdist(x, x)")) in got
    assert not [v for v in res.violations if v.code in ("OLX803", "OLX816")], res.violations


def test_a_placeholder_that_breaks_a_later_view_is_retried(
    project: Path, analyzer, shapes: Path
) -> None:
    # int(n.sum()) of random data has no example value: with the first placeholder (2),
    # `view(-1, 8)` fails; that error follows from the placeholder, so 8 is tried, and every
    # site after it is reported with nothing blamed on the placeholder.
    res = analyzer.analyze(_target(project, "deepproj.shapes:int_as_size_random"))
    got = {(v.code, v.line) for v in res.violations}
    assert ("OLX802", line_of(shapes, "k = int(n.sum())")) in got
    assert ("OLX802", line_of(shapes, "if y.sum() > 0")) in got
    assert ("OLX805", line_of(shapes, "torch.cdist(y, y)")) in got
    placeholder = [v for v in res.violations if "depends on the data" in v.message]
    assert all(any("placeholder" in n for n in v.notes) for v in placeholder)


NOISY = """
import torch


class Noisy(torch.nn.Module):
    def forward(self, x):
        return x + torch.rand_like(x)


def make():
    return Noisy(), (torch.randn(3, 2),), {}, ({0: "batch"},)
"""

EXPORT_SCRIPT = """
import torch

from deepproj.noisy2 import Noisy

model = Noisy().eval()
x = torch.randn(3, 2)
torch.onnx.export(model, (x,), "noisy.onnx", dynamo=True)
"""


def test_verification_findings_land_on_the_first_differing_op(project: Path, analyzer) -> None:
    # the first op whose output differs is the random one: the finding is at its line (the
    # export call is used only when no op can be named)
    noisy = project / "deepproj" / "noisy2.py"
    noisy.write_text(textwrap.dedent(NOISY).lstrip())
    script = project / "scripts" / "export_noisy.py"
    script.parent.mkdir(exist_ok=True)
    script.write_text(textwrap.dedent(EXPORT_SCRIPT).lstrip())
    res = analyzer.analyze(_target(project, "deepproj.noisy2:make", verify=True))
    mismatches = [v for v in res.violations if v.code == "OLX810"]
    assert mismatches, res.violations
    assert {(v.path, v.line) for v in mismatches} == {
        (str(noisy.resolve()), line_of(noisy, "torch.rand_like(x)"))
    }
    assert "the first op whose output differs is aten." in mismatches[0].message


def test_export_call_lookup_is_static_and_falls_back_to_none(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "models.py").write_text(
        "import torch\n\nclass Net(torch.nn.Module):\n    pass\n\n"
        "def local():\n    torch.onnx.export(Net(), (torch.randn(1),), 'n.onnx')\n"
    )
    (pkg / "other.py").write_text(
        "import torch\nfrom .models import Net as N\n\nclass Other(torch.nn.Module):\n"
        "    pass\n\nm = Other()\ntorch.onnx.export(m, (), 'o.onnx')\n"
    )
    assert export_call_for_class(tmp_path, "pkg.models.Net", str(pkg / "models.py")) == (
        str(pkg / "models.py"),
        7,
    )
    assert export_call_for_class(tmp_path, "pkg.other.Other", None) == (str(pkg / "other.py"), 8)
    assert export_call_for_class(tmp_path, "pkg.models.Missing", None) is None
