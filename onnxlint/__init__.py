"""onnxlint: find PyTorch code that breaks or silently changes meaning when exported to ONNX."""

__version__ = "0.1.0"
