"""pytorch#113118 (comment of 2024-05-10): `torch.unique` with `torch.onnx.dynamo_export`."""

import torch
import torch.onnx

torch.onnx.dynamo_export(lambda x: torch.unique(x), torch.arange(10))  # @dynamo-export-unique
