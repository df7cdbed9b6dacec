"""What to do about an ATen op that has no ONNX translation in torch 2.13 (stdlib only).

Keys are ATen op names without the overload (`aten.median`). The parent uses
the same table for the report; the worker puts the text into each finding.
"""

from __future__ import annotations

GENERIC = (
    "Register a translation with `torch.onnx.export(..., custom_translation_table="
    "{torch.ops.<op>: onnxscript_fn})`, emit the ONNX op yourself with "
    "`torch.onnx.ops.symbolic(...)`, or rewrite the computation with supported ops."
)

WORKAROUNDS: dict[str, str] = {
    "aten.linalg_inv_ex": "ONNX has no matrix inverse. onnxruntime has the contrib op "
    "`com.microsoft::Inverse`: map `aten.linalg_inv_ex` to it in custom_translation_table, "
    "or solve the system another way (e.g. closed form for 2x2/3x3).",
    "aten._linalg_svd": "No SVD in ONNX. Compute it outside the model, or use a fixed number "
    "of power iterations written with matmul.",
    "aten._linalg_eigh": "No eigendecomposition in ONNX. Precompute it, move it out of the "
    "exported graph, or use power iteration / Jacobi sweeps written with matmul.",
    "aten.linalg_eig": "No eigendecomposition in ONNX; see aten._linalg_eigh.",
    "aten.linalg_qr": "No QR in ONNX; Gram-Schmidt with matmul and a fixed size is exportable.",
    "aten.linalg_cholesky_ex": "No Cholesky in ONNX; precompute or unroll for a fixed size.",
    "aten._cdist_forward": "Replace `torch.cdist(a, b)` by "
    "`((a.unsqueeze(-2) - b.unsqueeze(-3)) ** 2).sum(-1).sqrt()` (or the matmul expansion "
    "`a2 + b2 - 2 a b^T`).",
    "aten.median": "Replace `torch.median(x, dim)` by `x.sort(dim).values.select(dim, "
    "(x.shape[dim] - 1) // 2)` (sort and TopK are supported).",
    "aten.nanmedian": "Mask NaNs and use sort, as for aten.median.",
    "aten.mode": "No mode in ONNX; compute a histogram with one_hot + sum and take argmax.",
    "aten.kthvalue": "Use `torch.topk(x, k, largest=False).values[..., -1]`.",
    "aten.cummax": "No cumulative max in ONNX; unroll over a fixed size or use a scan loop.",
    "aten.cummin": "No cumulative min in ONNX; unroll over a fixed size or use a scan loop.",
    "aten.searchsorted": "Use `(sorted_seq.unsqueeze(0) < values.unsqueeze(-1)).sum(-1)` "
    "for small sequences, or `torch.bucketize`, which translates.",
    "aten.masked_select": "Use boolean-mask indexing `x[mask]` (translates) or `torch.where`.",
    "aten.sort": "`sort(stable=True)` has no translation: drop `stable=True` or use topk.",
    "aten.scatter": '`scatter(..., reduce="add")` has no translation: use `scatter_add` or '
    '`scatter_reduce(..., reduce="sum")`.',
    "aten.randperm": "Random permutations cannot be exported; pass the permutation as an input.",
    "aten.polygamma": "No polygamma in ONNX; use a series approximation.",
    "aten._adaptive_avg_pool3d": "Use `F.avg_pool3d` with kernel and stride computed from the "
    "(static) input size.",
    "aten.fractional_max_pool2d": "Random pooling cannot be exported; use max_pool2d.",
    "aten.histc": "Pass explicit `min` and `max` to `torch.histc` (the default min=max=0 "
    "fails in torchlib).",
}


def workaround(op: str) -> str:
    """Advice for an op name like `aten.median.dim` or `aten.median`."""
    base = op
    if base.count(".") >= 2:
        base = base.rsplit(".", 1)[0]
    return WORKAROUNDS.get(base) or WORKAROUNDS.get(op) or GENERIC
