"""A detector head that reshapes with literal sizes."""

import torch
import torch.nn as nn


class DetectorHead(nn.Module):
    def __init__(self, channels: int = 16, anchors: int = 3) -> None:
        super().__init__()
        self.anchors = anchors
        self.conv = nn.Conv2d(3, channels, 3, padding=1)
        self.pred = nn.Conv2d(channels, anchors * 6, 1)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        feats = self.pred(torch.relu(self.conv(images)))
        n = int(images.shape[0])
        boxes = feats.view(n, self.anchors, 6, -1)
        scores = boxes[:, :, 4].sigmoid()
        keep = scores.max().item()
        if keep < 0.5:
            return boxes.new_zeros(1, 6)
        return boxes.flatten(2)
