"""Building blocks shared by the models."""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class ConvBNAct(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.bn(self.conv(x)))


class SqueezeExcite(nn.Module):
    def __init__(self, channels: int, ratio: float = 0.25) -> None:
        super().__init__()
        hidden = max(8, int(channels * ratio))
        self.fc1 = nn.Linear(channels, hidden)
        self.fc2 = nn.Linear(hidden, channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Shape arithmetic through `math` on Python ints is fine: no tensor involved.
        scale = 1.0 / math.sqrt(x.shape[1])
        w = x.mean(dim=(2, 3))
        w = torch.sigmoid(self.fc2(F.relu(self.fc1(w)))) * scale
        return x * w[:, :, None, None]


def pad_to_multiple(x: torch.Tensor, multiple: int) -> torch.Tensor:
    """Called from forward: the padding amount is computed with `.item()`."""
    h = x.shape[-2]
    pad = int(torch.tensor(h % multiple).item())
    if pad > 0:
        x = F.pad(x, (0, 0, 0, multiple - pad))
    return x
