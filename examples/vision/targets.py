"""Export targets for `onnxlint analyze`: each returns (model, example args)."""

import torch

from .classifier import Classifier
from .detector import DetectorHead


# onnxlint: target
def classifier():
    return Classifier(num_classes=10).eval(), (torch.randn(2, 3, 64, 64),)


# onnxlint: target
def detector():
    return DetectorHead().eval(), (torch.randn(2, 3, 32, 32),)
