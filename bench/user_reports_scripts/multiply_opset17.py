"""pytorch#171417 (2025-12-28): `torch.multiply` (an alias of mul) with opset 17: the
thread's TorchScript-era error "Exporting the operator 'aten::multiply' to ONNX opset
version 17 is not supported"."""

import torch
import torch.onnx


class ModuleWithMultiply(torch.nn.Module):
    def __init__(self, harmonic_num=8):
        super().__init__()
        self.harmonic_num = harmonic_num

    def forward(self, f0):
        fn = torch.multiply(
            f0, torch.FloatTensor([[range(1, self.harmonic_num + 2)]]).to(f0.device)
        )  # @multiply
        return fn


f0 = torch.rand(1, 100, 1)
torch.onnx.export(
    ModuleWithMultiply(), (f0,), "multiply.onnx", opset_version=17
)  # @multiply-export
