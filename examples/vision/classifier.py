"""An image classifier whose forward has a few export traps."""

import numpy as np
import torch
import torch.nn as nn

from .layers import ConvBNAct, SqueezeExcite, pad_to_multiple


class Classifier(nn.Module):
    def __init__(self, num_classes: int = 10, width: int = 32) -> None:
        super().__init__()
        self.stem = ConvBNAct(3, width, stride=2)
        self.block = ConvBNAct(width, width * 2, stride=2)
        self.se = SqueezeExcite(width * 2)
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(width * 2, num_classes)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.jit.is_tracing():
            x = x.contiguous()
        x = self.se(self.block(self.stem(x)))
        # Data-dependent branch: fine in eager mode, a guard error under torch.export.
        if x.mean() > 0:
            x = x - x.mean()
        features = x.mean(dim=(2, 3))
        self.calls += 1
        return self.head(self.dropout(features))


class TiledClassifier(Classifier):
    """A subclass of a subclass: its forward is checked too."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = pad_to_multiple(x, 8)
        logits = []
        for tile in x:
            logits.append(super().forward(tile[None]))
        scores = torch.cat(logits)
        print("scores", scores.shape)
        return torch.from_numpy(np.asarray(scores.detach().numpy()))
