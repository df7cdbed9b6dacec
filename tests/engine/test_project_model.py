"""The project model through the real CLI, on small multi-file projects written here.

Each test builds a project in a temporary folder (a `pyproject.toml` makes it a project)
and runs `onnxlint check --format json` on it, as a user would: the model lives in one
module, the export in a script of another folder, helpers in a third.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.conftest import make_venv, run_cli


def project(root: Path, files: dict[str, str], config: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(f"[tool.onnxlint]\n{config}")
    return _write(root, files)


def _write(root: Path, files: dict[str, str]) -> Path:
    """`files` (dedented) under `root`, made if absent."""
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def check(root: Path, *args: str) -> list[dict[str, Any]]:
    r = run_cli("check", ".", "--format", "json", "--no-cache", *args, cwd=root)
    assert r.returncode in (0, 1), r.stderr
    found: list[dict[str, Any]] = json.loads(r.stdout)
    return found


def codes(found: list[dict[str, Any]], path: str) -> list[tuple[int, str]]:
    return sorted((f["line"], f["code"]) for f in found if f["path"] == path)


HEAD = """
import torch
from torch import nn

from .utils import decode


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)

    def forward(self, x, H, W):
        if H > 2:
            x = x * 2
        return self.proj(x)


class CenterHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(2)])

    def forward(self, heat):
        H, W = heat.shape[2], heat.shape[3]
        for blk in self.blocks:
            heat = blk(heat, H, W)
        n = int(heat.shape[0])
        return decode(heat)


class FocalLoss(nn.Module):
    def forward(self, pred, target):
        if pred.sum() > 0:
            return pred.mean()
        return pred


class Unused(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return -x
"""
UTILS = """
def decode(heat):
    k = heat.max().item()
    if k > 0.5:
        return heat
    return heat * 0
"""
EXPORT = """
import torch

from models.head import CenterHead


def main():
    model = CenterHead().eval()
    x = torch.randn(2, 4, 8, 8)
    torch.onnx.export(
        model, (x,), "m.onnx", dynamic_shapes={"heat": {0: torch.export.Dim("batch")}}
    )
"""


def centernet(tmp_path: Path, export: str = EXPORT, config: str = "") -> Path:
    return project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/head.py": HEAD,
            "models/utils.py": UTILS,
            "tools/export.py": export,
        },
        config,
    )


def test_an_export_in_another_folder_decides_what_forward_code_is_judged(tmp_path) -> None:
    found = check(centernet(tmp_path))
    head = {(f["line"], f["code"]): f["message"] for f in found if f["path"] == "models/head.py"}
    # The dynamic batch is declared in tools/export.py: the frozen batch size is named there.
    assert "tools/export.py:9 declares dynamic (dynamo exporter)" in head[(27, "OLX104")]
    assert "(batch)" in head[(27, "OLX104")]
    # A helper of another module called from the exported forward is reached too.
    utils = [f for f in found if f["path"] == "models/utils.py"]
    assert [(f["line"], f["code"]) for f in utils] == [(2, "OLX102")]
    assert "exported by tools/export.py:9, dynamo exporter" in utils[0]["message"]
    # `H` is the int the caller passes (heat.shape[2]), not a tensor: no OLX101.
    assert (13, "OLX101") not in head
    # The loss is never exported; the unused module is judged, and says no export reaches it.
    assert (33, "OLX101") not in head
    assert "no export in this project reaches it" in head[(40, "OLX101")]


def test_without_the_export_script_nothing_is_known_to_be_dynamic(tmp_path) -> None:
    root = centernet(tmp_path)
    (root / "tools" / "export.py").unlink()
    found = check(root)
    assert (27, "OLX104") not in codes(found, "models/head.py")
    assert all("no export in this project" in f["message"] for f in found)


def test_tracing_rates_the_model_code_it_reaches(tmp_path) -> None:
    traced = EXPORT.replace(
        'torch.onnx.export(\n        model, (x,), "m.onnx", dynamic_shapes={"heat": '
        '{0: torch.export.Dim("batch")}}\n    )',
        "torch.jit.trace(model, (x,))",
    )
    found = check(centernet(tmp_path, traced))
    head = {(f["line"], f["code"]): f for f in found if f["path"] == "models/head.py"}
    assert (
        "tracing freezes it to the example input's size (tools/export.py:9)"
        in (head[(27, "OLX104")]["message"])
    )
    utils = [f for f in found if f["path"] == "models/utils.py"]
    assert utils[0]["severity"] == "warning"  # traced: a frozen constant, not an export error


def test_unreached_setting_lowers_or_drops_findings_no_export_reaches(tmp_path) -> None:
    root = centernet(tmp_path, config='unreached = "lower"\n')
    unused = [f for f in check(root) if f["line"] == 40]
    assert unused[0]["severity"] == "warning"
    (root / "pyproject.toml").write_text('[tool.onnxlint]\nunreached = "ignore"\n')
    assert [f for f in check(root) if f["line"] == 40] == []
    (root / "pyproject.toml").write_text('[tool.onnxlint]\nunreached = "sometimes"\n')
    r = run_cli("check", ".", cwd=root)
    assert r.returncode == 2 and "`unreached` must be one of" in r.stderr


def test_builders_wrappers_and_factories_lead_to_the_model_class(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "net/__init__.py": "from .model import build_model\n",
            "net/model.py": """
                import torch
                from torch import nn


                class Head(nn.Module):
                    def forward(self, x):
                        if x.sum().item() > 0:
                            return x
                        return -x


                def build_head(cfg):
                    return Head()


                class Detector(nn.Module):
                    def __init__(self, cfg):
                        super().__init__()
                        self.head = build_head(cfg)

                    def forward(self, x):
                        y = self.head(x)
                        if y.sum() > 0:
                            return y
                        return -y


                def build_model(cfg):
                    model = Detector(cfg)
                    return model
            """,
            "scripts/export.py": """
                import torch

                from net import build_model


                def export(model, path):
                    torch.onnx.export(model.eval(), (torch.ones(1, 3),), path)


                export(build_model({}), "det.onnx")
            """,
        },
    )
    found = check(root)
    model = [f for f in found if f["path"] == "net/model.py"]
    assert [(f["line"], f["code"]) for f in model] == [(7, "OLX102"), (23, "OLX101")]
    assert all("exported by scripts/export.py:7" in f["message"] for f in model), model


NEGATIVES = """
import numpy as np
import onnxruntime as ort
import paddle
import torch
from torch import nn


class PaddleBlock(paddle.nn.Layer):
    def forward(self, x):
        if x.sum() > 0:
            return x
        return x.numpy()


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        if x.sum() > 0:
            return x
        return -x


class Deployable(nn.Module):
    def __init__(self):
        super().__init__()
        self.deploy = False

    def forward(self, x, H: int, W: int):
        if H > 4:
            x = x[:, :, :4]
        if self.training:
            if x.sum() > 0:
                x = x * 2
        if self.deploy:
            return x
        n = x.max().item()
        if n > 0:
            return x
        return -x


class Runtime(nn.Module):
    def __init__(self, path):
        super().__init__()
        self.session = ort.InferenceSession(path)

    def forward(self, x):
        out = self.session.run(None, {"x": x.cpu().numpy()})
        return torch.from_numpy(np.exp(out[0]))
"""


def test_code_that_no_export_can_run_is_not_reported(tmp_path) -> None:
    root = project(tmp_path, {"nets.py": NEGATIVES})
    assert check(root) == []


def test_olx201_judges_classes_nested_in_functions_and_in_other_modules(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "plain.py": """
                from torch import nn


                class Plain(nn.Module):
                    def __init__(self):
                        super().__init__()
                        self.fc = nn.Linear(2, 2)

                    def forward(self, x):
                        return self.fc(x)
            """,
            "export.py": """
                import torch
                from torch import nn

                from plain import Plain


                def export():
                    class Scale(nn.Module):
                        def forward(self, x):
                            return x * 2

                    torch.onnx.export(Scale(), (torch.ones(2),), "s.onnx")
                    torch.onnx.export(Plain(), (torch.ones(2),), "p.onnx")


                def export_dropout():
                    class Drop(nn.Module):
                        def __init__(self):
                            super().__init__()
                            self.drop = nn.Dropout(0.1)

                        def forward(self, x):
                            return self.drop(x)

                    torch.onnx.export(Drop(), (torch.ones(2),), "d.onnx")
            """,
        },
    )
    assert codes(check(root), "export.py") == [(25, "OLX201")]


def test_jit_is_tracing_fix_only_where_a_dynamo_export_reaches_it(tmp_path) -> None:
    model = """
        import torch


        class Net(torch.nn.Module):
            def forward(self, x):
                if torch.jit.is_tracing():
                    return x.view(-1)
                return x
    """
    root = project(
        tmp_path,
        {
            "net.py": model,
            "trace.py": "import torch\nfrom net import Net\n"
            "torch.jit.trace(Net().eval(), torch.ones(2))\n",
        },
    )
    [finding] = [f for f in check(root) if f["code"] == "OLX110"]
    assert finding["fix"] is None and finding["severity"] == "info"
    (root / "onnx_export.py").write_text(
        "import torch\nfrom net import Net\ntorch.onnx.export(Net().eval(), (torch.ones(2),))\n"
    )
    [finding] = [f for f in check(root) if f["code"] == "OLX110"]
    assert finding["fix"] is not None


def test_the_results_cache_sees_an_edited_export_script(tmp_path) -> None:
    root = centernet(tmp_path)

    def cached() -> list[tuple[int, str]]:
        r = run_cli("check", ".", "--format", "json", cwd=root)
        return codes(json.loads(r.stdout), "models/head.py")

    assert (27, "OLX104") in cached()
    script = root / "tools" / "export.py"
    script.write_text(
        script.read_text().replace(
            'dynamic_shapes={"heat": {0: torch.export.Dim("batch")}}', "dynamo=True"
        )
    )
    assert (27, "OLX104") not in cached()


def test_autograd_symbolic_reached_by_a_dynamo_export_in_another_file(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "ops.py": """
                import torch


                class NMS(torch.autograd.Function):
                    @staticmethod
                    def forward(ctx, boxes):
                        return torch.zeros(0, dtype=torch.int64)

                    @staticmethod
                    def symbolic(g, boxes):
                        return g.op("NonMaxSuppression", boxes)
            """,
            "det.py": """
                import torch

                from ops import NMS


                class Det(torch.nn.Module):
                    def forward(self, boxes):
                        return NMS.apply(boxes)
            """,
            "export.py": """
                import torch

                from det import Det

                torch.onnx.export(Det().eval(), (torch.ones(4, 4),), "det.onnx")
                torch.onnx.export(Det().eval(), (torch.ones(4, 4),), "old.onnx", dynamo=False)
            """,
        },
    )
    found = [f for f in check(root) if f["code"] == "OLX410"]
    assert sorted((f["path"], f["line"]) for f in found) == [("det.py", 8), ("export.py", 5)]
    apply = next(f for f in found if f["path"] == "det.py")
    assert "(export.py:5) ignores `NMS.symbolic`" in apply["message"]


def test_torch_onnx_private_export_is_an_export_site_and_removed(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "m.py": """
                import torch


                class M(torch.nn.Module):
                    def forward(self, x):
                        return x.view(int(x.shape[0]), -1)


                torch.onnx._export(M().eval(), (torch.ones(2, 3),), "m.onnx")
            """
        },
    )
    found = {f["code"]: f for f in check(root)}
    assert found["OLX409"]["line"] == 9 and found["OLX409"]["fix"] is not None
    assert "OLX401" not in found  # one finding per cause: OLX409 says it all


VERSIONED = """
import torch
from packaging import version

if version.parse(torch.__version__) < version.parse("2.9"):
    prog = torch.onnx.dynamo_export(model, x)
    torch.onnx.export(model, (x,), "m.onnx", dynamic_axes={"x": {0: "b"}})
else:
    torch.onnx.export(model, (x,), "m.onnx", dynamic_axes={"x": {0: "b"}})
"""


def test_torch_version_branches_follow_target_torch_in_every_rule(tmp_path) -> None:
    root = project(tmp_path, {"export.py": VERSIONED})
    # torch 2.13: the first branch is dead (OLX402 and OLX304 stay quiet there), the else
    # branch is live (its dynamic_axes on the dynamo path is reported).
    assert [(line, c) for line, c in codes(check(root), "export.py") if c[:4] == "OLX3"] == [
        (8, "OLX304")
    ]
    assert "OLX402" not in {f["code"] for f in check(root)}
    # For torch 2.5 the other branch is live: dynamo_export is still there (2.5 < 2.9).
    old = {(f["line"], f["code"]) for f in check(root, "--target-torch", "2.5")}
    assert (8, "OLX304") not in old


def test_opset_from_an_imported_constant_and_a_parameter_default(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/consts.py": "OPSET = 13\nMAX = 30\n",
            "pkg/export.py": """
                import torch

                from . import consts
                from .consts import OPSET


                def export(model, x, opset=11):
                    torch.onnx.export(model, (x,), "a.onnx", opset_version=opset)


                def export_pinned(model, x):
                    torch.onnx.export(model, (x,), "b.onnx", opset_version=OPSET)
                    torch.onnx.export(model, (x,), "c.onnx", opset_version=consts.MAX)
            """,
        },
    )
    found = codes(check(root), "pkg/export.py")
    assert (8, "OLX501") in found and (12, "OLX501") in found
    assert (13, "OLX502") in found


def test_literal_size_on_a_dim_another_files_export_declares_dynamic(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "models/__init__.py": "",
            "models/net.py": """
                import torch


                class Net(torch.nn.Module):
                    def forward(self, x):
                        return x.view(2, 12)
            """,
            "tools/export.py": """
                import torch

                from models.net import Net

                batch = torch.export.Dim("batch")
                torch.onnx.export(
                    Net().eval(), (torch.ones(2, 3, 4),), "n.onnx", dynamic_shapes={"x": {0: batch}}
                )
            """,
        },
    )
    found = [f for f in check(root) if f["path"] == "models/net.py"]
    assert [(f["line"], f["code"]) for f in found] == [(6, "OLX105")]
    assert "tools/export.py:6" in found[0]["message"]
    (root / "tools" / "export.py").unlink()
    assert [f["code"] for f in check(root) if f["code"] == "OLX105"] == []


def test_declared_deep_analysis_targets_are_export_sites(tmp_path) -> None:
    root = project(
        tmp_path,
        {
            "net.py": """
                import torch


                class Net(torch.nn.Module):
                    def forward(self, x):
                        n = int(x.shape[0])
                        return x.reshape(n, -1)
            """,
            "targets.py": """
                import torch

                from net import Net


                def build():
                    return Net().eval(), (torch.ones(2, 3),)


                # onnxlint: target
                def marked():
                    model = Net()
                    return model.eval(), (torch.ones(2, 3),)
            """,
        },
        config='[[tool.onnxlint.targets]]\nname = "net"\nfactory = "targets:build"\n'
        'dynamic-shapes = { x = { 0 = "batch" } }\n',
    )
    [finding] = [f for f in check(root) if f["path"] == "net.py"]
    assert finding["code"] == "OLX104"
    assert "(batch) that targets.py:6 declares dynamic" in finding["message"]


def test_a_model_derived_from_another_is_the_exported_model(tmp_path) -> None:
    """`patched = patch_model(model)`: the export reaches the original model's forward."""
    root = project(
        tmp_path,
        {
            "net.py": """
                import torch


                class Net(torch.nn.Module):
                    def forward(self, x):
                        if x.sum().item() > 0:
                            return x * 2
                        return x
            """,
            "export.py": """
                import copy

                import torch
                from net import Net


                def patch_model(model):
                    return copy.deepcopy(model)


                model = Net().eval()
                patched = patch_model(model)
                torch.onnx.export(patched, (torch.ones(4),), "n.onnx")
            """,
        },
    )
    [finding] = [f for f in check(root) if f["code"] == "OLX102"]
    assert "exported by export.py:13" in finding["message"], finding["message"]


def test_an_imported_helpers_return_kind_crosses_files(tmp_path) -> None:
    """`heat = decode(x)` with `decode` in another module returning a tensor: iterating
    over `heat` iterates over a tensor; a helper returning a list does not."""
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": """
                import torch


                def decode(x):
                    return torch.sigmoid(x)


                def split(x) -> list[torch.Tensor]:
                    return list(x.unbind(0))
            """,
            "pkg/head.py": """
                import torch

                from .utils import decode, split


                class Head(torch.nn.Module):
                    def forward(self, x):
                        heat = decode(x)
                        for b, hm in enumerate(heat):
                            x = x + hm
                        for part in split(x):
                            x = x + part
                        return x
            """,
        },
    )
    assert codes(check(root), "pkg/head.py") == [(9, "OLX108")]


def test_a_helper_another_files_forward_calls_is_forward_code(tmp_path) -> None:
    """`count` in utils.py runs when `Head.forward` (head.py) runs: judged as forward code
    although no export reaches it; a helper nobody's forward calls is not."""
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": """
                import torch


                def count(x):
                    if x.sum().item() > 0:
                        return x * 2
                    return x


                def unused(x):
                    if x.sum().item() > 0:
                        return x * 2
                    return x
            """,
            "pkg/head.py": """
                import torch

                from .utils import count, unused


                class Head(torch.nn.Module):
                    def forward(self, x):
                        return count(x)


                def report(x):
                    return unused(x)
            """,
        },
    )
    found = check(root)
    assert codes(found, "pkg/utils.py") == [(5, "OLX102")]
    [finding] = [f for f in found if f["path"] == "pkg/utils.py"]
    assert "no export in this project reaches it" in finding["message"]


def test_a_helper_called_only_by_a_non_module_or_outside_forward_is_not_forward_code(
    tmp_path,
) -> None:
    """MONAI's `add_casts_around_norms` is called by `TrtCompiler` (a plain class with a
    `forward`, no nn.Module) and model surgery by a module's setup method: neither runs
    in a forward. A helper the module's `forward` reaches through `self.m()` still is."""
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": """
                import torch


                def surgery(model, x):
                    if x.sum().item() > 0:
                        return model
                    return model


                def setup(model, x):
                    if x.sum().item() > 0:
                        return model
                    return model


                def count(x):
                    if x.sum().item() > 0:
                        return x * 2
                    return x
            """,
            "pkg/trt.py": """
                import torch

                from .utils import count, setup, surgery


                class Compiler:
                    def forward(self, model, x):
                        return self._build(model)(x)

                    def _build(self, model):
                        return surgery(model, torch.ones(1))


                class Head(torch.nn.Module):
                    def forward(self, x):
                        return self._scale(x)

                    def _scale(self, x):
                        return count(x)

                    def prepare(self):
                        return setup(self, torch.ones(1))
            """,
        },
    )
    assert codes(check(root), "pkg/utils.py") == [(17, "OLX102")]


def test_code_reached_only_under_a_targets_branch_is_not_forward_code(tmp_path) -> None:
    """FastSpeech2's monotonic alignment search (`.numpy()`) runs only when target
    spectrograms are passed (`if mel_spectrograms is not None:`, documented "used only for
    training"): the helpers it calls there are not forward code, in the file and from an
    export. The same helper called outside the branch, or under an optional input that is
    not documented as ground truth, is still reported."""
    root = project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/tts.py": """
                import torch
                from torch import nn


                def align(value, mask):
                    value = value * mask
                    return torch.from_numpy(value.cpu().detach().numpy())


                def pitch_path(value, mask):
                    value = value * mask
                    return torch.from_numpy(value.cpu().detach().numpy())


                class TTS(nn.Module):
                    def forward(self, tokens, mel_spectrograms=None, pitch=None):
                        \"\"\"Synthesise.

                        Arguments
                        ---------
                        tokens: torch.Tensor
                            input tokens
                        mel_spectrograms: torch.Tensor
                            batch of mel_spectrograms (used only for training)
                        pitch: torch.Tensor
                            pitch for each frame; predicted when None
                        \"\"\"
                        durations = None
                        if mel_spectrograms is not None:
                            durations = self._aligner(tokens, mel_spectrograms)
                        if pitch is not None:
                            tokens = tokens + pitch_path(pitch, tokens)
                        return tokens, durations

                    def _aligner(self, x, y):
                        return align(x, y)


                class Tagger(nn.Module):
                    def forward(self, x, labels=None):
                        if self.training:
                            x = self._noise(x)
                        if labels is not None:
                            return align(labels, x)
                        return x

                    def _noise(self, x):
                        return align(x, x)
            """,
            "tools/export.py": """
                import torch

                from pkg.tts import TTS, Tagger



                def main():
                    tts = TTS().eval()
                    torch.onnx.export(tts, (torch.zeros(1, 4),), "tts.onnx")
                    tagger = Tagger().eval()
                    torch.onnx.export(tagger, (torch.zeros(1, 4),), "tag.onnx")
            """,
        },
    )
    found = check(root)
    assert codes(found, "pkg/tts.py") == [(12, "OLX103")]  # pitch_path only
    [finding] = [f for f in found if f["path"] == "pkg/tts.py"]
    assert "exported by tools/export.py:9" in finding["message"], finding["message"]


def test_an_acronym_class_built_in_the_export_call_is_the_exported_model(tmp_path) -> None:
    """`torch.onnx.export(TTS().eval(), ...)` at a script's top level, the class imported
    from the project: acronym class names (`TTS`, `MLP`) are classes too."""
    root = project(
        tmp_path,
        {
            "models.py": """
                import torch


                class TTS(torch.nn.Module):
                    def forward(self, x):
                        if x.sum() > 0:
                            return x
                        return x * 2
            """,
            "tools/export.py": """
                import torch
                from models import TTS

                torch.onnx.export(TTS().eval(), (torch.randn(2, 3),), "tts.onnx")
            """,
        },
    )
    [finding] = [f for f in check(root) if f["code"] == "OLX101"]
    assert "exported by tools/export.py:4" in finding["message"], finding["message"]


def test_a_loose_folder_gives_the_same_findings_with_one_job_and_with_two(tmp_path) -> None:
    # No project marker: a loose folder, whose project model holds its top-level files
    # only. Checking the export script of a subfolder in this process (--jobs 1) had added
    # it to the model, while pool workers (--jobs 2, more than 8 files) get the table built
    # before they start: the findings depended on --jobs (and on the order of the files).
    def loose(root: Path, export_path: str) -> Path:
        files = {
            "models/__init__.py": "",
            "models/head.py": HEAD,
            "models/utils.py": UTILS,
            export_path: EXPORT,
            **{f"misc/m{i}.py": f"X{i} = {i}\n" for i in range(8)},
        }
        for name, text in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"))
        return root

    sub = loose(tmp_path / "sub", "export/run.py")  # checked first with --jobs 1
    one = check(sub, "--jobs", "1")
    assert one == check(sub, "--jobs", "2")
    assert not any("export/run.py" in f["message"] for f in one)
    # A top-level export script is in the model either way.
    top = loose(tmp_path / "top", "run.py")
    one = check(top, "--jobs", "1")
    assert one == check(top, "--jobs", "2")
    head = {(f["line"], f["code"]): f["message"] for f in one if f["path"] == "models/head.py"}
    assert "run.py:9 declares dynamic (dynamo exporter)" in head[(27, "OLX104")]


SCRIPTED_MODEL = """
import torch
from torch import nn


class Encoder(nn.Module):
    def forward(self, x: torch.Tensor, lengths: torch.Tensor):
        assert x.size(0) == lengths.max().item(), "lengths"
        rows = [row.sum() for row in x]
        if x.sum() > 0:
            x = x * 2
        return torch.stack(rows) + x.mean()
"""


def test_code_only_scripting_reaches_keeps_its_loops_and_branches(tmp_path) -> None:
    # torch.jit.script compiles the loop, the branch and `.item()` (torch 2.13: the scripted
    # module runs any batch); an ONNX export of the same class unrolls and fails on them.
    def exported(*calls: str) -> list[tuple[int, str]]:
        root = tmp_path / str(len(list(tmp_path.iterdir())))
        root.mkdir()
        text = "import torch\nfrom model import Encoder\n\nm = Encoder().eval()\n"
        project(root, {"model.py": SCRIPTED_MODEL, "export.py": text + "\n".join(calls) + "\n"})
        return codes(check(root), "model.py")

    assert exported("torch.jit.script(m)") == []
    onnx = exported('torch.onnx.export(m, (torch.ones(2, 3), torch.ones(2)), "m.onnx")')
    assert {c for _, c in onnx} >= {"OLX101", "OLX102", "OLX108"}
    both = exported("torch.jit.script(m)", "torch.jit.trace(m, (torch.ones(2, 3), torch.ones(2)))")
    assert {c for _, c in both} >= {"OLX108"}


LIBRARY = {
    "srlib/__init__.py": "from .nets import Dropping, Plain\n",
    "srlib/base.py": """
        import torch.nn as nn


        class BaseModule(nn.Module):
            def __init__(self, init_cfg=None):
                super().__init__()
                self.init_cfg = init_cfg
    """,
    "srlib/nets.py": """
        import torch.nn as nn

        from srlib.base import BaseModule


        class Plain(BaseModule):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 3, padding=1)
                self.relu = nn.ReLU()

            def forward(self, x):
                return self.relu(self.conv(x))


        class Dropping(BaseModule):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 3, 3, padding=1)
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                return self.drop(self.conv(x))
    """,
}

LIBRARY_USER = """
    import torch
    from srlib import Dropping, Plain

    x = torch.randn(1, 3, 8, 8)
    torch.onnx.export(Plain(), (x,), "plain.onnx")
    torch.onnx.export(Dropping(), (x,), "dropping.onnx")
"""


def _venv_with(folder: Path, files: dict[str, str]) -> Path:
    """A real venv (no pip) whose site-packages holds `files`; its interpreter's path."""
    python, site = make_venv(folder)
    _write(site, files)
    return python


def test_olx201_reads_a_library_model_class_from_the_environment(tmp_path) -> None:
    """A model class imported from an installed library is judged by its source there (as
    pyright reads site-packages): the one without Dropout is not reported; without the
    library both are (unsure)."""
    python = _venv_with(tmp_path / "env", LIBRARY)
    config = f'[tool.onnxlint.deep]\npython = "{python}"\n'
    root = project(tmp_path / "p", {"export.py": LIBRARY_USER}, config)
    assert codes(check(root), "export.py") == [(6, "OLX201")]
    bare = project(tmp_path / "bare", {"export.py": LIBRARY_USER})
    assert codes(check(bare), "export.py") == [(5, "OLX201"), (6, "OLX201")]


def test_olx201_reads_library_classes_on_pythonpath(tmp_path) -> None:
    """onnxlint's own interpreter: its site-packages and PYTHONPATH's folders."""
    lib = _write(tmp_path / "lib", LIBRARY)
    root = _write(tmp_path / "p", {"export.py": LIBRARY_USER})
    r = run_cli(
        "check", ".", "--format", "json", "--no-cache", cwd=root, env={"PYTHONPATH": str(lib)}
    )
    assert codes(json.loads(r.stdout), "export.py") == [(6, "OLX201")]


def test_a_repository_that_is_a_package_imports_itself_by_its_own_name(tmp_path) -> None:
    """`from models.net import Net` in a package cloned as `crnn-repo/`: the class is the
    package's own `net.py` (the import's last resort); with Dropout in it, it is reported."""
    net = """
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(1, 4, 3)
                self.bn = nn.BatchNorm2d(4)
                self.rnn = nn.LSTM(4, 4, bidirectional=True)

            def forward(self, x):
                return self.bn(self.conv(x))
    """
    script = """
        import torch
        from models.net import Net

        model = Net()
        torch.onnx.export(model, (torch.randn(1, 1, 8, 8),), "net.onnx")
    """
    files = {"crnn-repo/__init__.py": "", "crnn-repo/net.py": net, "crnn-repo/convert.py": script}
    root = project(tmp_path / "a", files)
    assert codes(check(root), "crnn-repo/convert.py") == []
    dropping = net.replace("self.bn = nn.BatchNorm2d(4)", "self.bn = nn.Dropout(0.1)")
    root = project(tmp_path / "b", {**files, "crnn-repo/net.py": dropping})
    assert codes(check(root), "crnn-repo/convert.py") == [(5, "OLX201")]
