"""Train the classifier for a few steps, then export it to ONNX."""

import torch
import torch.nn as nn

from vision.classifier import Classifier


def train(steps: int = 10) -> nn.Module:
    model = Classifier(num_classes=10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, 3, 64, 64)
        y = torch.randint(0, 10, (8,))
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return model


if __name__ == "__main__":
    model = train()
    example = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        # The model is still in training mode here: Dropout and BatchNorm statistics
        # would be exported as training-time behaviour.
        torch.onnx.export(
            model,
            (example,),
            "classifier.onnx",
            input_names=["image"],
            output_names=["logits"],
            dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}},
        )
