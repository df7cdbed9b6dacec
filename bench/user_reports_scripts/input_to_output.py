"""pytorch#167848 (2025-11-14): an output that is the input itself, exported with
optimize=False: onnxruntime returns the wrong value for it."""

import numpy
import onnxruntime
import torch


class Module(torch.nn.Module):
    def forward(self, x):
        return torch.tensor(1.0), x  # @passthrough-return


onnx_model = torch.onnx.export(
    model=Module(), args=(torch.randn(1),), optimize=False
)  # @passthrough-export

session = onnxruntime.InferenceSession(onnx_model.model_proto.SerializeToString())
print(session.run(None, {"x": numpy.array((123,), numpy.float32)}))
