"""pytorch#102948 (2023-06-05): "[onnx] aten::cumprod cannot be exported to ONNX". The
thread's TorchScript-era error was "Exporting the operator 'aten::cumprod' to ONNX opset
version 14 is not supported"; torch 2.13's dynamo export (the default) fails too: `aten.cumprod`
has no real-valued translation ("No decompositions registered for the real-valued input")."""

import torch
from torch import nn


class Test(nn.Module):
    def forward(self, x):
        return torch.cumprod(x, dim=-1)  # @cumprod


if __name__ == "__main__":
    model = Test()
    torch.onnx.export(model, torch.randn(1, 1, 1024, 65), "cumprod.onnx")  # @cumprod-export
