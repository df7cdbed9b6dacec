"""pytorch#140241 (2024-11-11): the dynamo_export example of the docs (a float kwarg `bias`)."""

import torch
import torch.onnx


class MyModel(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(2, 2)

    def forward(self, x, bias=None):
        out = self.linear(x)
        out = out + bias
        return out


model = MyModel()
kwargs = {"bias": 3.0}
args = (torch.randn(2, 2, 2),)
onnx_program = torch.onnx.dynamo_export(model, *args, **kwargs).save(  # @dynamo-export-docs
    "my_simple_model.onnx"
)
