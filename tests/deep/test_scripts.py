"""Analyze an export call with no set-up (issue 18): the user's own export script is run
under fake tensors up to its export call, in the real worker with real torch."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from .conftest import line_of

pytest.importorskip("torch")
pytestmark = [pytest.mark.deep]

NET = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        y = self.conv(x).mean((2, 3))
        if y.sum() > 0:  # data-dependent
            y = y * 2
        return self.fc(y)
"""

ARGPARSE_DEFAULTS = """
import argparse

import torch

from nets import Net


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--weights", default="runs/best.pt")
    p.add_argument("--out", default="net.onnx")
    a = p.parse_args()
    torch.manual_seed(0)
    model = Net()
    model.load_state_dict(torch.load(a.weights, map_location="cpu")["model"])
    model = model.cuda().eval()
    x = torch.randn(2, 3, 32, 32).to("cuda")
    torch.onnx.export(model, (x,), a.out, input_names=["x"], dynamic_axes={"x": {0: "batch"}})


if __name__ == "__main__":
    main()
"""

REQUIRED_ARG = """
import argparse

import torch

from nets import Net

p = argparse.ArgumentParser()
p.add_argument("--config", required=True, help="the model's config file")
p.add_argument("--checkpoint", required=True)
a = p.parse_args()
model = Net().eval()
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "out.onnx")
"""

# Required, but their values do not matter: where to write, and which weights to load.
REQUIRED_PATHS = """
import argparse
import os

import torch

from nets import Net

p = argparse.ArgumentParser()
p.add_argument("export_dir", help="Directory for exporting the onnx model.")
p.add_argument("--checkpoint", required=True, help="Path to model checkpoint (.ckpt)")
p.add_argument("--output-file", required=True, help="Path to output file (.onnx)")
a = p.parse_args()
assert os.path.isdir(a.export_dir) and a.output_file.endswith(".onnx")
model = Net()
model.load_state_dict(torch.load(a.checkpoint)["state_dict"])
torch.onnx.export(model.eval(), (torch.randn(2, 3, 16, 16),), a.output_file)
"""

TWO_CALLS = """
import torch

from nets import Net

if __name__ == "__main__":
    model = Net().eval()
    x = torch.randn(2, 3, 16, 16)
    torch.onnx.export(model, (x,), "a.onnx", dynamo=True)
    traced = torch.jit.trace(model, (x,))
    traced.save("a.pt")
"""

SWALLOWED = """
import torch

from nets import Net

try:
    torch.onnx.export(Net().eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
except BaseException as e:  # a script that catches everything still gets analysed
    print("export failed:", e)
"""

EP_THEN_ONNX = """
import torch
from torch.export import Dim

from nets import Net

model = Net().eval()
x = torch.randn(4, 3, 16, 16)
ep = torch.export.export(model, (x,), dynamic_shapes=({0: Dim("batch")},))
torch.onnx.export(ep, f="net.onnx")
"""

DATASET_FIRST = """
import os

import torch

from nets import Net

images = sorted(os.listdir("data/calibration"))
model = Net().eval()
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "net.onnx")
"""

DOWNLOAD = """
import urllib.request

import torch

from nets import Net

urllib.request.urlretrieve("http://example.invalid/weights.pt", "weights.pt")
torch.onnx.export(Net().eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
"""

EXPORTABLE = """
import torch


class Exportable(torch.onnx.ExportableModule):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(4, 4)

    def forward(self, x):
        return self.proj(x).view(2, 4)

    def example_arguments(self):
        return (torch.randn(2, 4),), None

    def dynamic_shapes(self):
        return ({0: "batch"},)
"""


def _project(tmp_path: Path, scripts: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    (root / "tools").mkdir(parents=True)
    (root / "nets.py").write_text(textwrap.dedent(NET).lstrip())
    for name, text in scripts.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def _analyze(analyzer: Any, root: Path, script: str, line: int | None, argv: tuple[str, ...] = ()):
    from onnxlint.deep.scripts import script_target

    target = script_target(root / script, line, root, argv)
    return analyzer.analyze(target, use_cache=False)


def _codes(result: Any) -> set[str]:
    return {v.code for v in result.violations}


def test_argparse_defaults_missing_checkpoint_and_cuda_are_no_obstacle(
    analyzer: Any, tmp_path: Path
) -> None:
    root = _project(tmp_path, {"tools/export.py": ARGPARSE_DEFAULTS})
    script = root / "tools" / "export.py"
    call = line_of(script, "torch.onnx.export(")
    res = _analyze(analyzer, root, "tools/export.py", call)
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    skipped = {s["what"].split(" (")[0] for s in data["script_skipped"]}
    assert {"torch.load", "load_state_dict", ".cuda()", '.to("cuda")'} <= skipped, skipped
    # the model's own problem is found at its line, and the dynamic_axes became a dynamic dim
    nets = root / "nets.py"
    at = {(Path(v.path).name, v.line) for v in res.violations if v.code == "OLX802"}
    assert ("nets.py", line_of(nets, "if y.sum() > 0")) in at, res.violations
    assert data["script_call"]["line"] == call


def test_required_argument_stops_at_parse_args_and_argv_fixes_it(
    analyzer: Any, tmp_path: Path
) -> None:
    root = _project(tmp_path, {"export.py": REQUIRED_ARG})
    script = root / "export.py"
    call = line_of(script, "torch.onnx.export(")
    res = _analyze(analyzer, root, "export.py", call)
    stop = [v for v in res.violations if v.code == "OLX812"]
    assert len(stop) == 1, res.violations
    assert stop[0].line == line_of(script, "p.parse_args()")
    # the config matters and stops the run; the checkpoint alone would have been filled
    assert "--config" in stop[0].message and "argv" in " ".join(stop[0].notes)
    res = _analyze(analyzer, root, "export.py", call, ("--config", "net.yaml"))
    assert "load" not in ((res.data or {}).get("failed") or {}), res.violations
    assert "OLX802" in _codes(res)
    skipped = {s["what"].split(" (")[0] for s in (res.data or {})["script_skipped"]}
    assert "required argument --checkpoint" in skipped, skipped


def test_required_output_and_checkpoint_arguments_are_filled(analyzer: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"tools/export.py": REQUIRED_PATHS})
    script = root / "tools" / "export.py"
    res = _analyze(analyzer, root, "tools/export.py", line_of(script, "torch.onnx.export("))
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert "OLX802" in _codes(res)
    parse_line = line_of(script, "p.parse_args()")
    filled = {
        s["what"].split(" (")[0]: s["line"]
        for s in data["script_skipped"]
        if s["what"].startswith("required argument")
    }
    assert filled == {
        "required argument export_dir": parse_line,
        "required argument --checkpoint": parse_line,
        "required argument --output-file": parse_line,
    }, data["script_skipped"]
    # and, for the editor's message, the arguments themselves
    assert sorted(data["script_filled"]) == ["--checkpoint", "--output-file", "export_dir"]
    # nothing was written in the project, and the temporary folder is gone
    assert sorted(p.name for p in root.rglob("*") if p.suffix == ".onnx") == []


def test_a_filled_checkpoint_the_script_needs_stops_with_what_to_do(
    analyzer: Any, tmp_path: Path
) -> None:
    # Lightning's load_from_checkpoint reads the model's config from the file: the
    # placeholder cannot serve, and the stop says which argument to set.
    script = REQUIRED_PATHS.replace(
        'model.load_state_dict(torch.load(a.checkpoint)["state_dict"])',
        "config = open(a.checkpoint).read()",
    )
    root = _project(tmp_path, {"tools/export.py": script})
    path = root / "tools" / "export.py"
    res = _analyze(analyzer, root, "tools/export.py", line_of(path, "torch.onnx.export("))
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    assert stop.line == line_of(path, "config = open(a.checkpoint)"), stop
    assert "<the value given to the required --checkpoint>" in stop.message, stop.message
    assert "onnxlint-script-args" not in stop.message
    assert "a real --checkpoint" in " ".join(stop.notes), stop.notes


def test_a_stop_raised_in_a_library_is_at_the_scripts_line_that_called_it(
    analyzer: Any, tmp_path: Path
) -> None:
    # insightface's arcface_torch/torch2onnx.py: `img.astype(np.float)` raises in numpy's
    # own `__getattr__` (numpy 2 removed the alias). The line to change is the script's;
    # numpy's line stays in the chain, as related information.
    script = """
    import numpy as np
    import torch

    from nets import Net


    def example():
        img = np.zeros((3, 8, 8)).astype(np.float)
        return torch.from_numpy(img).unsqueeze(0).float()


    if __name__ == "__main__":
        torch.onnx.export(Net().eval(), (example(),), "net.onnx", dynamo=True)
    """
    root = _project(tmp_path, {"export.py": script})
    path = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(path, "torch.onnx.export("))
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    assert Path(stop.path).resolve() == path.resolve(), stop
    assert stop.line == line_of(path, "astype(np.float)"), stop
    assert "module 'numpy' has no attribute 'float'" in stop.message
    related = [(Path(r.path).name, r.line) for r in stop.related]
    assert ("__init__.py", stop.line) not in related
    assert any(Path(r.path).parts[-2:-1] == ("numpy",) for r in stop.related), stop.related
    assert ("export.py", stop.line) not in related  # (its own place is not a link)


def test_two_export_calls_each_analysed_and_the_first_is_skipped_for_the_second(
    analyzer: Any, tmp_path: Path
) -> None:
    from onnxlint.deep.scripts import script_targets

    root = _project(tmp_path, {"two.py": TWO_CALLS})
    script = root / "two.py"
    targets = script_targets(script, root)
    lines = [t.script_line for t in targets]
    assert lines == [line_of(script, "torch.onnx.export("), line_of(script, "torch.jit.trace(")]
    results = [analyzer.analyze(t, use_cache=False) for t in targets]
    for r in results:
        assert "load" not in ((r.data or {}).get("failed") or {}), r.violations
    second = results[1].data or {}
    assert second["script_call"]["name"] == "torch.jit.trace"
    assert [c["line"] for c in second["script_passed"]] == [lines[0]]


ONE_HELPER_TWO_MODELS = """
import torch
import torch.nn as nn


class Encoder(nn.Module):
    def forward(self, x):
        return x.relu()


class Decoder(nn.Module):
    def forward(self, x, size):
        if size.item() > 1:  # data-dependent: fails at step 1/3
            return x * 2
        return x


def export_onnx(model, inputs, path):
    torch.onnx.export(model.eval(), inputs, path, dynamo=True)


def main():
    export_onnx(Encoder(), (torch.randn(2, 4),), "encoder.onnx")
    export_onnx(Decoder(), (torch.randn(2, 4), torch.tensor(3)), "decoder.onnx")


if __name__ == "__main__":
    main()
"""


def test_a_helper_that_exports_each_model_is_a_target_per_model(
    analyzer: Any, tmp_path: Path
) -> None:
    # EfficientSAM's export_to_onnx.py: one `export_onnx(model, ...)` exports the model, its
    # encoder and its decoder; the decoder's export fails in torch 2.13. Each caller's line
    # is a target of its own, so the decoder is analysed too, not only the first model.
    from onnxlint.deep.scripts import script_targets

    root = _project(tmp_path, {"two_models.py": ONE_HELPER_TWO_MODELS})
    script = root / "two_models.py"
    targets = script_targets(script, root)
    lines = [t.script_line for t in targets]
    assert lines == [
        line_of(script, "export_onnx(Encoder()"),
        line_of(script, "export_onnx(Decoder()"),
    ]
    encoder, decoder = (analyzer.analyze(t, use_cache=False) for t in targets)
    assert encoder.outcome.startswith("ok") or encoder.outcome.startswith("exports"), (
        encoder.outcome,
        encoder.violations,
    )
    assert decoder.outcome == "fails at step 1/3 (torch.export)", (
        decoder.outcome,
        decoder.violations,
    )
    (stop,) = [v for v in decoder.violations if v.code == "OLX802"]
    assert stop.line == line_of(script, "if size.item() > 1")


LOOP_OF_MODELS = """
import torch
import torch.nn as nn


class Backbone(nn.Module):
    def forward(self, x):
        return x.relu()


class Head(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: this model's export fails at step 1/3
            return x * 2
        return x


def export_onnx(model, inputs, path):
    torch.onnx.export(model.eval(), inputs, path, dynamo=True)


def main():
    models = {"backbone": Backbone(), "head": Head(), "backbone2": Backbone()}
    for name, model in models.items():
        export_onnx(model, (torch.randn(2, 4),), f"{name}.onnx")


if __name__ == "__main__":
    main()
"""


def test_an_export_call_in_a_loop_is_analysed_for_each_model_class_it_exports(
    analyzer: Any, tmp_path: Path
) -> None:
    # One line exports every model of a dict (torch 2.13 writes backbone.onnx, then fails
    # on Head's `if`). The run captured the first pass only and said "ok, 0 findings": the
    # later passes' models are analysed too, each class once.
    root = _project(tmp_path, {"export_all.py": LOOP_OF_MODELS})
    script = root / "export_all.py"
    call = line_of(script, "export_onnx(model, (")
    result = _analyze(analyzer, root, "export_all.py", call)
    assert result.outcome == "fails at step 1/3 (torch.export)", (result.outcome, result.violations)
    (stop,) = [v for v in result.violations if v.code == "OLX802"]
    assert stop.line == line_of(script, "if x.sum() > 0")
    assert stop.notes[0] == f"in the pass of the loop at line {call} that exports `Head`"
    assert (result.data or {})["script_loop"] == (
        f"the export call at line {call} is in the loop at line {call - 1}: of the 3 passes "
        "the run made, each model of another structure was analysed (`Backbone`, `Head`)"
    )


SPLIT_SEQUENTIAL = """
import torch
import torch.nn as nn


class Gate(nn.Module):
    def forward(self, x):
        if x.mean() > 0:
            return x
        return -x


full = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), Gate(), nn.Linear(4, 4)).eval()
x = torch.randn(1, 4)
for i, chunk in enumerate([full[:2], full[2:]], 1):
    torch.onnx.export(chunk, (x,), f"chunk{i}.onnx", dynamo=True)
    x = chunk(x)
"""


def test_the_chunks_of_a_split_sequential_in_a_loop_are_each_analysed(
    analyzer: Any, tmp_path: Path
) -> None:
    # DNNPartitioning's split_ResNet50.py exports each chunk of a split model in a loop: every
    # chunk is an nn.Sequential, told apart by its modules. torch 2.13 fails on the second.
    root = _project(tmp_path, {"split.py": SPLIT_SEQUENTIAL})
    script = root / "split.py"
    call = line_of(script, "torch.onnx.export(chunk")
    result = _analyze(analyzer, root, "split.py", call)
    assert result.outcome == "fails at step 1/3 (torch.export)", (result.outcome, result.violations)
    (stop,) = [v for v in result.violations if v.code == "OLX802"]
    assert stop.line == line_of(script, "if x.mean() > 0")
    assert stop.notes[0] == (
        f"in the pass of the loop at line {call} that exports `Sequential` (pass 2)"
    )
    assert (result.data or {})["script_loop"].endswith(
        "(`Sequential` (pass 1), `Sequential` (pass 2))"
    )


SAME_CLASS_LOOP = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def forward(self, x):
        return x.relu()


class Other(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x * 2
        return x


for batch in (1, 2, 4):
    torch.onnx.export(Net().eval(), (torch.randn(batch, 4),), f"net{batch}.onnx", dynamo=True)
torch.onnx.export(Other().eval(), (torch.randn(2, 4),), "other.onnx", dynamo=True)
"""


def test_a_loop_over_one_model_class_is_analysed_once_and_ends_at_the_next_call(
    analyzer: Any, tmp_path: Path
) -> None:
    # Negative: the loop exports one class (at three batch sizes), so there is nothing more
    # to analyse and no note; the run ends at the export call after the loop (another
    # target's line), whose model is not this target's.
    from onnxlint.deep.worker.script_loop import loop_around

    root = _project(tmp_path, {"export_sizes.py": SAME_CLASS_LOOP})
    script = root / "export_sizes.py"
    call = line_of(script, "torch.onnx.export(Net()")
    assert loop_around(script.read_text(), call) == call - 1
    assert loop_around(script.read_text(), line_of(script, "torch.onnx.export(Other()")) is None
    result = _analyze(analyzer, root, "export_sizes.py", call)
    assert result.outcome == "ok", (result.outcome, result.violations)
    assert not {"OLX801", "OLX802"} & _codes(result)
    assert "script_loop" not in (result.data or {})


# The start of the scripts below: an export helper that reads back the file it exports (as
# EfficientSAM's does), so the analysis's own run stops after the first export call.
READ_BACK_PRELUDE = """
import onnxruntime
import torch
import torch.nn as nn


class First(nn.Module):
    def forward(self, x):
        return x.relu() + 1


def export_onnx(model, output, inputs):
    torch.onnx.export(model.eval(), inputs, output, dynamo=True)
    session = onnxruntime.InferenceSession(output)
    session.run(None, {"x": inputs[0].numpy()})
"""


EACH_FILE_READ_BACK = f"""{READ_BACK_PRELUDE}

class Second(nn.Module):
    def forward(self, x):
        return x.sigmoid() * 2


class Third(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: fails at step 1/3
            return x * 2
        return x


def main():
    export_onnx(First(), "first.onnx", (torch.randn(2, 4),))
    export_onnx(Second(), "second.onnx", (torch.randn(2, 4),))
    export_onnx(Third(), "third.onnx", (torch.randn(2, 4),))
    x = torch.randn(2, 4)
    export_onnx(Third(), "local.onnx", (x,))


if __name__ == "__main__":
    main()
"""


def test_a_call_after_the_run_reads_a_file_it_did_not_write_is_made_directly(
    analyzer: Any, tmp_path: Path
) -> None:
    # EfficientSAM's export_to_onnx.py: main() calls one helper per model, and the helper
    # opens the file it exported in onnxruntime. The analysis writes no file, so every
    # target after the first was "not reached by this run" (the decoder's real failure was
    # never found). The caller's statement is made directly, after the script runs as an
    # imported module; one that needs a local of main() is still not reached.
    from onnxlint.deep.scripts import script_targets

    root = _project(tmp_path, {"export.py": EACH_FILE_READ_BACK})
    script = root / "export.py"
    by_line = {t.script_line: t for t in script_targets(script, root)}
    second, third, local = (
        line_of(script, f"export_onnx({n}")
        for n in ("Second()", 'Third(), "third', 'Third(), "local')
    )
    assert sorted(by_line) == [line_of(script, "export_onnx(First()"), second, third, local]
    session = line_of(script, "onnxruntime.InferenceSession(")
    export = line_of(script, "torch.onnx.export(")
    said = (
        f"directly: the script's run stopped at line {session} reading 'first.onnx', the file "
        f"the export call at line {export} writes, which the analysis does not write; the "
        "statements of `main()` before it did not run"
    )

    res = analyzer.analyze(by_line[second], use_cache=False)
    assert res.outcome == "ok", (res.outcome, res.violations)
    data = res.data or {}
    assert (
        data["script_direct"] == f"analysed by calling `export_onnx(...)` at line {second} {said}"
    )
    assert data["model"]["class"].endswith("Second")

    res = analyzer.analyze(by_line[third], use_cache=False)
    assert res.outcome == "fails at step 1/3 (torch.export)", (res.outcome, res.violations)
    assert (res.data or {})["script_direct"].startswith(
        f"analysed by calling `export_onnx(...)` at line {third} directly"
    )
    (stop,) = [v for v in res.violations if v.code == "OLX802"]
    assert stop.line == line_of(script, "if x.sum() > 0")

    res = analyzer.analyze(by_line[local], use_cache=False)
    assert res.outcome == "not reached by this run", (res.outcome, res.violations)
    assert "script_direct" not in (res.data or {})
    (stop,) = res.violations
    assert stop.code == "OLX812" and stop.line == local
    assert stop.message == (
        f"target 'export.py:{local}': not reached by this run: the script made the export call "
        f"at line {export}, then stopped at line {session} reading 'first.onnx', the file that "
        "call writes, which the analysis does not write"
    )


EACH_IN_ITS_AUTOGRAD_MODE = f"""{READ_BACK_PRELUDE}

class NoGradOnly(nn.Module):
    def forward(self, x):
        if torch.is_grad_enabled():
            raise RuntimeError("NoGradOnly is exported under torch.no_grad() only")
        return x.sigmoid() * 2


class InferenceOnly(nn.Module):
    def forward(self, x):
        if not torch.is_inference_mode_enabled():
            raise RuntimeError("InferenceOnly is exported under torch.inference_mode() only")
        return x.tanh() * 3


def main():
    export_onnx(First(), "first.onnx", (torch.randn(2, 4),))
    with torch.no_grad():
        export_onnx(NoGradOnly(), "no_grad.onnx", (torch.randn(2, 4),))
    log = "export.log"
    with open(log, "w"), torch.inference_mode():
        export_onnx(InferenceOnly(), "inference.onnx", (torch.randn(2, 4),))


if __name__ == "__main__":
    main()
"""


def test_a_call_made_directly_keeps_the_with_blocks_it_is_written_in(
    analyzer: Any, tmp_path: Path
) -> None:
    # The direct call was made outside `with torch.no_grad():` / `torch.inference_mode()`,
    # so a model whose forward depends on the autograd mode was analysed in another one
    # than the script's (here it raised; torch 2.13's real run of the script exports all
    # three). The blocks made of module-level names are entered around the call; one that
    # reads a local of main() is not, and the note says so.
    import subprocess
    import sys

    from onnxlint.deep.scripts import script_targets

    root = _project(tmp_path, {"export.py": EACH_IN_ITS_AUTOGRAD_MODE})
    script = root / "export.py"
    real = subprocess.run(
        [sys.executable, str(script)], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert real.returncode == 0, real.stderr[-3000:]
    assert (root / "no_grad.onnx").is_file() and (root / "inference.onnx").is_file()
    for name in ("first.onnx", "no_grad.onnx", "inference.onnx"):
        for made in root.glob(f"{name}*"):
            made.unlink()  # the analysis's own run must stop reading them back

    by_line = {t.script_line: t for t in script_targets(script, root)}
    no_grad, inference = (line_of(script, f"export_onnx({n}") for n in ("NoGrad", "Inference"))

    res = analyzer.analyze(by_line[no_grad], use_cache=False)
    assert res.outcome == "ok", (res.outcome, res.violations)
    assert (res.data or {})["script_direct"].startswith(
        f"analysed by calling `export_onnx(...)` at line {no_grad} directly, inside "
        "`with torch.no_grad()`: the script's run stopped at line "
    )

    res = analyzer.analyze(by_line[inference], use_cache=False)
    assert res.outcome == "ok", (res.outcome, res.violations)
    said = (res.data or {})["script_direct"]
    assert said.startswith(
        f"analysed by calling `export_onnx(...)` at line {inference} directly, inside "
        "`with torch.inference_mode()`: "
    ), said
    assert said.endswith(
        "the statements of `main()` before it did not run, nor was `with open(log, 'w')` "
        "around it entered"
    ), said


EACH_FILE_READ_BACK_IN_THE_MAIN_BLOCK = f"""{READ_BACK_PRELUDE}

class Second(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: fails at step 1/3
            return x * 2
        return x


if __name__ == "__main__":
    export_onnx(First(), "first.onnx", (torch.randn(2, 4),))
    with torch.no_grad():
        export_onnx(Second(), "second.onnx", (torch.randn(2, 4),))
    x = torch.randn(2, 4)
    export_onnx(Second(), "local.onnx", (x,))
"""


def test_a_call_in_the_main_block_after_the_run_stopped_is_made_directly(
    analyzer: Any, tmp_path: Path
) -> None:
    # As above, with the calls written in the `if __name__ == "__main__":` block: one that
    # reads only names bound before the block is made after the script runs as an imported
    # module (the block does not run); one that reads a name the block binds is still not
    # reached.
    from onnxlint.deep.scripts import script_targets

    root = _project(tmp_path, {"export.py": EACH_FILE_READ_BACK_IN_THE_MAIN_BLOCK})
    script = root / "export.py"
    by_line = {t.script_line: t for t in script_targets(script, root)}
    second, local = (line_of(script, f"export_onnx(Second(), {n}") for n in ('"s', '"l'))
    assert sorted(by_line) == [line_of(script, "export_onnx(First()"), second, local]
    session = line_of(script, "onnxruntime.InferenceSession(")
    export = line_of(script, "torch.onnx.export(")

    res = analyzer.analyze(by_line[second], use_cache=False)
    assert res.outcome == "fails at step 1/3 (torch.export)", (res.outcome, res.violations)
    assert (res.data or {})["script_direct"] == (
        f"analysed by calling `export_onnx(...)` at line {second} directly, inside `with "
        f"torch.no_grad()`: the script's run stopped at line {session} reading 'first.onnx', "
        f"the file the export call at line {export} writes, which the analysis does not "
        "write; the statements of the `__main__` block before it did not run"
    )
    (stop,) = [v for v in res.violations if v.code == "OLX802"]
    assert stop.line == line_of(script, "if x.sum() > 0")

    res = analyzer.analyze(by_line[local], use_cache=False)
    assert res.outcome == "not reached by this run", (res.outcome, res.violations)
    assert "script_direct" not in (res.data or {})
    (stop,) = res.violations
    assert stop.code == "OLX812" and stop.line == local
    assert stop.message == (
        f"target 'export.py:{local}': not reached by this run: the script made the export call "
        f"at line {export}, then stopped at line {session} reading 'first.onnx', the file that "
        "call writes, which the analysis does not write"
    )


SAVE_INTO_AN_OPEN_FILE = """
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        return x.relu()


if __name__ == "__main__":
    with open("net.onnx", "wb") as f:
        torch.onnx.export(Net().eval(), (torch.randn(2, 4),), f, EXTRA)
"""


@pytest.mark.parametrize("extra", ["dynamo=True", "dynamo=True, external_data=False"])
def test_an_open_file_as_f_fails_at_the_save_unless_external_data_is_off(
    analyzer: Any, tmp_path: Path, extra: str
) -> None:
    # EfficientSAM's export_to_onnx.py: `with open(output, "wb") as f: torch.onnx.export(
    # ..., f, ...)`. torch 2.13 exports, then raises TypeError at the save ("expected str,
    # bytes or os.PathLike object, not BufferedWriter"); with external_data=False it saves
    # into the file (both measured).
    root = _project(tmp_path, {"save.py": SAVE_INTO_AN_OPEN_FILE.replace("EXTRA", extra)})
    script = root / "save.py"
    res = _analyze(analyzer, root, "save.py", line_of(script, "torch.onnx.export("))
    said = [v for v in res.violations if "saves to a path" in v.message]
    if "external_data=False" in extra:
        assert not said and res.outcome == "ok", (res.outcome, res.violations)
        return
    assert res.outcome == "exports, but the script's call fails at the save", res.outcome
    (found,) = said
    assert found.code == "OLX803" and found.line == line_of(script, "torch.onnx.export(")
    assert "not BufferedWriter" in found.message


def test_torch_export_then_onnx_export_of_the_program(analyzer: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"ep.py": EP_THEN_ONNX})
    script = root / "ep.py"
    res = _analyze(analyzer, root, "ep.py", line_of(script, "torch.onnx.export("))
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    # the module behind the ExportedProgram, with the program's dynamic batch
    assert data["model"]["class"].endswith("Net")
    assert data["model"]["inputs"] == ["Tensor[float32](4, 3, 16, 16)"]
    assert "OLX802" in _codes(res)


def test_a_script_that_catches_everything_is_still_analysed(analyzer: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"swallow.py": SWALLOWED})
    res = _analyze(analyzer, root, "swallow.py", None)
    assert "load" not in ((res.data or {}).get("failed") or {}), res.violations
    assert "OLX802" in _codes(res)


def test_dataset_read_stops_at_its_line_with_what_to_do(analyzer: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"calib.py": DATASET_FIRST})
    script = root / "calib.py"
    res = _analyze(analyzer, root, "calib.py", line_of(script, "torch.onnx.export("))
    stop = [v for v in res.violations if v.code == "OLX812"]
    assert len(stop) == 1 and stop[0].line == line_of(script, "os.listdir"), res.violations
    assert "FileNotFoundError" in stop[0].message
    assert "argv" in " ".join(stop[0].notes)


def test_a_download_fails_at_once_with_a_clear_message(analyzer: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"dl.py": DOWNLOAD})
    script = root / "dl.py"
    res = _analyze(analyzer, root, "dl.py", line_of(script, "torch.onnx.export("))
    stop = [v for v in res.violations if v.code == "OLX812"]
    assert len(stop) == 1 and stop[0].line == line_of(script, "urlretrieve"), res.violations
    assert res.wall < 60
    assert "network" in (stop[0].message + " ".join(stop[0].notes))


def test_a_call_the_script_never_reaches_is_said_at_its_line(analyzer: Any, tmp_path: Path) -> None:
    text = TWO_CALLS.replace('if __name__ == "__main__":', "if False:")
    root = _project(tmp_path, {"never.py": text})
    script = root / "never.py"
    call = line_of(script, "torch.onnx.export(")
    res = _analyze(analyzer, root, "never.py", call)
    stop = [v for v in res.violations if v.code == "OLX812"]
    assert len(stop) == 1 and stop[0].line == call
    assert "without reaching" in stop[0].message


def test_from_pretrained_of_a_local_folder_builds_from_its_config(
    analyzer: Any, tmp_path: Path
) -> None:
    transformers = pytest.importorskip("transformers")
    root = _project(tmp_path, {})
    folder = root / "checkpoints" / "tiny-bert"
    transformers.BertConfig(
        vocab_size=100,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=37,
    ).save_pretrained(folder)  # a config and no weights: they do not matter here
    (root / "bert_export.py").write_text(
        textwrap.dedent(
            """
            import torch
            from transformers import AutoModel

            model = AutoModel.from_pretrained("checkpoints/tiny-bert").eval()
            ids = torch.ones(2, 8, dtype=torch.long)
            torch.onnx.export(model, (ids,), "bert.onnx", dynamic_axes={"input_ids": {0: "b"}})
            """
        ).lstrip()
    )
    res = _analyze(analyzer, root, "bert_export.py", 6)
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert data["model"]["class"].endswith("BertModel")
    assert any(s["what"].startswith("from_pretrained") for s in data["script_skipped"])


def test_exportable_module_is_a_target_by_itself(analyzer: Any, tmp_path: Path) -> None:
    from onnxlint.deep.run import collect_targets

    root = _project(tmp_path, {"exportable.py": EXPORTABLE})
    targets, problems = collect_targets([], root, [root])
    assert not problems
    (t,) = [t for t in targets if t.origin == "exportable"]
    assert t.name == "exportable:Exportable"
    assert t.decl_line == line_of(root / "exportable.py", "class Exportable")
    res = analyzer.analyze(t, use_cache=False)
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    # `.view(2, 4)` pins the dim that dynamic_shapes() declares dynamic
    assert "OLX804" in _codes(res) or "OLX818" in _codes(res), res.violations


@pytest.mark.slow
def test_cli_analyze_script_and_check_deep_without_targets(cli: Any, tmp_path: Path) -> None:
    root = _project(tmp_path, {"two.py": TWO_CALLS})
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    r = cli("analyze", "two.py", "--format", "json", "--no-cache", cwd=root)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    onnx, trace = line_of(root / "two.py", "onnx.export("), line_of(root / "two.py", "jit.trace(")
    assert [t["target"] for t in out["targets"]] == [f"two.py:{onnx}", f"two.py:{trace}"]
    r = cli("analyze", f"two.py:{trace}", "--no-cache", cwd=root)
    assert r.returncode == 1, r.stderr
    # the outcome is of the dynamo export of the traced model, not of the trace (yolov7's
    # export.py traces the model that torch.onnx.export then fails on)
    head = f"two.py:{trace}: as torch.onnx.export (dynamo) would export the traced model: "
    assert r.stdout.startswith(head), r.stdout
    r = cli("analyze", "--format", "json", "--no-cache", cwd=root)  # nothing named, none declared
    assert "analysing the 2 export calls of 1 script" in r.stderr, r.stderr
    assert len(json.loads(r.stdout)["targets"]) == 2
    r = cli("analyze", "missing.py", cwd=root)
    assert r.returncode == 2 and "no such script" in r.stderr
    r = cli("check", "--deep", "--no-cache", "--format", "json", ".", cwd=root)
    assert "analysing the 2 export calls of 1 script" in r.stderr, r.stderr
    rows = json.loads(r.stdout)
    # the deep OLX802 at nets.py, on its own or folded into the static finding it confirms
    assert any(
        row["path"] == "nets.py"
        and (
            row["code"] == "OLX802"
            or any(r["message"].startswith("OLX802 (deep): ") for r in row.get("related") or [])
        )
        for row in rows
    ), rows
    (root / "pyproject.toml").write_text(
        '[project]\nname = "proj"\n\n[tool.onnxlint.deep]\nscripts = false\n'
    )
    r = cli("check", "--deep", "--no-cache", "--format", "json", ".", cwd=root)
    assert "analysing" not in r.stderr
    assert not [row for row in json.loads(r.stdout) if row["source"] == "deep"]


def test_reading_tensor_data_is_olx816_at_its_line(analyzer: Any, tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        {
            "stats.py": """
                import torch

                x = torch.randn(2, 3)
                mean = x.numpy().mean()
                torch.onnx.export(torch.nn.Linear(3, 3).eval(), (x,), "m.onnx")
            """
        },
    )
    res = _analyze(analyzer, root, "stats.py", None)
    (stop,) = [v for v in res.violations if v.code == "OLX816"]
    assert stop.line == line_of(root / "stats.py", "x.numpy()")
    assert "ONNXLINT_DEEP" in " ".join(stop.notes)


def test_a_package_module_script_runs_as_python_dash_m(analyzer: Any, tmp_path: Path) -> None:
    """`pkg/export.py` with `from .model import Net` is meant for `python -m pkg.export`."""
    root = _project(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/model.py": NET,
            "pkg/export.py": """
                import torch

                from .model import Net

                if __name__ == "__main__":
                    torch.onnx.export(Net().eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
            """,
        },
    )
    res = _analyze(analyzer, root, "pkg/export.py", None)
    assert "load" not in ((res.data or {}).get("failed") or {}), res.violations
    assert "OLX802" in _codes(res)


def test_a_torchscript_file_is_loaded_for_real(analyzer: Any, tmp_path: Path) -> None:
    import torch

    root = _project(
        tmp_path,
        {
            "ts.py": """
                import torch

                model = torch.jit.load("model.pt")
                torch.onnx.export(model, (torch.randn(1, 4),), "model.onnx")
            """
        },
    )
    torch.jit.save(torch.jit.script(torch.nn.Linear(4, 2)), str(root / "model.pt"))
    res = _analyze(analyzer, root, "ts.py", None)
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert any(s["what"].startswith("torch.jit.load") for s in data["script_skipped"])
    # what the dynamo exporter really says about a ScriptModule, at the export call
    (v,) = [v for v in res.violations if v.code == "OLX803"]
    assert "ScriptModule" in v.message and v.line == 4


def test_deepcopy_and_dtype_or_device_moves_of_the_fake_model(
    analyzer: Any, tmp_path: Path
) -> None:
    """`deepcopy(model).to(device)`, `.cpu()`, `.half()`, `.float()`: torch copies storages
    and swaps parameters in place, neither of which fake tensors allow; tied weights stay tied."""
    root = _project(
        tmp_path,
        {
            "copy.py": """
                from copy import deepcopy

                import torch

                from nets import Net

                net = Net()
                net.head = torch.nn.Linear(4, 4)
                net.tail = torch.nn.Linear(4, 4)
                net.tail.weight = net.head.weight
                model = deepcopy(net).to("cpu").half().float().cpu().eval()
                assert model.tail.weight is model.head.weight
                assert all(isinstance(p, torch.nn.Parameter) for p in model.parameters())
                assert len(list(model.parameters())) == len(list(net.parameters())) == 7
                assert model.conv.weight.dtype == torch.float32
                torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "net.onnx")
            """
        },
    )
    res = _analyze(analyzer, root, "copy.py", None)
    assert "load" not in ((res.data or {}).get("failed") or {}), res.violations
    assert "OLX802" in _codes(res)


def test_a_package_script_is_not_shadowed_by_a_module_beside_it(
    analyzer: Any, tmp_path: Path
) -> None:
    """`python -m easyocr.export`: `import easyocr` is the package, not `easyocr/easyocr.py`
    beside the script; relative imports climb through a namespace folder (no __init__.py)."""
    root = _project(
        tmp_path,
        {
            "lib/__init__.py": "from .model import Net\n",
            "lib/model.py": NET,
            "lib/lib.py": "from .model import Net  # a module named like its package\n",
            "lib/helper.py": "SIZE = 16\n",
            "lib/export.py": """
                import torch

                import lib
                from helper import SIZE  # a module beside the script, by its bare name

                torch.onnx.export(lib.Net().eval(), (torch.randn(2, 3, SIZE, SIZE),), "n.onnx")
            """,
            "ns/shapes.py": "SIZE = 16\n",
            "ns/tools/__init__.py": "",
            "ns/tools/onnx/__init__.py": "",
            "ns/tools/onnx/__main__.py": """
                import torch

                from ...shapes import SIZE
                from nets import Net

                torch.onnx.export(Net().eval(), (torch.randn(2, 3, SIZE, SIZE),), "n.onnx")
            """,
        },
    )
    for script in ("lib/export.py", "ns/tools/onnx/__main__.py"):
        res = _analyze(analyzer, root, script, None)
        assert "load" not in ((res.data or {}).get("failed") or {}), (script, res.violations)
        assert "OLX802" in _codes(res), script


def test_a_pickled_whole_model_is_loaded_without_its_weights(analyzer: Any, tmp_path: Path) -> None:
    """`torch.load(path)["model"]` where the file holds the model object (YOLO checkpoints):
    present, its architecture is loaded (storages on meta); missing, OLX812 says so."""
    import sys

    import torch

    script = """
        import torch

        ckpt = torch.load("weights/best.pt", map_location="cpu", weights_only=False)
        model = ckpt["model"].float().eval()
        assert ckpt["epoch"] == 7
        torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "best.onnx")
    """
    root = _project(tmp_path, {"yolo_export.py": script})
    res = _analyze(analyzer, root, "yolo_export.py", None)
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    assert stop.line == line_of(root / "yolo_export.py", '["model"].float()'), res.violations
    assert "not here" in stop.message and "factory" in stop.message
    sys.path.insert(0, str(root))
    try:
        from nets import Net  # type: ignore[import-not-found]

        net = Net().half()  # the file's model is float16; the script's .float() converts it
        (root / "weights").mkdir()
        torch.save({"model": net, "epoch": 7}, root / "weights" / "best.pt")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("nets", None)
    res = _analyze(analyzer, root, "yolo_export.py", None)
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    assert data["model"]["class"].endswith("Net")
    assert "OLX802" in _codes(res)
    assert any("structure only" in s["what"] for s in data["script_skipped"])
    # without weights_only=False, torch 2.6+ refuses a pickled model for real: so here too
    text = (root / "yolo_export.py").read_text().replace(", weights_only=False", "")
    (root / "yolo_export.py").write_text(text)
    res = _analyze(analyzer, root, "yolo_export.py", None)
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    assert stop.line == line_of(root / "yolo_export.py", '["model"].float()'), res.violations
    assert "could not be read" in stop.message and "weights_only" in stop.message, stop.message


def test_pretrained_weights_downloads_are_skipped_other_downloads_stop(
    analyzer: Any, tmp_path: Path
) -> None:
    """A library's weights helper (torch.hub, gdown to a `.pth`) is not fetched: the file
    stays missing and torch.load gives an empty checkpoint; a config download still stops."""
    import importlib.util

    # gdown itself where it is installed, else a stand-in that downloads as gdown does
    stand_in = importlib.util.find_spec("gdown") is None
    root = _project(
        tmp_path,
        {
            "pretrained.py": """
                import gdown
                import torch

                from nets import Net

                model = Net()
                sd = torch.hub.load_state_dict_from_url("https://example.invalid/net.pth")
                model.load_state_dict(sd, strict=False)
                torch.hub.download_url_to_file("https://example.invalid/a.pth", "a.pth")
                model.load_state_dict(torch.load("a.pth"))
                gdown.download("https://drive.invalid/uc?id=1", "osnet.pth")
                model.load_state_dict(torch.load("osnet.pth"))
                torch.hub.download_url_to_file("https://example.invalid/cfg.json", "cfg.json")
                torch.onnx.export(model.eval(), (torch.randn(2, 3, 16, 16),), "net.onnx")
            """
        },
    )
    if stand_in:
        (root / "gdown.py").write_text(
            "import urllib.request\n\n\n"
            "def download(url=None, output=None, quiet=False):\n"
            "    urllib.request.urlretrieve(url, output)\n"
            "    return output\n"
        )
    res = _analyze(analyzer, root, "pretrained.py", None)
    data = res.data or {}
    assert "script_skipped" in data, res.violations
    skipped = {s["what"].split(" (")[0] for s in data["script_skipped"]}
    assert {"torch.hub.load_state_dict_from_url", "torch.hub.download_url_to_file of weights"} <= (
        skipped
    ), skipped
    assert "gdown.download of weights" in skipped, skipped
    (stop,) = [v for v in res.violations if v.code == "OLX812"]
    assert stop.line == line_of(root / "pretrained.py", "cfg.json"), res.violations
    assert "network" in stop.message + " ".join(stop.notes)


CONV_BN = """
import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


m = Block().eval()
torch.onnx.export(m, (torch.randn(1, 3, 32, 32),), "b.onnx", opset_version=11)
"""


def test_batch_norm_on_fake_weights_passes_the_checker(analyzer: Any, tmp_path: Path) -> None:
    # At an opset below 18 (a conversion), the translation on fake weights listed BN's weight
    # and bias both as graph inputs and as initializers; the structure check then listed
    # them twice and the checker failed: a false OLX809 on YOLOX (opset 11) and on any such
    # conv + batch norm export, where the real export passes the checker.
    # (torch 2.13 then fails to convert it down to 11 and writes opset 18: OLX827.)
    root = _project(tmp_path, {"export.py": CONV_BN})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "exports, but at another opset than the one asked for", res.violations
    assert _codes(res) == {"OLX827"}
    (kept,) = res.violations  # torch's own reason, not the analysis's fake weights
    assert "No Adapter From Version $16 for Identity" in " ".join(kept.notes), kept.notes


TORCH_EXPORT_BATCH_ONE = """
import torch
from torch.export import Dim

from nets import Net

model = Net().eval()
example = torch.randn(1, 3, 16, 16)
ep = torch.export.export(model, (example,), dynamic_shapes=({0: Dim.DYNAMIC},))
"""


def test_a_batch_one_example_pins_the_dim_of_a_plain_torch_export(
    analyzer: Any, tmp_path: Path
) -> None:
    # The script's own call is torch.export.export: no torch.onnx capture settings, so an
    # example of size 1 pins the dynamic dim, and the example's line is blamed.
    root = _project(tmp_path, {"export.py": TORCH_EXPORT_BATCH_ONE})
    script = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(script, "torch.export.export("))
    spec = [v for v in res.violations if v.code == "OLX804"]
    assert len(spec) == 1, res.violations
    assert spec[0].line == line_of(script, "example = torch.randn(1, 3, 16, 16)")
    assert "example input has size 1" in spec[0].message


LSTM_IN_INFERENCE_MODE = """
import torch
import torch.nn as nn


class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 8)

    def forward(self, x, h, c):
        out, (h, c) = self.rnn(x, (h, c))
        return out, h, c


model = Seq().eval()
x = torch.zeros(10, 1, 8)
state = torch.zeros(1, 1, 8)
with torch.inference_mode():
    torch.onnx.export(
        model,
        (x, state, state.clone()),
        "seq.onnx",
        input_names=["x", "h", "c"],
        dynamic_axes={"x": {0: "steps"}},
    )
"""


def test_an_lstm_export_in_inference_mode_is_analysed_as_torch_onnx_runs_it(
    analyzer: Any, tmp_path: Path
) -> None:
    # silero-vad's export script: torch 2.13's real export succeeds with the sequence dim
    # dynamic. Before, the analysis ran outside the call's inference mode ("Inference
    # tensors cannot be saved for backward", from `state.clone()` made inside it) and
    # without torch.onnx's LSTM decomposition (the dim pinned to 10).
    root = _project(tmp_path, {"seq.py": LSTM_IN_INFERENCE_MODE})
    res = _analyze(analyzer, root, "seq.py", None)
    assert res.outcome == "ok", res.violations
    assert not {"OLX803", "OLX804"} & _codes(res), res.violations


IS_IN_ONNX_EXPORT = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)

    def forward(self, x):
        pred = self.fc(x).softmax(-1)
        if torch.onnx.is_in_onnx_export():
            return pred
        return list(pred.detach().cpu().numpy())  # mmcls's post_process


model = Head().eval()
x = torch.randn(2, 4)
torch.onnx.export(model, (x,), "head.onnx")
ep = torch.export.export(model, (x,))
"""


def test_torch_onnx_is_in_onnx_export_is_true_while_an_onnx_export_is_analysed(
    analyzer: Any, tmp_path: Path
) -> None:
    # mmcls 0.25's tools/deployment/pytorch2onnx.py: torch 2.13's real export succeeds, as
    # its head returns the tensor during an ONNX export; the analysis ran the NumPy branch.
    root = _project(tmp_path, {"head.py": IS_IN_ONNX_EXPORT})
    script = root / "head.py"
    res = _analyze(analyzer, root, "head.py", line_of(script, "torch.onnx.export("))
    assert res.outcome == "ok", res.violations
    # plain torch.export does not set it: the NumPy branch fails there, as it does for real
    res = _analyze(analyzer, root, "head.py", line_of(script, "torch.export.export("))
    assert "OLX803" in _codes(res), res.violations


CLICK_CLI = """
import click
import torch

from nets import Net


@click.command()
@click.option("--checkpoint", required=True, type=click.Path(), help="model checkpoint (.pth)")
@click.option("-o", "--output", required=True, help="where to write the ONNX file")
@click.option("--opset", default=17, type=int)
def main(checkpoint, output, opset):
    model = Net()
    model.load_state_dict(torch.load(checkpoint))
    torch.onnx.export(model.eval(), (torch.randn(2, 3, 16, 16),), output, opset_version=opset)


if __name__ == "__main__":
    main()
"""


def test_a_click_command_gets_placeholders_for_output_and_checkpoint(
    analyzer: Any, tmp_path: Path
) -> None:
    pytest.importorskip("click")
    root = _project(tmp_path, {"cli.py": CLICK_CLI})
    script = root / "cli.py"
    res = _analyze(analyzer, root, "cli.py", line_of(script, "torch.onnx.export("))
    data = res.data or {}
    assert "load" not in (data.get("failed") or {}), res.violations
    filled = {
        s["what"].split(" (")[0]: s["line"]
        for s in data["script_skipped"]
        if s["what"].startswith("required argument")
    }
    main_line = line_of(script, "    main()")
    assert filled == {
        "required argument --checkpoint": main_line,
        "required argument --output": main_line,
    }, data["script_skipped"]
    assert sorted(data["script_filled"]) == ["--checkpoint", "--output"]


@pytest.mark.slow
def test_cli_analyze_takes_the_scripts_arguments_after_double_dash(
    cli: Any, tmp_path: Path
) -> None:
    # The form a README's command is copied into: `onnxlint analyze export.py -- ARGS`.
    root = _project(tmp_path, {"export.py": REQUIRED_ARG})
    (root / "pyproject.toml").write_text('[project]\nname = "proj"\n')
    r = cli("analyze", "export.py", "--format", "json", "--no-cache", cwd=root)
    stops = json.loads(r.stdout)["violations"]
    assert [v["code"] for v in stops] == ["OLX812"], r.stdout
    assert "onnxlint analyze export.py -- " in " ".join(stops[0]["notes"])
    r = cli(
        "analyze",
        "export.py",
        "--format",
        "json",
        "--no-cache",
        "--",
        "--config",
        "net.yaml",
        cwd=root,
    )
    codes = [v["code"] for v in json.loads(r.stdout)["violations"]]
    assert "OLX812" not in codes and "OLX802" in codes, r.stdout
    r = cli("analyze", "export.py", "--argv", "--config a", "--", "--config", "b", cwd=root)
    assert r.returncode == 2 and "either after `--` or with --argv" in r.stderr, r.stderr


PROMPT = """
import torch


class Prompt(torch.nn.Module):
    def forward(self, image, points, labels):
        p = points + labels.unsqueeze(-1).expand_as(points)
        return image.mean() + p.sum(1)


model = Prompt().eval()
args = (torch.randn(1, 8, 4, 4), torch.randn(1, 5, 2), torch.randn(1, 5))
torch.onnx.export(
    model,
    args,
    "prompt.onnx",
    input_names=["image", "points", "labels"],
    dynamic_axes={AXES},
)
"""


def _torch_exports_script(path: Path) -> str | None:
    """Run the script for real; torch's error, or None when it exported."""
    import runpy
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runpy.run_path(str(path), run_name="__main__")
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return None


@pytest.mark.parametrize(
    ("axes", "moved"),
    [
        # segment-anything's order: the axes of points land on image, labels' on points
        ('{"points": {1: "n"}, "labels": {1: "n"}}', ["'points' go to 'image'"]),
        ('{"image": None, "points": {1: "n"}, "labels": {1: "n"}}', []),  # in the inputs' order
    ],
)
def test_dynamic_axes_the_exporter_gives_to_other_inputs(
    analyzer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, axes: str, moved: list[str]
) -> None:
    root = _project(tmp_path, {"prompt.py": PROMPT.replace("{AXES}", axes)})
    script = root / "prompt.py"
    monkeypatch.chdir(root)
    torch_error = _torch_exports_script(script)
    res = _analyze(analyzer, root, "prompt.py", None)
    found = [v for v in res.violations if v.code == "OLX826"]
    if not moved:
        assert torch_error is None and not found and res.outcome == "ok", res.violations
        return
    assert torch_error is not None and "static shape" in torch_error  # torch fails on it
    [v] = found
    assert v.line == line_of(script, "torch.onnx.export(")
    assert all(m in v.message for m in moved), v.message
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations


def test_dynamic_axes_torch_cannot_convert_fail_at_the_call(
    analyzer: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No input_names: two entries for three inputs leave torch's conversion two leaves
    # short, and torch.onnx.export raises before it traces anything.
    text = PROMPT.replace("{AXES}", '{"points": {1: "n"}}').replace(
        '    input_names=["image", "points", "labels"],\n', ""
    )
    root = _project(tmp_path, {"prompt.py": text})
    script = root / "prompt.py"
    monkeypatch.chdir(root)
    torch_error = _torch_exports_script(script)
    assert torch_error is not None and "Failed to convert" in torch_error, torch_error
    res = _analyze(analyzer, root, "prompt.py", None)
    [v] = [v for v in res.violations if v.code == "OLX803"]
    assert v.line == line_of(script, "torch.onnx.export(")
    assert "cannot convert `dynamic_axes`" in v.message
    assert res.outcome == "fails at the script's own call", res.violations


MHA_BATCH_ONE = """
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)

    def forward(self, x, pos):
        q = k = x + pos
        out, _ = self.attn(q, k, value=x, need_weights=False)
        return out


x = torch.rand(1, 10, 16)
pos = torch.rand(1, 10, 16)
torch.onnx.export(Net().eval(), (x, pos), "m.onnx", input_names=["x", "pos"],
                  dynamic_axes={"x": {0: "N"}, "pos": {0: "N"}})
"""


def test_a_batch_one_example_with_a_size_guard_but_a_right_file_is_no_finding(
    analyzer: Any, tmp_path: Path
) -> None:
    # torch.export's program for nn.MultiheadAttention at a batch-1 example asserts
    # `Eq(N, 1)` (the guard RT-DETR's batch-1 export also holds to), yet torch 2.13's ONNX
    # file of this model runs right at batches 1-3 (checked against eager with ONNX
    # Runtime): a guard alone is no finding; only outputs that come out at the example's
    # size blame the example (RT-DETR's, where ONNX Runtime fails at batch 2).
    root = _project(tmp_path, {"export.py": MHA_BATCH_ONE})
    script = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(script, "torch.onnx.export("))
    assert not res.violations, res.violations


OPSET_ELEVEN = """
import torch


class Net(torch.nn.Module):
    def forward(self, x):
        a, b = x.split(4, dim=1)
        return a.sum(1) + b.amax(1)


torch.onnx.export(
    Net().eval(),
    (torch.rand(2, 8),),
    "net.onnx",
    opset_version=11,
)
"""


def test_an_opset_torch_does_not_write_is_said_at_the_opset_argument(
    analyzer: Any, tmp_path: Path
) -> None:
    # RT-DETR's export script asks for opset 16: torch 2.13 exports at 18, the conversion
    # down fails ("The model was not modified", a log line), and the file is written at
    # opset 18. The same for this model at opset 11 ("No Adapter From Version $14 for
    # Add"), checked with torch 2.13: the analysis said "ok" and put the conversion's
    # failure among the skipped steps.
    root = _project(tmp_path, {"export.py": OPSET_ELEVEN})
    script = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(script, "torch.onnx.export("))
    kept = [v for v in res.violations if v.code == "OLX827"]
    assert len(kept) == 1, res.violations
    assert kept[0].line == line_of(script, "opset_version=11")
    assert "writes this model at opset 18, not the requested 11" in kept[0].message
    assert res.outcome == "exports, but at another opset than the one asked for"


TRAINING_HEAD = """
import torch
import torch.nn as nn


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.down = nn.Conv2d(4, 4, 3, stride=2, padding=1)

    def forward(self, x):
        a = self.conv(x)
        b = self.down(a)
        if self.training:
            return torch.cat([a, b], dim=1)  # the raw maps of two strides
        return torch.cat([a.flatten(2), b.flatten(2)], dim=2)


model = Head()
torch.onnx.export(
    model,
    (torch.randn(2, 3, 16, 16),),
    "head.onnx",
)
"""


def test_an_export_that_fails_only_in_training_mode_says_so_at_the_model(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOv4's demo_pytorch2onnx.py (Tianxiaomo/pytorch-YOLOv4) exports without `.eval()`:
    # its head returns the training outputs, and torch 2.13 fails at step 1/3 in a
    # `torch.cat` of tool/torch_utils.py. The analysis said OLX803 there, which does not
    # name the cause; with `.eval()` torch exports (both checked with torch 2.13 on this
    # reduction and on YOLOv4).
    root = _project(tmp_path, {"export.py": TRAINING_HEAD})
    script = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(script, "torch.onnx.export("))
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    assert _codes(res) == {"OLX828"}, res.violations
    (mode,) = res.violations
    assert mode.line == line_of(script, "    model,")
    assert "`model` is in training mode" in mode.message
    assert "Sizes of tensors must match" in mode.message
    cat = line_of(script, "return torch.cat([a, b], dim=1)")
    assert any(r.line == cat for r in mode.related), mode.related


def test_an_export_in_eval_mode_or_failing_in_both_modes_is_not_blamed_on_the_mode(
    analyzer: Any, tmp_path: Path
) -> None:
    in_eval = TRAINING_HEAD.replace("model = Head()", "model = Head().eval()")
    both = TRAINING_HEAD.replace(
        "return torch.cat([a.flatten(2), b.flatten(2)], dim=2)",
        "return torch.cat([a, b], dim=1)",
    )
    root = _project(tmp_path, {"in_eval.py": in_eval, "both.py": both})
    res = _analyze(analyzer, root, "in_eval.py", None)
    assert res.outcome == "ok", res.violations
    res = _analyze(analyzer, root, "both.py", None)
    assert res.outcome == "fails at step 1/3 (torch.export)", res.violations
    assert _codes(res) == {"OLX803"}, res.violations


READS_ITS_ONNX_FILE = """
import onnx
import torch

from nets import Net

model = Net().eval()
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "first.onnx", dynamo=False)
onnx.checker.check_model(onnx.load("first.onnx"))
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "second.onnx", dynamo=False)
"""


def test_a_call_after_the_script_reads_an_exported_file_is_not_reached_not_an_error(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOv4's script exports, then opens the file with onnxruntime: the analysis writes no
    # file, so its run stops there. That was an OLX812 error for the call after it, as if
    # the script were broken; it is the analysis's own stop, said as information.
    root = _project(tmp_path, {"export.py": READS_ITS_ONNX_FILE})
    script = root / "export.py"
    second = line_of(script, '"second.onnx"')
    res = _analyze(analyzer, root, "export.py", second)
    assert res.outcome == "not reached by this run", res.violations
    (stop,) = res.violations
    assert stop.code == "OLX812" and stop.severity.value == "info" and stop.line == second
    assert "reading 'first.onnx', the file that call writes" in stop.message


GRID_CACHE = """
import torch
import torch.nn as nn


class Detect(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 1)
        self.grid = [torch.zeros(1)]

    def forward(self, x):
        y = self.conv(x)
        h, w = y.shape[2:4]
        if self.grid[0].shape[2:4] != y.shape[2:4]:  # YOLOv5's Detect: made once a size
            yv, xv = torch.meshgrid([torch.arange(h), torch.arange(w)], indexing="ij")
            self.grid[0] = torch.stack((xv, yv), 0).view(1, 2, h, w).float()
        return y[:, :2] + self.grid[0]


class Anchors(nn.Module):
    def __init__(self):
        super().__init__()
        self.shape = None
        self.anchors = torch.empty(0)

    def forward(self, x):
        if self.shape != x.shape:  # ultralytics' Detect: its anchors, made once a shape
            self.anchors = torch.arange(x.shape[-1]).float()
            self.shape = x.shape
        return x + self.anchors


torch.onnx.export(
    nn.Sequential(Detect(), Anchors()).eval(), (torch.randn(1, 3, 8, 8),), "detect.onnx"
)
"""


def test_a_grid_a_forward_caches_is_the_export_calls_not_an_earlier_phases(
    analyzer: Any, tmp_path: Path
) -> None:
    # YOLOP's export_onnx.py (hustvl/YOLOP): its YOLOv5-style Detect keeps the grid of the
    # first eval call in `self.grid`. The analysis's memory count made it under its own fake
    # mode, the export then failed on it ("fake mode ... doesn't match mode"), an OLX803
    # torch 2.13 does not raise (checked: it exports YOLOP and this reduction).
    root = _project(tmp_path, {"export.py": GRID_CACHE})
    res = _analyze(analyzer, root, "export.py", None)
    assert res.outcome == "ok", res.violations
    assert not res.violations, res.violations


CHECKPOINTER_POP = """
import torch

from nets import Net


def load(model, path):
    checkpoint = torch.load(path, map_location="cpu")
    state = checkpoint.pop("model")  # detectron2's and fast-reid's Checkpointer
    model.load_state_dict(state, strict=False)
    return checkpoint.pop("iteration", 0)


model = Net().eval()
load(model, "model_final.pth")
torch.onnx.export(model, (torch.randn(2, 3, 16, 16),), "reid.onnx")
"""


def test_a_missing_checkpoint_read_with_pop_is_no_obstacle(analyzer: Any, tmp_path: Path) -> None:
    # fast-reid's tools/deploy/onnx_export.py (JDAI-CV/fast-reid c9bc3ce) loads through its
    # Checkpointer, which pops "model": the empty checkpoint the analysis reads for the
    # missing weights raised KeyError, and the run stopped (torch 2.13 exports the model).
    root = _project(tmp_path, {"export.py": CHECKPOINTER_POP})
    res = _analyze(analyzer, root, "export.py", None)
    assert "OLX812" not in _codes(res), res.violations
    assert res.outcome != "cannot be analysed", res.outcome


ONNX_PROGRAM_USED = """
import torch
import torch.nn as nn


class A(nn.Module):
    def forward(self, x):
        return x.relu() + 1


class B(nn.Module):
    def forward(self, x):
        return x.sigmoid() * 2


x = torch.randn(2, 4)
onnx_program = torch.onnx.export(A().eval(), (x,), dynamo=True)
onnx_program.optimize()
onnx_program.save("a.onnx")
outs = onnx_program(x)
torch.testing.assert_close(outs[0], A()(x))
program_b = torch.onnx.export(B().eval(), (x,), "b.onnx", dynamo=True)
"""


def test_the_onnx_program_an_export_returns_runs_for_the_script_that_checks_it(
    analyzer: Any, tmp_path: Path
) -> None:
    # torch's tutorial way: `onnx_program = torch.onnx.export(..., dynamo=True)`, then
    # `onnx_program(x)` against eager. The stand-in the analysis returned for the skipped
    # call could not be indexed ("'Inert' object is not subscriptable"), and the export
    # after it was an OLX812 error; torch 2.13 runs the script to its end.
    root = _project(tmp_path, {"export.py": ONNX_PROGRAM_USED})
    script = root / "export.py"
    res = _analyze(analyzer, root, "export.py", line_of(script, "program_b = "))
    assert res.outcome == "ok", res.violations


CHECKS_THE_MODEL_PROTO = """
import onnx
import torch

from nets import Net

x = torch.randn(2, 3, 16, 16)
onnx_program = torch.onnx.export(Net().eval(), (x,), dynamo=True)
onnx.checker.check_model(onnx_program.model_proto)
torch.onnx.export(Net().eval(), (x,), "second.onnx", dynamo=True)
"""


def test_a_call_after_an_onnx_tool_reads_the_exported_model_is_not_reached(
    analyzer: Any, tmp_path: Path
) -> None:
    # The analysis makes no real ONNX model: the checker's stop on the program's
    # `model_proto` is its own, said as information for the call after it.
    root = _project(tmp_path, {"export.py": CHECKS_THE_MODEL_PROTO})
    script = root / "export.py"
    second = line_of(script, '"second.onnx"')
    res = _analyze(analyzer, root, "export.py", second)
    assert res.outcome == "not reached by this run", res.violations
    (stop,) = res.violations
    assert stop.severity.value == "info" and "in onnx, on the ONNX model" in stop.message
