"""The project model one level deeper (issue 30): a model's mode, its builders, its sizes
and its configuration followed through the project's own functions and files.

Each test builds a small multi-file project (a `pyproject.toml` makes it one) and runs the
real `onnxlint check --format json` on it; each problem has a negative beside it (the
helper puts the model back in eval mode, the fused model is put in eval, the size helper
returns tensors). What torch 2.13 does in each case is said where it is not obvious.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.engine.test_project_model import check, project

NET = """
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.bn = nn.BatchNorm2d(8)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.drop(self.bn(self.conv(x)))


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)

    def forward(self, x):
        return self.conv(x)
"""


def found_in(found: list[dict[str, Any]], path: str, code: str) -> list[dict[str, Any]]:
    return [f for f in found if f["path"] == path and f["code"] == code]


def related(finding: dict[str, Any], root: Path) -> list[tuple[str, int, str]]:
    """(path relative to the project, line, message) of each related location."""
    out = []
    for r in finding.get("related", []):
        path = Path(r["path"])
        rel = (
            path.resolve().relative_to(root.resolve()).as_posix()
            if path.is_absolute()
            else r["path"]
        )
        out.append((rel, r["line"], r["message"]))
    return out


# --------------------------------------------------------------------------- mode through calls

LOOP = """
import torch


def validate(net, loader):
    net.eval()
    total = 0.0
    with torch.no_grad():
        for x, y in loader:
            total += (net(x).argmax(1) == y).float().sum().item()
    net.train()
    return total


def validate_and_restore(net, loader):
    net.eval()
    total = validate_batches(net, loader)
    net.train()
    net.eval()
    return total


def evaluate(net, loader):
    was_training = net.training
    net.eval()
    total = sum(float(net(x).sum()) for x, _ in loader)
    if was_training:
        net.train()
    return total


def validate_batches(net, loader):
    return 0.0
"""

EXPORT_AFTER_VALIDATE = """
import torch

from engine.loop import evaluate, validate, validate_and_restore
from models.net import Net


def main(loader):
    net = Net()
    net.load_state_dict(torch.load("w.pt"))
    net.eval()
    acc = validate(net, loader)
    print(acc)
    torch.onnx.export(net, (torch.randn(1, 3, 32, 32),), "net.onnx")


def restored(loader):
    net = Net()
    net.eval()
    validate_and_restore(net, loader)
    torch.onnx.export(net, (torch.randn(1, 3, 32, 32),), "net.onnx")


def kept(loader):
    net = Net()
    net.eval()
    evaluate(net, loader)
    torch.onnx.export(net, (torch.randn(1, 3, 32, 32),), "net.onnx")
"""


def test_a_helper_of_another_module_that_calls_train_before_the_export(tmp_path) -> None:
    """`validate()` in engine/loop.py ends with `net.train()`: the export after it exports
    training-mode BatchNorm (measured with torch 2.13: the ONNX model's outputs differ from
    eval mode by 1.7 on a Conv+BN+Dropout model). A helper that puts the model back in
    eval mode, or restores training mode only when the model was training, is fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET,
            "engine/__init__.py": "",
            "engine/loop.py": LOOP,
            "tools/export.py": EXPORT_AFTER_VALIDATE,
        },
    )
    found = check(root)
    [finding] = found_in(found, "tools/export.py", "OLX202")
    assert finding["line"] == 13
    assert (
        "`net` is in training mode at this export: `validate()` in engine/loop.py:10 "
        "calls `net.train()`" in finding["message"]
    ), finding["message"]
    assert related(finding, root) == [
        ("tools/export.py", 11, "calls `validate()`"),
        ("engine/loop.py", 10, "`validate()` calls `net.train()`"),
    ]
    assert not [f for f in found if f["code"] in ("OLX201", "OLX202") and f["line"] != 13]


def test_a_helper_that_returns_a_new_module_after_eval(tmp_path) -> None:
    """`model.eval()` then `deploy = switch_to_deploy(model)`: the re-parameterised model
    is a new module, in training mode (its Dropout is exported). Put in eval mode by the
    helper or by the caller, or a helper that fuses the same module in place: fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET
            + """

class DeployNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.drop(self.conv(x))
""",
            "deploy/__init__.py": "",
            "deploy/reparam.py": """
                from models.net import DeployNet


                def switch_to_deploy(model):
                    deployed = DeployNet()
                    deployed.conv.weight.data.copy_(model.conv.weight.data)
                    return deployed


                def switch_and_eval(model):
                    deployed = DeployNet()
                    deployed.conv.weight.data.copy_(model.conv.weight.data)
                    return deployed.eval()


                def merge_bn(net):
                    net.conv.weight.data.mul_(2)
                    del net.bn
                    return net
            """,
            "tools/export.py": """
                import torch

                from deploy.reparam import merge_bn, switch_and_eval, switch_to_deploy
                from models.net import Net

                x = torch.randn(1, 3, 32, 32)
                model = Net()
                model.eval()
                deploy = switch_to_deploy(model)
                torch.onnx.export(deploy, (x,), "a.onnx")
                deploy2 = switch_and_eval(model)
                torch.onnx.export(deploy2, (x,), "b.onnx")
                deploy3 = switch_to_deploy(model)
                deploy3.eval()
                torch.onnx.export(deploy3, (x,), "c.onnx")
                fused = merge_bn(model)
                torch.onnx.export(fused, (x,), "d.onnx")
            """,
        },
    )
    found = check(root)
    [finding] = found_in(found, "tools/export.py", "OLX201")
    assert finding["line"] == 10
    assert (
        "`deploy` is in training mode at this export: `switch_to_deploy()` in "
        "deploy/reparam.py:7 returns a new `DeployNet` that nothing puts in eval mode"
        in finding["message"]
    ), finding["message"]
    assert related(finding, root) == [
        (
            "deploy/reparam.py",
            7,
            "`switch_to_deploy()` returns a new `DeployNet` that nothing puts in eval mode",
        )
    ]


def test_a_builder_of_another_file_exported_through_the_projects_wrapper(tmp_path) -> None:
    """Neither the build nor the export call is in tools/export.py: `build_detector()`
    (models/builder.py) returns a new `Net`, and `to_onnx()` (utils/onnx_tools.py) exports
    its parameter as it is. Put in eval mode first, or a wrapper that calls `.eval()`
    itself, or a model without mode-dependent layers: fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET,
            "models/builder.py": """
                from models.net import Net, Plain


                def build_detector(cfg):
                    model = Net()
                    return model


                def build_plain(cfg):
                    return Plain()
            """,
            "utils/__init__.py": "",
            "utils/onnx_tools.py": """
                import torch


                def to_onnx(model, path, size=32):
                    x = torch.randn(1, 3, size, size)
                    torch.onnx.export(model, (x,), path)


                def to_onnx_eval(model, path):
                    model.eval()
                    torch.onnx.export(model, (torch.randn(1, 3, 32, 32),), path)
            """,
            "tools/export.py": """
                import torch

                from models.builder import build_detector, build_plain
                from utils import onnx_tools
                from utils.onnx_tools import to_onnx, to_onnx_eval

                net = build_detector({})
                net.load_state_dict(torch.load("w.pt"))
                to_onnx(net, "det.onnx")
                onnx_tools.to_onnx(build_detector({}).eval(), "det2.onnx")
                to_onnx_eval(build_detector({}), "det3.onnx")
                to_onnx(build_plain({}), "plain.onnx")
            """,
        },
    )
    found = check(root)
    [finding] = found_in(found, "tools/export.py", "OLX201")
    assert finding["line"] == 9
    assert (
        "`net` is in training mode at this export: `build_detector()` in models/builder.py:6 "
        "returns a new `Net` that nothing puts in eval mode and `to_onnx()` in "
        "utils/onnx_tools.py:6 exports it with `torch.onnx.export`" in finding["message"]
    ), finding["message"]
    assert [r[:2] for r in related(finding, root)] == [
        ("models/builder.py", 6),
        ("utils/onnx_tools.py", 6),
    ]
    assert finding["fix"] is not None  # `net.eval()` before the call
    assert not found_in(found, "utils/onnx_tools.py", "OLX201")


def test_tracing_a_builders_model_with_batchnorm(tmp_path) -> None:
    """`torch.jit.trace(build_model(cfg), x)`: the trace records training-mode BatchNorm
    (measured with torch 2.13: the traced module, put in eval mode afterwards, still
    differs from the eval model by 5.3). A model without mode-dependent layers, or one
    put in eval mode, is fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET,
            "models/builder.py": """
                from models import net as nets


                def build_model(cfg):
                    return nets.Net()


                def build_plain(cfg):
                    return nets.Plain()
            """,
            "tools/trace.py": """
                import torch

                from models.builder import build_model, build_plain

                x = torch.randn(1, 3, 32, 32)
                net = build_model({})
                traced = torch.jit.trace(net, (x,))
                plain = torch.jit.trace(build_plain({}), (x,))
                ok = torch.jit.trace(build_model({}).eval(), (x,))
            """,
        },
    )
    found = check(root)
    [finding] = found_in(found, "tools/trace.py", "OLX201")
    assert finding["line"] == 7
    assert "`build_model()` in models/builder.py:5 returns a new `Net`" in finding["message"]
    assert "tracing records Dropout and training-mode BatchNorm" in finding["message"]


# --------------------------------------------------------------------------- builders' classes


def test_dynamic_shapes_keys_of_a_model_a_builder_of_another_file_returns(tmp_path) -> None:
    """`net = build_model(cfg)` with the builder in models/builder.py returning a `Net`
    (models/net.py): `dynamic_shapes` keys are `Net.forward`'s parameter names (torch
    2.13: `UserError: When dynamic_shapes is specified as a dict, its top-level keys must
    be the arg names ['x'] of inputs, but here they are ['images']`). The right key, and a
    builder whose class cannot be told, are fine; `dynamic_axes` on the dynamo exporter is
    rewritten with the builder's class's parameter names."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET,
            "models/builder.py": """
                from models.net import Net, Plain

                REGISTRY = {"net": Net, "plain": Plain}


                def build_model(cfg):
                    return Net()


                def build_any(cfg):
                    return REGISTRY[cfg["name"]]()
            """,
            "tools/export.py": """
                import torch

                from models.builder import build_any, build_model

                batch = torch.export.Dim("batch")
                x = torch.randn(2, 3, 32, 32)
                net = build_model({}).eval()
                torch.onnx.export(net, (x,), "a.onnx", dynamic_shapes={"images": {0: batch}})
                torch.onnx.export(net, (x,), "b.onnx", dynamic_shapes={"x": {0: batch}})
                other = build_any({"name": "net"}).eval()
                torch.onnx.export(other, (x,), "c.onnx", dynamic_shapes={"images": {0: batch}})
                torch.onnx.export(net, (x,), "d.onnx", input_names=["images"], dynamic_axes={"images": {0: "b"}})
            """,
        },
    )
    found = check(root, "--unsafe-fixes")
    [finding] = found_in(found, "tools/export.py", "OLX305")
    assert finding["line"] == 8
    assert (
        "`dynamic_shapes` key 'images' is not a `forward` parameter of `Net` (in "
        "../models/net.py): `build_model()` in models/builder.py:7 returns a `Net`; "
        "expected names from ['x']" in finding["message"]
    ), finding["message"]
    assert [r[:2] for r in related(finding, root)] == [("models/builder.py", 7)]
    [axes] = found_in(found, "tools/export.py", "OLX304")
    edits = [e["content"] for e in axes["fix"]["edits"]]
    assert any('"x":' in e for e in edits), edits


# --------------------------------------------------------------------------- configuration values


def test_opset_from_a_config_object_of_another_module(tmp_path) -> None:
    """`opset_version=args.opset` with `args = ExportSettings()` and `opset: int = 11` in
    config.py, a module-level config object imported from it, a class attribute, a dict,
    an argparse default: each is read where it is set (torch 2.13's dynamo exporter exports
    at opset 18 and converts down, keeping 18 silently when that fails). A value the
    constructor overrides, one a caller passes, and one `__init__` computes are not
    guessed."""
    root = project(
        tmp_path,
        {
            "config.py": """
                from dataclasses import dataclass, field
                from types import SimpleNamespace


                @dataclass
                class ExportSettings:
                    opset: int = 11
                    dynamic: bool = True
                    later: int = field(default=13)


                class Paths:
                    OPSET = 12

                    def __init__(self, opset=18):
                        self.opset = opset


                settings = ExportSettings()
                cfg = SimpleNamespace(export=SimpleNamespace(opset=14), name="det")
                CFG = {"opset": 15}
            """,
            "tools/export.py": """
                import argparse

                import torch

                from config import CFG, ExportSettings, Paths, cfg, settings

                parser = argparse.ArgumentParser()
                parser.add_argument("--opset-version", type=int, default=16)


                def main(model, x):
                    args = ExportSettings()
                    torch.onnx.export(model, (x,), "a.onnx", opset_version=args.opset)
                    torch.onnx.export(model, (x,), "b.onnx", opset_version=settings.later)
                    torch.onnx.export(model, (x,), "c.onnx", opset_version=Paths.OPSET)
                    torch.onnx.export(model, (x,), "d.onnx", opset_version=cfg.export.opset)
                    torch.onnx.export(model, (x,), "e.onnx", opset_version=CFG["opset"])
                    opts = parser.parse_args()
                    torch.onnx.export(model, (x,), "f.onnx", opset_version=opts.opset_version)


                def fine(model, x, given):
                    new = ExportSettings(opset=18)
                    torch.onnx.export(model, (x,), "g.onnx", opset_version=new.opset)
                    torch.onnx.export(model, (x,), "h.onnx", opset_version=given.opset)
                    torch.onnx.export(model, (x,), "i.onnx", opset_version=Paths().opset)
            """,
        },
    )
    found = found_in(check(root), "tools/export.py", "OLX501")
    got = {f["line"]: f["message"].split(" is below")[0] for f in found}
    assert got == {
        13: "`opset_version=args.opset` (11: `ExportSettings.opset` in config.py:7 "
        "defaults to `11`)",
        14: "`opset_version=settings.later` (13: `ExportSettings.later` in config.py:9 "
        "defaults to `13`)",
        15: "`opset_version=Paths.OPSET` (12: `Paths.OPSET` in config.py:13 defaults to `12`)",
        16: "`opset_version=cfg.export.opset` (14: `opset` in config.py:20 is set to `14`)",
        17: "`opset_version=CFG[\"opset\"]` (15: `'opset'` in config.py:21 is set to `15`)",
        19: "`opset_version=opts.opset_version` (16: the `--opset-version` option at line 8 "
        "defaults to `16`)",
    }, got
    first = next(f for f in found if f["line"] == 13)
    assert [r[:2] for r in related(first, root)] == [("config.py", 7)]


# --------------------------------------------------------------------------- sizes in helpers


def test_a_helper_of_another_module_turns_dynamic_feature_sizes_into_ints(tmp_path) -> None:
    """`shapes_of([c3, c4])` in models/utils.py returns `int`s of the feature maps' sizes,
    which `FPN.forward` feeds to `F.interpolate`; the export declares those dims dynamic.
    Measured with torch 2.13: torch.onnx.export exports them static, without a warning,
    and ONNX Runtime rejects any other size. A helper that keeps the sizes symbolic
    (`f.shape[-2:]`), or turns a static dim (channels) into an int, is fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/utils.py": """
                def shapes_of(feats):
                    return [(int(f.shape[2]), int(f.shape[3])) for f in feats]


                def sizes_of(feats):
                    return [f.shape[-2:] for f in feats]


                def channels_of(feats):
                    return [int(f.shape[1]) for f in feats]
            """,
            "models/fpn.py": """
                import torch
                import torch.nn.functional as F
                from torch import nn

                from .utils import channels_of, shapes_of, sizes_of


                class FPN(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.lat = nn.Conv2d(8, 8, 1)

                    def forward(self, c3, c4):
                        sizes = shapes_of([c3, c4])
                        up = F.interpolate(self.lat(c4), size=sizes[0])
                        kept = F.interpolate(c4, size=sizes_of([c3])[0])
                        n = channels_of([c3, c4])
                        return c3 + up + kept, n
            """,
            "tools/export.py": """
                import torch

                from models.fpn import FPN

                h, w = torch.export.Dim("h"), torch.export.Dim("w")
                x3, x4 = torch.randn(1, 8, 16, 16), torch.randn(1, 8, 8, 8)
                torch.onnx.export(
                    FPN().eval(), (x3, x4), "f.onnx",
                    dynamic_shapes={"c3": {2: 2 * h, 3: 2 * w}, "c4": {2: h, 3: w}},
                )
            """,
        },
    )
    found = check(root)
    utils = [f for f in found if f["path"] == "models/utils.py"]
    assert [(f["line"], f["column"], f["code"]) for f in utils] == [
        (2, 14, "OLX104"),
        (2, 31, "OLX104"),
    ], utils
    assert (
        "`f.shape[2]` reads dim 2 ('2 * h') of input `c3`, which tools/export.py:7 declares "
        "dynamic; `FPN.forward()` in models/fpn.py:14 passes it to `shapes_of()`; "
        "torch.onnx.export then exports that dim static, without a warning" in utils[0]["message"]
    ), utils[0]["message"]
    assert [r[:2] for r in related(utils[0], root)] == [("models/fpn.py", 14)]


def test_int_of_a_count_that_follows_a_dynamic_dim_in_post_processing(tmp_path) -> None:
    """`num = int(boxes.shape[0])` in a post-processing helper of another module, with the
    boxes' count declared dynamic: exported static. The count kept symbolic is fine."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/post.py": """
                import torch


                def postprocess(boxes, scores):
                    num = int(boxes.shape[0])
                    keep = torch.zeros(num, dtype=torch.bool)
                    return boxes, scores, keep


                def postprocess_symbolic(boxes, scores):
                    num = boxes.shape[0]
                    return boxes, scores, torch.zeros(num, dtype=torch.bool)
            """,
            "models/det.py": """
                from torch import nn

                from . import post


                class Det(nn.Module):
                    def forward(self, boxes, scores):
                        out = post.postprocess(boxes, scores)
                        return out, post.postprocess_symbolic(boxes, scores)
            """,
            "tools/export.py": """
                import torch

                from models.det import Det

                n = torch.export.Dim("n")
                torch.onnx.export(
                    Det().eval(), (torch.randn(5, 4), torch.randn(5)), "d.onnx",
                    dynamic_shapes={"boxes": {0: n}, "scores": {0: n}},
                )
            """,
        },
    )
    found = [f for f in check(root) if f["path"] == "models/post.py"]
    assert [(f["line"], f["code"]) for f in found] == [(5, "OLX104")]
    assert "reads dim 0 ('n') of input `boxes`" in found[0]["message"]


def test_a_literal_batch_in_a_head_derived_from_the_projects_base_class(tmp_path) -> None:
    """`Head(BaseModule)`, the base in another package of the project, a submodule of the
    exported `Detector`: `y.view(1, 3, 85, ny, nx)` after a convolution fixes the batch
    (torch 2.13: torch.export raises "Constraints violated (batch)! ... specialized it to
    be a constant (1)"; torch.onnx.export exports a batch of 1 without a warning). The
    batch read from the shape, or a view with -1, is fine."""
    root = project(
        tmp_path,
        {
            "core/__init__.py": "from .base import BaseModule\n",
            "core/base.py": """
                from torch import nn


                class BaseModule(nn.Module):
                    def init_weights(self):
                        pass
            """,
            "models/__init__.py": "",
            "models/head.py": """
                import torch

                from core import BaseModule


                class Head(BaseModule):
                    def __init__(self):
                        super().__init__()
                        self.conv = torch.nn.Conv2d(8, 3 * 85, 1)

                    def forward(self, x):
                        y = self.conv(x)
                        bs, _, ny, nx = y.shape
                        a = y.view(1, 3, 85, ny, nx)
                        b = y.view(bs, 3, 85, ny, nx)
                        c = y.view(1, 85, -1)
                        return a, b, c
            """,
            "models/det.py": """
                from torch import nn

                from .head import Head


                class Detector(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.stem = nn.Conv2d(3, 8, 3)
                        self.head = Head()

                    def forward(self, images):
                        return self.head(self.stem(images))
            """,
            "tools/export.py": """
                import torch

                from models.det import Detector

                b = torch.export.Dim("batch")
                torch.onnx.export(
                    Detector().eval(), (torch.randn(1, 3, 8, 8),), "h.onnx",
                    dynamic_shapes={"images": {0: b}},
                )
            """,
        },
    )
    found = [f for f in check(root) if f["path"] == "models/head.py"]
    assert [(f["line"], f["code"]) for f in found] == [(14, "OLX105")], found
    assert (
        "literal size 1 in `.view()` fixes dim 0 of input `images`, which the export declares "
        "dynamic ('batch') (`Detector.forward()` in models/det.py:13 passes it to "
        "`Head.forward()`)" in found[0]["message"]
    ), found[0]["message"]
    assert [r[:2] for r in related(found[0], root)] == [("models/det.py", 13)]


# --------------------------------------------------------------------------- legacy-only code

OPS_ROI = """
import torch


class RoIAlignFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, feats, rois):
        return feats.new_zeros(rois.shape[0], feats.shape[1], 7, 7)

    @staticmethod
    def symbolic(g, feats, rois):
        return g.op("RoiAlign", feats, rois)


def roi_align(feats, rois):
    return RoIAlignFunction.apply(feats, rois)


def roi_align_unused(feats, rois):
    return RoIAlignFunction.apply(feats, rois)


roi_pool = RoIAlignFunction.apply
"""

HEADS = """
import torch

from ops import roi_align, roi_pool


class BoxHead(torch.nn.Module):
    def forward(self, feats, rois):
        return roi_align(feats, rois)


class MaskHead(torch.nn.Module):
    def forward(self, feats, rois):
        return roi_pool(feats, rois)
"""


def test_an_autograd_function_with_symbolic_called_through_a_wrapper_function(tmp_path) -> None:
    """`roi_align(feats, rois)` -> `RoIAlignFunction.apply(...)` in ops/roi.py (re-exported
    by `from .roi import *`), and `roi_pool = RoIAlignFunction.apply`, called by heads of
    another package that a dynamo export reaches: torch 2.13's dynamo exporter ignores
    `symbolic` and exports the placeholder `forward` (a tensor of zeros), without an error.
    The same heads exported with `dynamo=False` use the symbolic; a wrapper no exported
    model calls is not reported."""
    files = {
        "ops/__init__.py": "from .roi import *\n",
        "ops/roi.py": OPS_ROI,
        "models/__init__.py": "",
        "models/heads.py": HEADS,
        "tools/export.py": """
            import torch

            from models.heads import BoxHead, MaskHead

            feats, rois = torch.randn(1, 8, 16, 16), torch.rand(3, 5)
            torch.onnx.export(BoxHead().eval(), (feats, rois), "box.onnx")
            torch.onnx.export(MaskHead().eval(), (feats, rois), "mask.onnx")
        """,
    }
    (tmp_path / "dynamo").mkdir()
    root = project(tmp_path / "dynamo", files)
    found = check(root)
    ops = found_in(found, "ops/roi.py", "OLX410")
    assert [f["line"] for f in ops] == [15, 22], ops
    wrapper, alias = ops
    assert (
        "the dynamo exporter (tools/export.py:6) ignores `RoIAlignFunction.symbolic`"
        in wrapper["message"]
    )
    assert "`BoxHead.forward()` calls `roi_align()` (models/heads.py:8)" in wrapper["message"]
    assert related(wrapper, root) == [
        ("models/heads.py", 8, "`BoxHead.forward()` calls `roi_align()`")
    ]
    assert "`roi_pool` is `RoIAlignFunction.apply`" in alias["message"]
    assert [r[:2] for r in related(alias, root)] == [("models/heads.py", 13)]
    assert [f["line"] for f in found_in(found, "tools/export.py", "OLX410")] == [6, 7]

    # Negative: the same heads exported with the TorchScript exporter.
    legacy = tmp_path / "legacy"
    legacy.mkdir()
    files["tools/export.py"] = files["tools/export.py"].replace('.onnx")', '.onnx", dynamo=False)')
    root = project(legacy, files)
    assert not [f for f in check(root) if f["code"] == "OLX410"]


# --------------------------------------------------------------------------- state across calls

ENGINE_MODULE = """
from torch import nn

__all__ = ["EngineModule"]


class EngineModule(nn.Module):
    def init_weights(self):
        pass
"""

CORE_BASE = """
import torch

from ..engine import EngineModule


class Template(EngineModule):
    def forward(self, x):
        return self.step(x)


class Cached(EngineModule):
    def grid_for(self, x):
        if self.grid is None or self.grid.shape[-2:] != x.shape[-2:]:
            self.grid = torch.zeros(x.shape[-2:])
        return self.grid

    def unused(self, x):
        if self.seen is None:
            self.seen = x.mean()
        return self.seen
"""


def test_module_state_kept_by_a_class_derived_from_the_projects_base_module(tmp_path) -> None:
    """Library-style model code (no export in the project): `Tracker(Template)` keeps
    `self.last` in `step`, which the `forward` of its base in another package calls; the
    base `Cached` keeps `self.grid` in `grid_for`, which a subclass in another package
    calls from its `forward` (the base module class itself comes from a third package
    through `from .module import *`). torch.export runs forward once and restores module
    attributes: the export-time value is baked in. A class that overrides `forward` (the
    base's never runs), a helper no forward calls, a value written before it is read: not
    reported."""
    root = project(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/engine/__init__.py": "from .module import *\n",
            "proj/engine/module.py": ENGINE_MODULE,
            "proj/core/__init__.py": "",
            "proj/core/base.py": CORE_BASE,
            "proj/models/__init__.py": "",
            "proj/models/tracker.py": """
                import torch

                from proj.core.base import Template


                class Tracker(Template):
                    def step(self, x):
                        if self.last is None or self.last.shape != x.shape:
                            self.last = x.mean(dim=0)
                        return x - self.last


                class Own(Template):
                    def forward(self, x):
                        return x * 2

                    def step(self, x):
                        if self.last is None:
                            self.last = x.mean(dim=0)
                        return x - self.last


                class Fresh(Template):
                    def step(self, x):
                        self.last = x.mean(dim=0)
                        return x - self.last
            """,
            "proj/models/head.py": """
                from proj.core.base import Cached


                class Head(Cached):
                    def forward(self, x):
                        return x + self.grid_for(x)
            """,
        },
    )
    found = [f for f in check(root) if f["code"] == "OLX107"]
    assert sorted((f["path"], f["line"]) for f in found) == [
        ("proj/core/base.py", 14),
        ("proj/models/tracker.py", 9),
    ], found
    tracker = next(f for f in found if f["path"] == "proj/models/tracker.py")
    assert "`self.last` carries state across calls" in tracker["message"]


# --------------------------------------------------------------------------- unreached sizes

LIB_BACKBONE = """
import torch
import torch.nn.functional as F
from torch import nn


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.act = nn.ReLU()

    def forward(self, x):
        y = self.act(self.stem(x))
        h, w = y.shape[2:]
        up = F.interpolate(y, size=(int(h) * 2, w * 2))
        c = int(y.shape[1])
        return up, torch.zeros(c)
"""

LIB_HEADS = """
import torch
from torch import nn


class Tokens(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(100, 16)

    def forward(self, ids):
        e = self.emb(ids)
        return torch.stack([e[:, i] * i for i in range(ids.size(1))], 1)


class State(nn.Module):
    def forward(self, x):
        n = int(x.shape[0])
        return x + torch.zeros(n, 3)


class Symbolic(nn.Module):
    def forward(self, x, feats):
        return x + x.new_zeros(x.shape[0], 3), [int(f.shape[0]) for f in feats]
"""


def test_sizes_baked_in_model_code_no_export_reaches(tmp_path) -> None:
    """Library-style model files that the project's own export does not reach (their users
    export them): `int(h)` of a feature size into F.interpolate, `range(ids.size(1))` over
    the sequence, `int(x.shape[0])` into torch.zeros. Measured with torch 2.13: with that
    dim exported dynamic, torch.onnx.export catches torch.export's 'Constraints violated',
    applies its suggested fix and exports the dim static without a warning (the ONNX
    input is [2, 3] for a batch declared dynamic; ONNX Runtime rejects a batch of 5).
    Reported as unreached code, saying which dim and why; the channels of a
    convolution's input, sizes kept as tensor sizes and `unreached = "ignore"`: none."""
    files = {
        "lib/__init__.py": "",
        "lib/backbone.py": LIB_BACKBONE,
        "lib/heads.py": LIB_HEADS,
        "lib/other.py": """
            from torch import nn


            class Other(nn.Module):
                def forward(self, x):
                    return x * 2
        """,
        "tools/export.py": """
            import torch

            from lib.other import Other

            torch.onnx.export(Other().eval(), (torch.ones(2, 3),), "o.onnx")
        """,
    }
    (tmp_path / "report").mkdir()
    root = project(tmp_path / "report", files)
    found = [f for f in check(root) if f["code"] == "OLX104"]
    assert sorted((f["path"], f["line"]) for f in found) == [
        ("lib/backbone.py", 15),
        ("lib/heads.py", 12),
        ("lib/heads.py", 17),
    ], found
    by_line = {(f["path"], f["line"]): f["message"] for f in found}
    height = by_line[("lib/backbone.py", 15)]
    assert "`h` reads dim 2 (height) of input `x`" in height
    assert "`Backbone` has an `nn.Conv2d`: dims 2, 3 of its input are the height and width" in (
        height
    )
    assert height.endswith("no export in this project reaches it")
    assert "reads dim 1 (sequence) of input `ids`" in by_line[("lib/heads.py", 12)]
    batch = by_line[("lib/heads.py", 17)]
    assert "reads dim 0 (batch) of input `x`" in batch
    assert "exports the batch static, without a warning" in batch

    (tmp_path / "quiet").mkdir()
    root = project(tmp_path / "quiet", files, config='unreached = "ignore"\n')
    assert not [f for f in check(root) if f["code"] == "OLX104"]


def test_training_only_methods_a_base_forward_dispatches_to_are_not_forward_code(
    tmp_path,
) -> None:
    """mmdet 2.x's `BaseDetector.forward` dispatches to `self.forward_train(...)` when
    `return_loss` is set, else to the test path; a detector in another package defines both
    (YOLOX counts iterations in `forward_train`, YOLACT asserts on its losses there). Only
    the test path is ever exported (mmdet's pytorch2onnx passes `return_loss=False`), so the
    training-only methods (`forward_train`, `loss`, `*_loss`, `train_step`) are not made
    forward code by inheritance; the test path still is."""
    root = project(
        tmp_path,
        {
            "det/__init__.py": "",
            "det/base.py": """
                from torch import nn


                class BaseDetector(nn.Module):
                    def forward(self, x, return_loss=True):
                        if return_loss:
                            return self.forward_train(x)
                        return self.simple_test(x)
            """,
            "det/models/__init__.py": "",
            "det/models/yolox.py": """
                from det.base import BaseDetector


                class YOLOX(BaseDetector):
                    def forward_train(self, x):
                        self._progress_in_iter += 1
                        return self.compute_loss(x)

                    def compute_loss(self, x):
                        self.seen += 1
                        return x.sum()

                    def simple_test(self, x):
                        self.calls += 1
                        return x
            """,
        },
    )
    found = [f for f in check(root) if f["code"] == "OLX107"]
    assert [(f["path"], f["line"]) for f in found] == [("det/models/yolox.py", 14)], found


def test_a_wrapper_exports_the_model_its_caller_assigned_last(tmp_path) -> None:
    """icefall's export-onnx scripts: `main()` builds the training model (`model =
    get_model(params)`, whose `forward` is the training forward), then reassigns `model =
    OnnxModel(model.encoder)` and passes that to its export wrapper. Only the wrapper class is
    exported: the training forward is not reached (its findings say so)."""
    root = project(
        tmp_path,
        {
            "asr/__init__.py": "",
            "asr/model.py": """
                import torch
                from torch import nn


                class AsrModel(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.encoder = nn.Linear(4, 4)

                    def forward(self, x):
                        if x.sum() > 0:
                            x = x * 2
                        return self.encoder(x)


                class OnnxModel(nn.Module):
                    def __init__(self, encoder):
                        super().__init__()
                        self.encoder = encoder

                    def forward(self, x):
                        if x.mean() > 0:
                            x = x + 1
                        return self.encoder(x)
            """,
            "export_onnx.py": """
                import torch

                from asr.model import AsrModel, OnnxModel


                def export_model_onnx(model, filename):
                    torch.onnx.export(model.eval(), (torch.randn(2, 4),), filename)


                def main():
                    model = AsrModel()
                    model.eval()
                    model = OnnxModel(model.encoder)
                    export_model_onnx(model, "m.onnx")


                main()
            """,
        },
    )
    found = {
        f["line"]: f["message"]
        for f in check(root)
        if f["code"] == "OLX101" and f["path"] == "asr/model.py"
    }
    assert sorted(found) == [11, 22], found
    assert found[11].endswith("no export in this project reaches it"), found[11]
    assert not found[22].endswith("no export in this project reaches it"), found[22]


def test_an_export_wrapper_of_another_module_that_holds_the_models_submodules(tmp_path) -> None:
    """FastBEV's pattern: a builder of another module wraps the model it is given in an
    export class of a third module that keeps the model's submodules (`self.backbone =
    model.backbone`) and builds none of its own; `.eval()` runs on one path only, and the
    model is built once (`if self.onnx_model is None:`), so its class is not known. torch
    2.13: the wrapper's fresh training flag does not reach the submodules it holds, so
    the export is the model's own mode (the caller's, unknown here): not reported. A
    wrapper that builds its own Dropout is still in training mode: reported."""
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": NET,
            "models/export_net.py": """
                import copy

                from torch import nn


                class ExportModel(nn.Module):
                    def __init__(self, model):
                        super().__init__()
                        self.conv = model.conv.convert() if hasattr(model.conv, "convert") else model.conv
                        self.bn = copy.deepcopy(model.bn)

                    def forward(self, x):
                        return self.bn(self.conv(x))


                class DropExportModel(nn.Module):
                    def __init__(self, model):
                        super().__init__()
                        self.conv = model.conv
                        self.drop = nn.Dropout(0.5)

                    def forward(self, x):
                        return self.drop(self.conv(x))
            """,
            "models/onnx_export.py": """
                from models.export_net import DropExportModel, ExportModel


                def create_export_model(model, quantized=False):
                    wrapper = ExportModel(model)
                    if not quantized:
                        wrapper.eval()
                    return wrapper


                def create_drop_model(model, quantized=False):
                    wrapper = DropExportModel(model)
                    if not quantized:
                        wrapper.eval()
                    return wrapper
            """,
            "models/detector.py": """
                import torch
                from torch import nn

                from models.onnx_export import create_drop_model, create_export_model


                class Detector(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.onnx_model = None
                        self.drop_model = None

                    def predict(self, x, quantized=False):
                        if self.onnx_model is None:
                            self.onnx_model = create_export_model(self, quantized=quantized)
                        torch.onnx.export(self.onnx_model, (x,), "det.onnx")
                        if self.drop_model is None:
                            self.drop_model = create_drop_model(self, quantized=quantized)
                        torch.onnx.export(self.drop_model, (x,), "drop.onnx")
            """,
        },
    )
    found = found_in(check(root), "models/detector.py", "OLX201")
    assert [f["line"] for f in found] == [19], found


def test_an_export_wrapper_bound_by_a_star_import(tmp_path) -> None:
    """TensorRT_Examples' D-FINE export: `from infer import *` binds the wrapper class
    `Model`, which holds `cfg.model.deploy()` and `cfg.postprocessor.deploy()` (parts of
    its argument) and builds no module of its own; the model's own mode is exported (torch
    2.13: the wrapper's fresh training flag does not reach the submodules it holds, as in
    the FastBEV test above): not reported. A star-imported class that builds a Dropout
    is: reported."""
    root = project(
        tmp_path,
        {
            "infer.py": """
                from torch import nn


                class Model(nn.Module):
                    def __init__(self, cfg):
                        super().__init__()
                        self.model = cfg.model.deploy()
                        self.postprocessor = cfg.postprocessor.deploy()

                    def forward(self, images, sizes):
                        return self.postprocessor(self.model(images), sizes)


                class DropModel(nn.Module):
                    def __init__(self, cfg):
                        super().__init__()
                        self.model = cfg.model.deploy()
                        self.drop = nn.Dropout(0.5)

                    def forward(self, images, sizes):
                        return self.drop(self.model(images))
            """,
            "onnx_export.py": """
                from infer import *
                import torch


                def main(cfg, x, sizes):
                    model = Model(cfg)
                    with torch.no_grad():
                        torch.onnx.export(model, (x, sizes), "m.onnx")
                    dropping = DropModel(cfg)
                    torch.onnx.export(dropping, (x, sizes), "d.onnx")
            """,
        },
    )
    found = found_in(check(root), "onnx_export.py", "OLX201")
    assert [f["line"] for f in found] == [10], found


def test_a_function_wrapper_of_a_subproject_in_a_monorepo(tmp_path) -> None:
    """edgeai-tensorlab's mmdeploy tests: `from mmdeploy.utils.test import WrapFunction` in
    `edgeai-mmdeploy/tests/`, where `edgeai-mmdeploy/` is a subproject with its own
    `setup.py` (its tests run with it installed): the import resolves from the subproject,
    not from the monorepo's root. `WrapFunction(fn)` keeps a plain function and calls it
    in `forward`: its training flag changes nothing (torch 2.13: the same graph in both
    modes): not reported. A subproject class that builds a Dropout is: reported."""
    root = project(
        tmp_path,
        {
            "sub/setup.py": "from setuptools import setup\nsetup(name='sub')\n",
            "sub/mmdeploy/__init__.py": "",
            "sub/mmdeploy/utils/__init__.py": "",
            "sub/mmdeploy/utils/test.py": """
                from torch import nn


                class WrapFunction(nn.Module):
                    def __init__(self, wrapped_function, **kwargs):
                        super().__init__()
                        self.wrapped_function = wrapped_function
                        self.kwargs = kwargs

                    def forward(self, *args, **kwargs):
                        kwargs.update(self.kwargs)
                        return self.wrapped_function(*args, **kwargs)


                class DropNet(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.drop = nn.Dropout(0.5)

                    def forward(self, x):
                        return self.drop(x)
            """,
            "sub/tests/test_functions.py": """
                import torch

                from mmdeploy.utils.test import DropNet, WrapFunction


                def test_getitem():
                    def tensor_getitem(x):
                        return x[..., -1]

                    wrapped_func = WrapFunction(tensor_getitem)
                    with torch.no_grad():
                        torch.onnx.export(wrapped_func, torch.rand(1, 2, 3), "f.onnx")
                    net = DropNet()
                    torch.onnx.export(net, torch.rand(1, 2, 3), "d.onnx")
            """,
        },
    )
    found = found_in(check(root), "sub/tests/test_functions.py", "OLX201")
    assert [f["line"] for f in found] == [14], found


NARROWED_MODELS = {
    "model/__init__.py": """
        from importlib import import_module

        from torch import nn


        class Model(nn.Module):
            def __init__(self, args):
                super().__init__()
                module = import_module("model." + args.model.lower())
                self.model = module.make_model(args)

            def forward(self, x):
                if self.training:
                    return self.model(x)
                return self.forward_chop(x)
    """,
    "model/common.py": """
        import torch
        from torch import nn


        class MeanShift(nn.Conv2d):
            def __init__(self, rgb_range, sign=-1):
                super().__init__(3, 3, kernel_size=1)
                self.bias.data = sign * rgb_range * torch.Tensor([0.4, 0.4, 0.4])


        class ResBlock(nn.Module):
            def __init__(self, n_feats, bn=False):
                super().__init__()
                m = [nn.Conv2d(n_feats, n_feats, 3, padding=1), nn.ReLU(True)]
                if bn:
                    m.append(nn.BatchNorm2d(n_feats))
                self.body = nn.Sequential(*m)

            def forward(self, x):
                return self.body(x) + x


        class Upsampler(nn.Sequential):
            def __init__(self, scale, n_feats):
                if scale != 2:
                    raise NotImplementedError
                super().__init__(nn.Conv2d(n_feats, 4 * n_feats, 3, padding=1), nn.PixelShuffle(2))
    """,
    "model/edsr.py": """
        from torch import nn

        from model import common


        def make_model(args):
            return EDSR(args)


        class EDSR(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.sub_mean = common.MeanShift(255)
                self.head = nn.Conv2d(3, 16, 3, padding=1)
                self.body = nn.Sequential(*[common.ResBlock(16) for _ in range(4)])
                self.tail = common.Upsampler(2, 16)

            def forward(self, x):
                return self.tail(self.body(self.head(self.sub_mean(x))))
    """,
    "model/mdsr.py": """
        from torch import nn


        def make_model(args):
            return MDSR(args)


        class MDSR(nn.Module):
            def __init__(self, args):
                super().__init__()
                self.body = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), nn.Dropout(args.p))

            def forward(self, x):
                return self.body(x)
    """,
    "onnxport.py": """
        import torch

        from model import Model
        from model.edsr import EDSR
        from model.mdsr import MDSR


        class ModelWrapper(torch.nn.Module):
            def __init__(self, args):
                super().__init__()
                self.model = Model(args).model
                assert self.model.__class__ in (EDSR,)

            def forward(self, x):
                return self.model(x.permute((0, 3, 1, 2))).clamp(0, 255)


        class AnyWrapper(torch.nn.Module):
            def __init__(self, args):
                super().__init__()
                self.model = Model(args).model
                assert isinstance(self.model, (EDSR, MDSR))

            def forward(self, x):
                return self.model(x)


        def export_onnx_model(args):
            wrapper = ModelWrapper(args)
            torch.onnx.export(wrapper, (torch.randn(1, 8, 8, 3),), "edsr.onnx")


        def export_any(args):
            wrapper = AnyWrapper(args)
            torch.onnx.export(wrapper, (torch.randn(1, 3, 8, 8),), "any.onnx")


        def trace_edsr(args):
            wrapper = ModelWrapper(args)
            torch.jit.trace(wrapper, (torch.randn(1, 8, 8, 3),))
    """,
    "export_parallel_graph.py": """
        import torch

        from onnxport import ModelWrapper


        class ParallelModel(torch.nn.Module):
            def __init__(self, args):
                super().__init__()
                self.branches = [ModelWrapper(args) for _ in range(4)]

            def forward(self, tiles):
                return [branch(t) for t, branch in zip(tiles, self.branches)]


        def export_onnx_model(args):
            wrapper = ParallelModel(args)
            torch.onnx.export(wrapper, ([torch.randn(1, 8, 8, 3)] * 4,), "parallel.onnx")
    """,
}


def test_a_wrapper_of_a_model_asserted_to_be_classes_of_other_modules(tmp_path) -> None:
    """EDSR-PyTorch's ModelWrapper keeps `Model(args, ckp).model`, which `Model` loads with
    `import_module('model.' + args.model.lower())`, and asserts `self.model.__class__ in
    (EDSR, MDSR)`: the wrapped model is judged by those classes, in their own modules
    (a Conv2d subclass filling its bias with `torch.Tensor`, residual blocks whose
    BatchNorm is only built when `bn=True`, an `nn.Sequential` upsampler that raises
    NotImplementedError). torch 2.13 on the repository's EDSR and MDSR: the export without
    eval() gives the eval model's ONNX Runtime outputs (BatchNorm is written with its running
    statistics; there is none by default, and no Dropout). A class asserted to be one of
    two, one with Dropout, is reported, and so is a trace (it records BatchNorm's batch
    statistics, and the blocks can build one)."""
    root = project(tmp_path, NARROWED_MODELS)
    found = check(root)
    assert not found_in(found, "export_parallel_graph.py", "OLX201")
    onnxport = sorted(f["line"] for f in found_in(found, "onnxport.py", "OLX201"))
    assert onnxport == [35, 40], onnxport  # export_any (MDSR has Dropout), trace_edsr
