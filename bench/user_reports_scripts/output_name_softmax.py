"""pytorch#158094 (2025-07-11): an output named like an operator ("softmax") makes an
ONNX file that onnxruntime refuses when dynamo=True."""

import onnxruntime
import torch


class Model(torch.nn.Module):
    def forward(self, input):
        return torch.flip(torch.nn.functional.softmax(input, dim=0), (1,))


output_name = "softmax"
model = Model()
torch.onnx.export(  # @softmax-export
    model,
    (torch.rand([2, 3]),),
    "test.onnx",
    output_names=[output_name],  # @softmax-names
    dynamo=True,
)
session = onnxruntime.InferenceSession("test.onnx")  # @softmax-session
input = torch.rand([2, 3])
outputs = session.run([output_name], {"input": input.detach().numpy()})
