"""pytorch#173076 (2026-01-22): a model that returns its input; with input_names and
output_names the dynamo export names the input "output_samples"."""

import torch
import torch.onnx


class TrivialModel(torch.nn.Module):
    def forward(self, input_samples):
        return input_samples


example_inputs = (torch.tensor([-0.5, 0.0, 0.5]),)

onnx_program = torch.onnx.export(  # @identity-export
    TrivialModel(),
    example_inputs,
    input_names=["input_samples"],
    output_names=["output_samples"],  # @identity-names
    dynamo=True,
)
onnx_program.save("trivial-dynamo.onnx")
