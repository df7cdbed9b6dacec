"""OLX1xx: TorchScript- and trace-hostile code reachable from an `nn.Module.forward`.

Data-dependent Python control flow, tensor-to-Python conversions, shapes frozen into
constants, NumPy on tensors, side effects, TorchScript-only idioms and the deprecated
`torch.jit` entry points. Findings are rated for the export path the file uses.
"""
