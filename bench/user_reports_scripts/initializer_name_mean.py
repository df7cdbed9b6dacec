"""pytorch#168211 (2025-11-20): a tensor attribute `self.mean` gives an initializer named
'mean', the same name as the first ReduceMean's output: a disconnected ONNX model.
The thread wraps torchvision's r2plus1d_18; a small 3-D conv net with a mean stands in."""

import torch


class Video(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv3d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, v):
        h = torch.relu(self.conv(v))
        return self.fc(h.mean(dim=(2, 3, 4)))


class X(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model
        self.mean = torch.Tensor([0.1, 0.2, 0.3]).reshape(1, 3, 1, 1, 1)  # @mean-attr

    def forward(self, v):
        return self.model(v - self.mean)

    def __setattr__(self, n, v):
        if isinstance(v, torch.nn.Module):
            v.eval()
        torch.nn.Module.__setattr__(self, n, v)


inputs = (torch.randn(1, 3, 4, 16, 16),)
x = torch.export.export(X(Video()), inputs)
program = torch.onnx.export(x, inputs, dynamo=True)  # @mean-export
program.save("x.onnx")
