"""Real projects' export scripts with no set-up (issue 26): what stopped the runs of
projects' own export scripts, each as a small script, in the real worker with real torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import line_of
from .test_scripts import CONV_BN, NET, _analyze, _codes

pytest.importorskip("torch")
pytestmark = [pytest.mark.deep]


def _project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "nets.py").write_text(textwrap.dedent(NET).lstrip())
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _analysed(res: Any, cls: str = "Net") -> dict[str, Any]:
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert data["model"]["class"].endswith(cls), data.get("model")
    return data


def _stop(res: Any) -> Any:
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    return stop


def test_a_jit_script_decorator_at_import_time_is_not_the_export(
    analyzer: Any, tmp_path: Path
) -> None:
    """`@torch.jit.script` on a helper in a module the script imports compiles a function:
    it is neither the export (with no line, the first call reached) nor to be replaced."""
    root = _project(
        tmp_path,
        {
            "ops.py": """
                import torch


                @torch.jit.script
                def scale(x: torch.Tensor) -> torch.Tensor:
                    return x * 2
            """,
            "export.py": """
                import torch

                from nets import Net
                from ops import scale

                model = Net().eval()
                x = scale(torch.randn(2, 3, 16, 16))
                torch.onnx.export(model, (x,), "net.onnx")
            """,
        },
    )
    for line in (None, line_of(root / "export.py", "torch.onnx.export")):
        res = _analyze(analyzer, root, "export.py", line)
        data = _analysed(res)
        assert data["script_call"]["line"] == line_of(root / "export.py", "torch.onnx.export")
        assert "OLX802" in _codes(res), res.violations


def test_torch_save_of_the_fake_model_writes_nothing_and_goes_on(
    analyzer: Any, tmp_path: Path
) -> None:
    script = """
        import torch

        from nets import Net

        model = Net().eval()
        torch.save(model, "whole.pt")
        torch.save(model.state_dict(), "weights.pth")
        torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "net.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    res = _analyze(analyzer, root, "export.py", None)
    data = _analysed(res)
    assert not (root / "whole.pt").exists() and not (root / "weights.pth").exists()
    assert any("torch.save" in s["what"] for s in data["script_skipped"]), data["script_skipped"]


def test_a_checkpoint_checked_for_and_opened_reads_as_an_empty_one(
    analyzer: Any, tmp_path: Path
) -> None:
    """`if not os.path.exists(ckpt): exit()`, `assert os.path.isfile(...)`, `open(ckpt,
    "rb")` of a checkpoint argument that is not here: present, and an empty checkpoint."""
    script = """
        import argparse
        import os
        from pathlib import Path

        import torch

        from nets import Net

        p = argparse.ArgumentParser()
        p.add_argument("--ckpt-path", default="pretrained/modnet.ckpt")
        p.add_argument("--weights", default="runs/best")
        a = p.parse_args()
        if not os.path.exists(a.ckpt_path):
            print("Cannot find checkpoint path: {0}".format(a.ckpt_path))
            exit()
        assert os.path.isfile(a.weights)
        assert Path(a.ckpt_path).is_file()
        model = Net()
        with open(a.ckpt_path, "rb") as fh:
            model.load_state_dict(torch.load(fh, map_location="cpu"))
        torch.onnx.export(model.eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    res = _analyze(analyzer, root, "export.py", None)
    data = _analysed(res)
    skipped = " ".join(s["what"] for s in data["script_skipped"])
    assert "pretrained/modnet.ckpt" in skipped and "runs/best" in skipped, skipped


def test_a_project_package_named_like_a_library_the_worker_imports(
    analyzer: Any, tmp_path: Path
) -> None:
    """MODNet's `python -m onnx.export_onnx`: the project's `onnx/` package, not the onnx
    library the worker has imported, is what the script's relative import finds."""
    import onnx

    root = _project(
        tmp_path,
        {
            "onnx/__init__.py": "",
            "onnx/modnet_onnx.py": "from nets import Net as MODNet\n",
            "onnx/export_onnx.py": """
                import torch

                from . import modnet_onnx

                if __name__ == "__main__":
                    model = modnet_onnx.MODNet().eval()
                    torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "modnet.onnx")
            """,
        },
    )
    res = _analyze(analyzer, root, "onnx/export_onnx.py", None)
    _analysed(res)
    assert "OLX802" in _codes(res), res.violations
    assert onnx.helper is not None  # the library is back in the test process, untouched
    # ... and the real run, which imported the project's `onnx` first, fails at the call:
    # torch 2.13's exporter imports `onnx` and gets the project's package (checked:
    # "No module named 'onnx.external_data_helper'" for MODNet's README command)
    assert res.outcome != "ok", res.outcome
    call = line_of(root / "onnx/export_onnx.py", "torch.onnx.export")
    (at_call,) = [v for v in res.violations if v.line == call and v.code == "OLX803"]
    assert "the project's own package `onnx/`" in at_call.message, at_call.message


def test_an_export_made_by_a_library_the_script_calls(analyzer: Any, tmp_path: Path) -> None:
    """`model.export(format="onnx")` (ultralytics and the like): the script's call is a
    target, and the run captures the torch.onnx.export the library makes under it."""
    from onnxlint.deep.scripts import script_targets

    root = _project(
        tmp_path,
        {
            "vendor/yolo/__init__.py": """
                import torch

                from nets import Net


                class YOLO:
                    def __init__(self, weights):
                        self.model = Net().eval()

                    def export(self, format="torchscript", imgsz=16):
                        x = torch.randn(2, 3, imgsz, imgsz)
                        torch.onnx.export(self.model, (x,), "model.onnx")
                        return "model.onnx"
            """,
            "export.py": """
                import sys

                sys.path.insert(0, "vendor")
                from yolo import YOLO

                model = YOLO("yolo11n.pt")
                model.export(format="onnx", imgsz=16)
            """,
        },
    )
    (target,) = script_targets(root / "export.py", root)
    call = line_of(root / "export.py", 'format="onnx"')
    assert target.script_line == call
    res = analyzer.analyze(target, use_cache=False)
    data = _analysed(res)
    assert data["script_call"]["file"].endswith("vendor/yolo/__init__.py")


def test_a_bare_assertion_and_an_exit_say_why(analyzer: Any, tmp_path: Path) -> None:
    script = """
        import os
        import sys

        import torch

        from nets import Net

        config = "configs/model.yaml"
        MODE = os.environ.get("MODE", "assert")
        if MODE == "assert":
            assert os.path.isfile(config)
        print("Cannot find the config: " + config)
        sys.exit()
        torch.onnx.export(Net().eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    stop = _stop(_analyze(analyzer, root, "export.py", None))
    assert stop.line == line_of(root / "export.py", "assert os.path.isfile")
    assert "`assert os.path.isfile(config)` failed" in stop.message, stop.message
    (root / "export.py").write_text(
        (root / "export.py").read_text().replace('"assert")', '"exit")')
    )
    stop = _stop(_analyze(analyzer, root, "export.py", None))
    assert stop.line == line_of(root / "export.py", "sys.exit()")
    assert "exit code None" not in stop.message, stop.message
    assert "Cannot find the config: configs/model.yaml" in stop.message, stop.message


def test_a_module_a_release_removed_says_which_release_and_what_replaces_it(
    analyzer: Any, tmp_path: Path
) -> None:
    script = """
        import torch
        from torchvision.transforms.functional_tensor import rgb_to_grayscale

        from nets import Net

        torch.onnx.export(Net().eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
    """
    # a torchvision of 0.17 or later: its transforms, without functional_tensor
    root = _project(
        tmp_path,
        {
            "export.py": script,
            "torchvision/__init__.py": "__version__ = '0.28.0'\n",
            "torchvision/transforms/__init__.py": "",
            "torchvision/transforms/functional.py": "def rgb_to_grayscale(x):\n    return x\n",
        },
    )
    stop = _stop(_analyze(analyzer, root, "export.py", None))
    text = stop.message + " ".join(getattr(stop, "notes", []) or [])
    assert "torchvision 0.17" in text and "torchvision.transforms.functional" in text, text
    assert "Install" not in text, text


def test_a_removed_export_call_is_analysed_but_not_ok(analyzer: Any, tmp_path: Path) -> None:
    """`torch.onnx._export` (gone in torch 2.13): analysed as torch.onnx.export, and the
    call is said to fail there, also when the script's logging decorator swallows it."""
    import torch

    assert not hasattr(torch.onnx, "_export")  # what the real script hits: AttributeError
    script = """
        import functools

        import torch

        from nets import Net


        def log_errors(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                try:
                    return fn(*args, **kwargs)
                except Exception as e:
                    print("export failed:", e)

            return wrapper


        @log_errors
        def main():
            model = Net().eval()
            torch.onnx._export(model, (torch.randn(2, 3, 16, 16),), "net.onnx", opset_version=11)


        main()
    """
    root = _project(tmp_path, {"export.py": script})
    call = line_of(root / "export.py", "torch.onnx._export(")
    res = _analyze(analyzer, root, "export.py", call)
    assert res.outcome != "ok", (res.outcome, res.violations)
    at_call = [v for v in res.violations if v.line == call and "_export" in v.message]
    assert at_call and "does not exist in torch" in at_call[0].message, res.violations
    assert "OLX802" in _codes(res)  # the model is still analysed


def test_a_dynamo_export_call_with_positional_model_args_is_analysed(
    analyzer: Any, tmp_path: Path
) -> None:
    """pytorch#113118: `torch.onnx.dynamo_export(fn, x)` (gone in torch 2.13): its model
    arguments are positional; the call is analysed as torch.onnx.export and said to fail."""
    import torch

    assert not hasattr(torch.onnx, "dynamo_export")
    script = """
        import torch
        import torch.onnx

        torch.onnx.dynamo_export(lambda x: torch.unique(x) * 2, torch.arange(10))
    """
    root = _project(tmp_path, {"export.py": script})
    call = line_of(root / "export.py", "torch.onnx.dynamo_export(")
    res = _analyze(analyzer, root, "export.py", call)
    assert "onnxlint" not in res.outcome, (res.outcome, res.violations)
    assert res.outcome != "ok"
    messages = [v.message for v in res.violations if v.line == call]
    assert any("does not exist in torch" in m for m in messages), messages
    assert not any("phase failed" in v.message for v in res.violations), res.violations


def test_a_whole_pickled_model_whose_class_overrides_apply_keeps_its_architecture(
    analyzer: Any, tmp_path: Path
) -> None:
    """YOLO checkpoints (`torch.save(model)`): ultralytics' BaseModel overrides
    `_apply(self, fn)` without torch's `recurse`, and keeps tensors in list attributes; the
    file is present, so the run loads its structure (no "TypeError making fakes")."""
    import sys

    import torch

    root = _project(
        tmp_path,
        {
            "yolo.py": """
                import torch

                from nets import Net


                class BaseModel(Net):
                    def __init__(self):
                        super().__init__()
                        self.grid = [torch.zeros(1, 8), torch.zeros(1, 8)]

                    def _apply(self, fn):
                        self = super()._apply(fn)
                        self.grid = [fn(g) for g in self.grid]
                        return self

                    def forward(self, x):
                        return super().forward(x) + self.grid[0].sum()
            """,
            "export.py": """
                import torch

                ckpt = torch.load("best.pt", map_location="cpu", weights_only=False)
                model = ckpt["model"].float().eval()
                torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "best.onnx")
            """,
        },
    )
    sys.path.insert(0, str(root))
    try:
        from yolo import BaseModel  # type: ignore[import-not-found]

        torch.save({"model": BaseModel().half()}, root / "best.pt")
    finally:
        sys.path.remove(str(root))
        for name in ("yolo", "nets"):
            sys.modules.pop(name, None)
    res = _analyze(analyzer, root, "export.py", None)
    _analysed(res, "BaseModel")
    assert "OLX802" in _codes(res), res.violations


def test_a_plain_tensor_attribute_made_by_the_script_run_is_a_real_constant(
    analyzer: Any, tmp_path: Path
) -> None:
    """A tensor kept in a plain attribute (a list of grids) is made on fake tensors by the
    script run; torch 2.13 crashes (SIGSEGV) decomposing a program with a fake constant."""
    script = """
        import torch

        from nets import Net


        class Grids(Net):
            def __init__(self):
                super().__init__()
                self.grid = [torch.zeros(1, 8)]

            def forward(self, x):
                return super().forward(x) + self.grid[0].sum()


        torch.onnx.export(Grids().eval(), (torch.randn(2, 3, 16, 16),), "grids.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    res = _analyze(analyzer, root, "export.py", None)
    assert "OLX813" not in _codes(res), res.violations
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert data["model"]["class"].endswith("Grids")
    assert "OLX802" in _codes(res), res.violations


def test_printing_a_tensor_value_with_a_format_goes_on(analyzer: Any, tmp_path: Path) -> None:
    """`print(f"range: [{out.min():.4f}, ...]")` before the export: a real run prints it;
    the analysis has no values, prints a placeholder and goes on to the export."""
    script = """
        import torch

        from nets import Net

        model = Net().eval()
        x = torch.randn(2, 3, 16, 16)
        out = model.fc(model.conv(x).mean((2, 3)))
        print(f"Output range: [{out.min():.4f}, {out.max():.4f}]")
        torch.onnx.export(model, (x,), "net.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    res = _analyze(analyzer, root, "export.py", None)
    _analysed(res)
    assert "OLX816" not in _codes(res), res.violations


def test_an_image_that_is_not_here_stops_at_its_read(analyzer: Any, tmp_path: Path) -> None:
    """cv2.imread returns None for a missing file and the script fails later on
    `'NoneType' object has no attribute 'shape'`: the stop is at the read, and says why."""
    script = """
        import cv2
        import torch

        from nets import Net

        image = cv2.imread("./data/test.images/img_1.jpg")
        h, w = image.shape[:2]
        torch.onnx.export(Net().eval(), (torch.randn(2, 3, h, w),), "net.onnx")
    """
    # cv2 as it behaves: None for a file that is not there
    cv2 = "def imread(filename, flags=1):\n    return None\n"
    root = _project(tmp_path, {"export.py": script, "cv2.py": cv2})
    stop = _stop(_analyze(analyzer, root, "export.py", None))
    assert stop.line == line_of(root / "export.py", "cv2.imread"), stop
    assert "img_1.jpg" in stop.message and "not here" in stop.message, stop.message


def test_an_error_a_decorator_caught_is_named_when_the_export_is_not_reached(
    analyzer: Any, tmp_path: Path
) -> None:
    """ByteTrack's `@logger.catch def main()`: loguru prints the traceback and the script
    ends; the stop says what was caught, not only that the call was not reached."""
    script = """
        import sys
        import traceback

        import torch

        from nets import Net


        def catch(fn):
            def run():
                try:
                    return fn()
                except Exception:
                    traceback.print_exc(file=sys.stderr)

            return run


        @catch
        def main():
            exp = {"name": "yolox_s"}
            model = Net().eval()
            depth = exp["depth"]
            torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "net.onnx")


        main()
    """
    root = _project(tmp_path, {"export.py": script})
    stop = _stop(_analyze(analyzer, root, "export.py", line_of(root / "export.py", "onnx.export")))
    assert "ran to its end" in stop.message
    assert "KeyError: 'depth'" in stop.message, stop.message


def test_a_hydra_config_gets_placeholders_for_a_required_checkpoint_and_output(
    analyzer: Any, tmp_path: Path
) -> None:
    """`ckpt_path: ???` and `output: ???` in a hydra config, not given on the command line:
    filled as argparse's and click's are; a required model name still stops where read."""
    pytest.importorskip("hydra")
    script = """
        import os

        import hydra
        import torch

        from nets import Net


        @hydra.main(config_path="conf", config_name="export", version_base=None)
        def main(cfg):
            assert os.path.isfile(cfg.ckpt_path)
            model = Net()
            model.load_state_dict(torch.load(cfg.ckpt_path))
            arch = cfg.model.arch
            torch.onnx.export(model.eval(), (torch.randn(2, 3, 16, 16),), cfg.output)


        if __name__ == "__main__":
            main()
    """
    config = "ckpt_path: ???\noutput: ???\nmodel:\n  arch: ???\n"
    root = _project(tmp_path, {"tools/export.py": script, "tools/conf/export.yaml": config})
    call = line_of(root / "tools/export.py", "torch.onnx.export")
    stop = _stop(_analyze(analyzer, root, "tools/export.py", call))
    assert "model.arch" in stop.message and "ckpt_path" not in stop.message, stop.message
    res = _analyze(analyzer, root, "tools/export.py", call, ("model.arch=small",))
    data = _analysed(res)
    assert {"ckpt_path", "output"} <= set(data["script_filled"]), data["script_filled"]


def test_a_value_read_from_a_checkpoint_that_is_not_here_says_so(
    analyzer: Any, tmp_path: Path
) -> None:
    """monodepth2 reads the image size from its encoder checkpoint: with the file absent
    the stop says that the script uses a value from the checkpoint, not a TypeError about
    an `EmptyCheckpoint`."""
    script = """
        import torch

        from nets import Net

        loaded = torch.load("models/mono_640x192/encoder.pth", map_location="cpu")
        height, width = loaded["height"], loaded["width"]
        model = Net()
        model.load_state_dict({k: v for k, v in loaded.items() if k in model.state_dict()})
        torch.onnx.export(model.eval(), (torch.ones(1, 3, height, width),), "depth.onnx")
    """
    root = _project(tmp_path, {"export.py": script})
    stop = _stop(_analyze(analyzer, root, "export.py", None))
    assert stop.line == line_of(root / "export.py", "torch.ones(1, 3"), stop
    assert "EmptyCheckpoint" not in stop.message, stop.message
    assert "encoder.pth')['width']" in stop.message, stop.message  # the value read last
    assert "value it reads from the checkpoint" in stop.message, stop.message


def test_the_capture_imports_nothing_the_script_would_see(analyzer: Any, tmp_path: Path) -> None:
    """ultralytics reads `torch.onnx.utils._constants.ONNX_MAX_OPSET`: in torch 2.13 the
    attribute is the TorchScript exporter's utils until something imports the module
    `torch.onnx.utils`, a shim without `_constants`. The capture must not import it."""
    script = """
        import torch

        from nets import Net

        opset = torch.onnx.utils._constants.ONNX_MAX_OPSET - 1
        x = torch.randn(2, 3, 16, 16)
        torch.onnx.export(Net().eval(), (x,), "net.onnx", opset_version=opset)
    """
    root = _project(tmp_path, {"export.py": script})
    _analysed(_analyze(analyzer, root, "export.py", None))


SCATTER_MEAN_SCRIPT = """
import torch


class ScatterMean(torch.nn.Module):
    def forward(self, x, index):
        base = torch.zeros(4, x.shape[1])
        return base.scatter_reduce(0, index, x, reduce="mean", include_self=False) + 1


if __name__ == "__main__":
    x = torch.randn(6, 3)
    index = torch.tensor([[0, 0, 0], [1, 1, 1], [0, 0, 0], [2, 2, 2], [3, 3, 3], [1, 1, 1]])
    torch.onnx.export(ScatterMean(), (x, index), "mean.onnx", dynamo=True)
"""


def test_verify_runs_a_script_target_with_real_tensors(analyzer: Any, tmp_path: Path) -> None:
    """`--verify` on a script: the script is run again up to its export call with real
    tensors (it cannot be imported as a factory's module: it runs as `__main__`), and
    onnxruntime is compared with eager. It was "verify phase failed: ModuleNotFoundError"
    (OLX803) on every script."""
    from dataclasses import replace

    from onnxlint.deep.scripts import script_target

    root = _project(tmp_path, {"export.py": SCATTER_MEAN_SCRIPT})
    script = root / "export.py"
    target = replace(
        script_target(script, line_of(script, "torch.onnx.export("), root), verify=True
    )
    res = analyzer.analyze(target, use_cache=False)
    assert "verify" not in (res.data or {}).get("skipped", {}), res.data.get("skipped")
    assert not any("verify phase failed" in v.message for v in res.violations), res.violations
    [v] = [v for v in res.violations if v.code == "OLX810"]
    assert v.line == line_of(script, "scatter_reduce("), v


TENSOR_OF_TENSORS = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.up = nn.Parameter(torch.tensor([0.5]), requires_grad=False)
        self.scale = nn.Parameter(torch.tensor([4.0]), requires_grad=False)
        self.proj = nn.Linear(8, 8)

    def deploy(self):
        bound = (abs(self.up[0]) * abs(self.scale)).item()
        values = [-bound, torch.zeros_like(self.up[0][None]), bound]
        self.register_buffer("project", torch.tensor(values, dtype=self.up.dtype))
        return self

    def forward(self, x):
        return self.proj(x) * self.project.sum()


model = Head().deploy().eval()
torch.onnx.export(model, (torch.randn(2, 8),), "head.onnx")
"""


def test_a_tensor_made_of_a_list_with_tensors_in_it_is_made(analyzer: Any, tmp_path: Path) -> None:
    # D-FINE's deploy step (`weighting_function(..., deploy=True)`):
    # torch.tensor([-b, ..., torch.zeros_like(up[0][None]), ..., b]). A real run builds it;
    # on the run's fake tensors torch raised "its data is not allocated yet" and the
    # analysis stopped (OLX812) before the export call, which torch 2.13 exports.
    root = _project(tmp_path, {"export.py": TENSOR_OF_TENSORS})
    res = _analyze(analyzer, root, "export.py", None)
    assert "OLX812" not in _codes(res), res.violations
    assert res.outcome == "ok", res.violations


DROP_PATH_SCHEDULE = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, drop):
        super().__init__()
        self.drop = drop
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if self.training and self.drop > 0.1:
            keep = torch.randperm(x.shape[0])[: max(int(x.shape[0] * (1 - self.drop)), 1)]
            x = x.index_add(0, keep, self.fc(x[keep]))
        else:
            x = x + self.fc(x)
        return x


class Net(nn.Module):
    def __init__(self, depth=4, drop_path_rate=0.0):
        super().__init__()
        rates = [r.item() for r in torch.linspace(0, drop_path_rate, depth)]
        self.blocks = nn.Sequential(*[Block(r) for r in rates])

    def forward(self, x):
        return self.blocks(x)


torch.onnx.export(Net(), (torch.randn(2, 8),), "net.onnx")
"""


def test_a_schedule_made_from_numbers_has_its_values(analyzer: Any, tmp_path: Path) -> None:
    # Depth-Anything-ONNX's dynamo.py (DINOv2 blocks, exported without eval()): the blocks'
    # stochastic-depth rates come from `[x.item() for x in torch.linspace(0, rate, depth)]`.
    # The run's fake linspace had no values, the rates became a placeholder above 0.1, and
    # the training-only branch with torch.randperm was analysed: "fails at step 3/3" (no
    # ONNX translation of randperm), where torch 2.13 exports the model (rate 0: the
    # plain branch). Checked with torch 2.13.
    root = _project(tmp_path, {"export.py": DROP_PATH_SCHEDULE})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "ok", res.violations


TWO_EXPORTS = """
import argparse

import torch
import torch.nn as nn

parser = argparse.ArgumentParser()
parser.add_argument("--format", default="onnx")
args = parser.parse_args()
model = nn.Linear(4, 4).eval()
if args.format == "onnx":
    torch.onnx.export(model, (torch.randn(2, 4),), "m.onnx")
else:
    torch.export.save(torch.export.export(model, (torch.randn(2, 4),)), "m.pt2")
"""


def test_an_export_call_another_path_of_the_command_line_takes_is_not_reached(
    tmp_path: Path,
) -> None:
    # Depth-Anything-ONNX's dynamo.py: `export --format onnx` reaches one of its three export
    # calls; the other two were "cannot be analysed" errors (OLX812) and the command exited
    # 1, though the script did what it was asked. They are said as not reached by this run
    # (information), and the exit code is the reached call's.
    root = _project(tmp_path, {"export.py": TWO_EXPORTS})
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "onnxlint",
            "analyze",
            "export.py",
            "--no-cache",
            "--format",
            "json",
            "--",
            "--format",
            "onnx",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    data = json.loads(proc.stdout)
    outcomes = sorted(t["status"] for t in data["targets"])
    assert outcomes == ["not reached by this run", "ok"], proc.stdout
    (finding,) = data["violations"]
    assert finding["code"] == "OLX812" and finding["severity"] == "info"
    assert "not reached by this run" in finding["message"]
    assert proc.returncode == 0, proc.stderr


def test_a_conversion_to_an_opset_below_18_runs_on_the_small_weights(
    analyzer: Any, tmp_path: Path
) -> None:
    # onnxscript's C API call serialises the weights up to 1000 elements (batch norm's), which
    # have no values here: the conversion failed with "SerdeError: Error calling
    # serialize_model_into" and OLX827 said opset 18 would be written, where torch 2.13
    # writes the conv + batch-norm block at opset 17 (Depth-Anything at 17 too).
    root = _project(
        tmp_path, {"export.py": CONV_BN.replace("opset_version=11", "opset_version=17")}
    )
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "ok", res.violations


HUB_WEIGHTS = """
import torch
import torch.nn as nn
from huggingface_hub import hf_hub_download
from safetensors.torch import load_file

model = nn.Linear(4, 4)
path = hf_hub_download("onnxlint-tests/not-a-model", "model.safetensors")
model.load_state_dict(load_file(path))
torch.onnx.export(model.eval(), (torch.randn(2, 4),), "m.onnx")
"""


def test_pretrained_weights_from_the_hugging_face_hub_are_not_needed(
    analyzer: Any, tmp_path: Path
) -> None:
    # timm's onnx_export.py (`timm.create_model(name, pretrained=True)`): the weights come
    # from hf_hub_download, which fails with the network off; the run stopped there
    # ("LocalEntryNotFoundError"), where a real run with the weights exports.
    root = _project(tmp_path, {"export.py": HUB_WEIGHTS})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "ok", res.violations
    skipped = " ".join(s["what"] for s in (res.data or {}).get("script_skipped", []))
    assert "huggingface_hub download of weights" in skipped


FIXED_HEIGHT_BATCH_ONE = """
import torch
import torch.nn as nn


class Patches(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Conv2d(3, 8, 4, stride=4)

    def forward(self, x):
        B, C, H, W = x.shape
        torch._assert(H == 16, "height must be 16")
        return self.proj(x).flatten(2)


torch.onnx.export(
    Patches().eval(),
    (torch.randn(1, 3, 16, 16),),
    "p.onnx",
    input_names=["x"],
    dynamic_axes={"x": {0: "batch", 2: "height"}},
)
"""


def test_a_batch_one_example_is_not_blamed_when_torch_onnx_fails_on_another_dim(
    analyzer: Any, tmp_path: Path
) -> None:
    # timm's onnx_export.py --dynamic-size on a ViT (batch 1): torch 2.13 fails at step 1/3
    # on height and width only ("inferred a static shape of 224"); under torch.onnx.export's
    # settings the batch of 1 stays dynamic. The analysis's plain torch.export retry pinned
    # the batch too and reported it (a third OLX804 torch does not raise).
    root = _project(tmp_path, {"export.py": FIXED_HEIGHT_BATCH_ONE})
    res = _analyze(analyzer, root, "export.py", None)
    dims = [v for v in res.violations if v.code == "OLX804"]
    assert [("'height'" in v.message) for v in dims] == [True], res.violations


def test_a_removed_export_call_writes_no_file_at_another_opset(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOX's tools/export_onnx.py: `torch.onnx._export(..., opset_version=11)` raises
    # AttributeError on torch 2.13, so no file is written at all; OLX827 said it would be
    # written at opset 18 (the users' reports bench counted it false).
    text = CONV_BN.replace("torch.onnx.export(", "torch.onnx._export(")
    root = _project(tmp_path, {"export.py": text})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "fails at the script's own call", res.violations
    assert "OLX827" not in _codes(res), res.violations
    # but the advice to call torch.onnx.export says what that call would write
    (call,) = [v for v in res.violations if v.code == "OLX803"]
    notes = " ".join(call.notes)
    assert "once the call runs" in notes and "writes opset 18, not the requested 11" in notes
    assert "No Adapter" in notes, call.notes


def test_a_checkpoint_read_from_an_open_file_keeps_its_values(
    analyzer: Any, tmp_path: Path
) -> None:
    """Lightning's `load_from_checkpoint` hands torch.load an open (fsspec) file and builds
    the model from the checkpoint's `hyper_parameters` (piper's VITS export): an open file
    was read as an empty checkpoint, and the run stopped at the first number it held."""
    import torch

    root = _project(
        tmp_path,
        {
            "wide.py": """
                import torch.nn as nn

                class Wide(nn.Module):
                    def __init__(self, width):
                        super().__init__()
                        self.fc = nn.Linear(4, width)

                    def forward(self, x):
                        return self.fc(x)
            """,
            "export.py": """
                import torch

                from wide import Wide

                with open("model.ckpt", "rb") as fh:
                    ckpt = torch.load(fh, map_location="cpu")
                model = Wide(ckpt["hyper_parameters"]["width"])
                model.load_state_dict(ckpt["state_dict"])
                torch.onnx.export(model.eval(), (torch.randn(2, 4),), "wide.onnx")
            """,
        },
    )
    fc = torch.nn.Linear(4, 6)
    torch.save(
        {
            "hyper_parameters": {"width": 6},
            "state_dict": {f"fc.{k}": v for k, v in fc.state_dict().items()},
        },
        root / "model.ckpt",
    )
    res = _analyze(analyzer, root, "export.py", None)
    data = _analysed(res, "Wide")
    assert "OLX812" not in _codes(res), res.violations
    assert res.outcome == "ok", res.violations
    assert any("structure only" in s["what"] for s in data["script_skipped"]), data


def test_an_opset_found_past_a_data_dependent_stop_is_information(
    analyzer: Any, tmp_path: Path
) -> None:
    """piper's VITS export fails at step 1/3 at a data-dependent `assert`; the analysis
    traces on past it, and the opset the file would then be written at is what comes after
    the fix, not what torch does today (it writes no file)."""
    text = CONV_BN.replace(
        "return self.act(self.bn(self.conv(x)))",
        "y = self.act(self.bn(self.conv(x)))\n        if y.sum() > 0:\n            y = y * 2\n"
        "        return y",
    )
    root = _project(tmp_path, {"export.py": text})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    assert "OLX802" in _codes(res), res.violations
    (kept,) = [v for v in res.violations if v.code == "OLX827"]
    assert kept.severity.name == "INFO", kept
    assert kept.message.startswith("once torch.export gets past"), kept.message


DATA_DEPENDENT_BATCH_ONE = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 4, 1)

    def forward(self, x):
        keep = torch.nonzero(x[0, 0] > 0)  # data-dependent: how many steps are kept
        y = self.conv(x)
        if y.shape[0] == 1:
            y = y.reshape(1, 4, -1)
        return y * keep.shape[0]


example = torch.randn(1, 4, 16)
torch.onnx.export(
    Net().eval(),
    (example,),
    "net.onnx",
    input_names=["x"],
    output_names=["y"],
    dynamic_axes={"x": {0: "batch", 2: "time"}, "y": {0: "batch", 2: "time"}},
)
"""


def test_a_batch_one_example_is_blamed_in_a_model_with_data_dependent_sizes(
    analyzer: Any, tmp_path: Path
) -> None:
    """piper's VITS export: a batch-1 example on `dynamic_axes`' batch, and a model whose
    length depends on the data. torch 2.13 exports, and the file gives (1, 4, 32) at batch
    2 where eager gives (2, 4, 16). The eager probes at other sizes raised on `nonzero`
    (fake tensors without a ShapeEnv), so the analysis said "ok"."""
    root = _project(tmp_path, {"export.py": DATA_DEPENDENT_BATCH_ONE})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "exports, but with static dims that were asked to be dynamic"
    (dim,) = [v for v in res.violations if v.code == "OLX804"]
    assert dim.span.line == line_of(root / "export.py", "example = torch.randn"), dim
    assert "dim 'batch' (x.shape[0])" in dim.message, dim.message  # dynamic_axes' name
    assert "eager PyTorch gives 2 at batch=2, the export 1" in " ".join(dim.notes), dim.notes


def test_an_export_call_with_arguments_torch_no_longer_takes_writes_nothing(
    analyzer: Any, tmp_path: Path
) -> None:
    """Scripts written for older torch pass `use_external_data_format=` or
    `enable_onnx_checker=`: torch 2.13's torch.onnx.export raises TypeError at the call
    (the static OLX408 says so). The analysis dropped nothing and said "ok"."""
    import torch

    text = CONV_BN.replace('"b.onnx", ', '"b.onnx", enable_onnx_checker=False, ')
    root = _project(tmp_path, {"export.py": text})
    call = text.splitlines()[-1] if text.splitlines()[-1] else text.splitlines()[-2]
    with pytest.raises(TypeError, match="enable_onnx_checker"):
        exec(call, {"torch": torch, "m": torch.nn.Identity()})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "fails at the script's own call", res.violations
    (v,) = [v for v in res.violations if v.code == "OLX803"]
    assert "unexpected keyword argument 'enable_onnx_checker'" in v.message, v.message
    assert "writes opset 18, not the requested 11" in " ".join(v.notes), v.notes


def test_a_torch_export_in_training_mode_is_not_an_onnx_export_in_training_mode(
    analyzer: Any, tmp_path: Path
) -> None:
    """PT2E quantisation-aware training captures the model with torch.export.export in
    training mode on purpose: OLX830 is about the ONNX file, which that call does not write
    (torch.onnx.export of the same model in training mode gets it: the test beside it)."""
    # (a dropout: torch 2.13 writes BatchNorm with its running statistics in either mode)
    dropping = CONV_BN.replace(
        "return self.act(self.bn(self.conv(x)))",
        "return torch.nn.functional.dropout(self.act(self.bn(self.conv(x))), 0.2, self.training)",
    )
    text = dropping.replace("m = Block().eval()", "m = Block()").replace(
        'torch.onnx.export(m, (torch.randn(1, 3, 32, 32),), "b.onnx", opset_version=11)',
        "ep = torch.export.export(m, (torch.randn(2, 3, 32, 32),))",
    )
    assert "torch.export.export(m" in text and "Block().eval()" not in text
    root = _project(tmp_path, {"export.py": text})
    res = _analyze(analyzer, root, "export.py", None)
    assert "OLX830" not in _codes(res), res.violations
    onnx_text = dropping.replace("m = Block().eval()", "m = Block()")
    (tmp_path / "onnx").mkdir()
    onnx_root = _project(tmp_path / "onnx", {"export.py": onnx_text})
    res = _analyze(analyzer, onnx_root, "export.py", None)
    assert "OLX830" in _codes(res), res.violations
