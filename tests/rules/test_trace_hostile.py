"""OLX1xx on whole files: rating by export path, and re-checks after edits in other blocks."""

from __future__ import annotations

import textwrap

from onnxlint.core.config import parse_table
from onnxlint.core.violation import Severity
from onnxlint.engine import Engine

MODEL = textwrap.dedent(
    """
    import numpy as np
    import torch
    from torch import nn


    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x: torch.Tensor, mask: torch.Tensor):
            if torch.jit.is_tracing():
                x = x.view(-1, 4)
            n = x.sum().item()
            if n > 0:
                x = x * 2
            for i in range(x.shape[0]):
                x = x + i
            mask[0] = 0
            y = np.exp(x.numpy())
            self.last = x.mean()
            return self.proj(x)
    """
)


def check(text: str, **config: object) -> dict[str, list[tuple[int, Severity]]]:
    cfg = parse_table({"select": ["OLX1"], **config}, None)
    out: dict[str, list[tuple[int, Severity]]] = {}
    for v in Engine().check("model.py", text, cfg):
        out.setdefault(v.code, []).append((v.line, v.severity))
    return out


def test_model_file_without_export_call() -> None:
    found = check(MODEL)
    assert "OLX110" not in found  # dynamo exports the eager side, which exports as well
    assert found["OLX102"] == [(15, Severity.ERROR)]  # feeds `if n > 0`
    # No export: `mask` may be an intermediate of a bigger model (OLX109 checks the exported
    # model's own inputs), and `self.last` is written before it is read (no state).
    assert "OLX109" not in found
    assert found["OLX103"] == [(21, Severity.WARNING)]
    assert "OLX107" not in found
    assert "OLX104" not in found  # no export call: dims not known to be dynamic


def test_tracing_rates_conversions_as_frozen_constants() -> None:
    traced = MODEL + "\nm = torch.jit.trace(Net().eval(), torch.ones(2, 4))\n"
    found = check(traced)
    assert found["OLX102"] == [(15, Severity.WARNING)]
    assert (18, Severity.WARNING) in found["OLX104"]
    assert found["OLX111"] == [(25, Severity.INFO)]


def test_declaring_dynamic_dims_elsewhere_updates_cached_blocks() -> None:
    engine = Engine()
    cfg = parse_table({"select": ["OLX104"]}, None)
    static = MODEL + "\ntorch.onnx.export(Net().eval(), (torch.ones(2, 4),))\n"
    assert engine.check("model.py", static, cfg) == []
    dynamic = static.replace(
        "(torch.ones(2, 4),))", '(torch.ones(2, 4),), dynamic_shapes=({0: "b"},))'
    )
    found = engine.check("model.py", dynamic, cfg)
    assert [(v.line, v.code) for v in found] == [(18, "OLX104")]
    assert "declares dynamic" in found[0].message


def test_scripted_model_exported_from_another_block() -> None:
    text = (
        MODEL
        + "\nscripted = torch.jit.script(Net())\ntorch.onnx.export(scripted, (torch.ones(2, 4),))\n"
    )
    found = check(text)
    assert found["OLX112"] == [(26, Severity.ERROR)]
    assert found["OLX111"] == [(25, Severity.INFO)]


# The data pipeline of real repositories (issue 30's precision pass; each a reduction of a
# finding judged false in bench/repos_labels.jsonl): never part of an exported model.
DATA_PIPELINE = textwrap.dedent(
    """
    import numpy as np
    import torch
    from PIL import Image
    from mmengine.model import BaseDataPreprocessor


    class ReverseChannels(torch.nn.Module):
        def forward(self, pic):
            return Image.fromarray(np.array(pic)[:, :, ::-1])


    class ToFloat(torch.nn.Module):
        def forward(self, pic):
            if isinstance(pic, (list, tuple)):
                tensor = [np.array(p, dtype=np.float32) for p in pic]
            else:
                tensor = np.array(pic, dtype=np.float32)
            return tensor


    class GridMask(torch.nn.Module):
        def forward(self, inputs):
            if np.random.rand() > self.prob:
                return inputs
            mask = Image.fromarray(np.uint8(np.ones((4, 4))))
            mask = np.array(mask.rotate(1))
            mask = inputs.new_tensor(mask)
            return inputs * mask


    class Det3DDataPreprocessor(BaseDataPreprocessor):
        def forward(self, data):
            return self.voxelize(data["points"])

        def voxelize(self, points):
            coors = points.floor()
            return torch.from_numpy(np.unique(coors.cpu().numpy(), axis=0))


    class PillarNet(torch.nn.Module):
        def forward(self, features, img_metas, dump_raw_voxel_feat=False):
            stamps = [np.asarray(m["delta_timestamp"]) for m in img_metas]
            if dump_raw_voxel_feat:
                f = open("voxel_raw_features.txt", "w")
                f.write(str(features.cpu().detach().numpy()))
                f.close()
            return pad(features * features.new_tensor(stamps), return_tensors="pt")


    def pad(t, return_tensors=None):
        if return_tensors is None:
            return t
        elif return_tensors == "pt":
            return t.to("cpu")
        else:
            return np.array(t.to("cpu"))
    """
)


def test_data_pipeline_code_is_not_reported() -> None:
    # torch 2.13: PillarNet exports with torch.export (the metadata are Python floats, the
    # dump runs only when asked, the "pt" path returns a tensor); the transforms, the
    # augmentation and the data preprocessor run on data before the model, never exported.
    assert "OLX103" not in check(DATA_PIPELINE)


def test_model_code_like_the_data_pipeline_is_still_reported() -> None:
    # The same calls in model code: a forward that returns a tensor, a random draw not
    # compared with a probability, an output tensor indexed by a string, a dump that only
    # prints, a branch on a value that is not an output-type option.
    code = textwrap.dedent(
        """
        import numpy as np
        import torch
        from PIL import Image


        class Head(torch.nn.Module):
            def forward(self, pic, outputs, dump=False):
                a = torch.from_numpy(np.array(pic)[:, :, ::-1])
                if np.random.rand() > 0.5:
                    a = a + 1
                b = np.asarray(outputs["logits"])
                if dump:
                    print(pic.cpu().numpy())
                return pad(a * b, fmt="np")


        def pad(t, fmt=None):
            if fmt == "np":
                return np.array(t.to("cpu"))
            return t
        """
    )
    assert [line for line, _ in check(code)["OLX103"]] == [9, 12, 14, 20]
