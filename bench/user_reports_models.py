"""Reproductions of real users' reports (2024-2026) for bench/user_reports.py.

Each factory returns (model, args, kwargs, dynamic_shapes) like an onnxlint target
factory. Each is a small plain-torch reproduction of one issue thread (its URL is in
bench/user_reports.py's table and in the factory's docstring): the thread's own code
where it gave one, else the code path its traceback names, rewritten in plain torch
(torchvision and torchaudio do not import beside torch 2.13 here).

A line where the reported problem is carries a marker comment `# @tag`; the bench
finds expected lines by these tags, so editing this file does not break it.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.export import Dim

# --------------------------------------------------------------------------- data-dependent ops


class UniqueToList(nn.Module):
    """pytorch#126685: `torch.unique(x).tolist()` (the thread passes a lambda)."""

    def forward(self, x: torch.Tensor) -> Any:
        return torch.unique(x).tolist()  # @unique-tolist


def unique_tolist() -> tuple[Any, ...]:
    return UniqueToList(), (torch.arange(10),), {}, None


class ModuleWithWhere(nn.Module):
    """pytorch#140710: single-argument `torch.where(cond)` under export, batch dynamic."""

    def forward(self, x: torch.Tensor) -> Any:
        return torch.where(x > 0)  # @where-cond


def where_single_arg() -> tuple[Any, ...]:
    x = torch.rand(2, 10)
    return ModuleWithWhere(), (x,), {}, ({0: Dim("batch_size", max=100)},)


class MaskAssign(nn.Module):
    """pytorch#126856: `x[mask] = 0` with a boolean mask (ScatterElements in ORT)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        mask = torch.ones((1, 3, 3), dtype=bool)  # type: ignore[call-overload]
        x[mask] = 0  # @mask-assign
        return x


def bool_mask_assign() -> tuple[Any, ...]:
    return MaskAssign(), (torch.randn((1, 3, 3)),), {}, None


class MaskedScatter(nn.Module):
    """pytorch#186146: `masked_scatter` exported by dynamo=True writes the values in the
    wrong order."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.register_buffer("scale", torch.arange(d, dtype=torch.float32) + 1.0)

    def forward(self, embeds: torch.Tensor, mask: torch.Tensor, inject: torch.Tensor) -> Any:
        return embeds.masked_scatter(mask.unsqueeze(-1), inject) * self.scale  # @masked-scatter


def masked_scatter() -> tuple[Any, ...]:
    n, d = 4, 8
    embeds = torch.zeros(1, 8, d)
    mask = torch.zeros(1, 8, dtype=torch.bool)
    mask[0, :n] = True
    inject = torch.arange(n * d, dtype=torch.float32).reshape(n, d) + 1.0
    ds = {"embeds": {1: "S"}, "mask": {1: "S"}, "inject": None}
    return MaskedScatter(d).eval(), (embeds, mask, inject), {}, ds


class MixtralSparseMoeBlock(nn.Module):
    """transformers#38518: Mixtral's sparse MoE block as transformers 4.5x wrote it (the
    `expert_hit = ....nonzero()` loop of PR #32429), in plain torch."""

    def __init__(self, hidden: int = 16, ffn: int = 32, experts: int = 4, top_k: int = 2):
        super().__init__()
        self.num_experts, self.top_k = experts, top_k
        self.gate = nn.Linear(hidden, experts, bias=False)
        self.w1 = nn.ModuleList(nn.Linear(hidden, ffn, bias=False) for _ in range(experts))
        self.w2 = nn.ModuleList(nn.Linear(ffn, hidden, bias=False) for _ in range(experts))

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        batch, seq, dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        final = torch.zeros((batch * seq, dim), dtype=hidden_states.dtype)
        expert_mask = F.one_hot(selected, num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()  # @moe-hit
        for expert_idx in expert_hit:  # @moe-loop
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))  # @moe-where
            current = hidden_states[None, top_x].reshape(-1, dim)
            out = self.w2[expert_idx](F.silu(self.w1[expert_idx](current)))  # @moe-index
            out = out * routing_weights[top_x, idx, None]
            final.index_add_(0, top_x, out.to(hidden_states.dtype))
        return final.reshape(batch, seq, dim)


def moe_routing() -> tuple[Any, ...]:
    torch.manual_seed(0)
    return MixtralSparseMoeBlock().eval(), (torch.randn(2, 6, 16),), {}, None


def _batched_nms_coordinate_trick(
    boxes: torch.Tensor, scores: torch.Tensor, idxs: torch.Tensor, iou: float
) -> torch.Tensor:
    # torchvision/ops/boxes.py: the helper pytorch#146152's traceback names (line 89)
    if boxes.numel() == 0:  # @nms-numel
        return torch.empty((0,), dtype=torch.int64)
    max_coordinate = boxes.max()
    offsets = idxs.to(boxes) * (max_coordinate + torch.tensor(1).to(boxes))
    return _nms(boxes + offsets[:, None], scores, iou)


def _nms(boxes: torch.Tensor, scores: torch.Tensor, iou: float) -> torch.Tensor:
    """torchvision.ops.nms in plain torch (its C++ kernel is greedy like this)."""
    order = scores.argsort(descending=True)
    keep = []
    while order.numel() > 0:  # @nms-while
        i = order[0]
        keep.append(i)
        if order.numel() == 1:
            break
        rest = order[1:]
        lt = torch.maximum(boxes[i, :2], boxes[rest, :2])  # @nms-index
        rb = torch.minimum(boxes[i, 2:], boxes[rest, 2:])
        inter = (rb - lt).clamp(min=0).prod(dim=1)
        area = (boxes[:, 2:] - boxes[:, :2]).prod(dim=1)
        order = rest[inter / (area[i] + area[rest] - inter) <= iou]
    return torch.stack(keep) if keep else torch.empty((0,), dtype=torch.int64)


class DetectionPostprocess(nn.Module):
    """pytorch#146152: torchvision's RoIHeads.postprocess_detections: score threshold,
    small-box removal and batched NMS (torchvision cannot be imported here)."""

    def __init__(self, score_thresh: float = 0.05, nms_thresh: float = 0.5) -> None:
        super().__init__()
        self.score_thresh, self.nms_thresh = score_thresh, nms_thresh

    def forward(self, boxes: torch.Tensor, scores: torch.Tensor) -> Any:
        labels = torch.arange(scores.shape[1]).view(1, -1).expand_as(scores)
        boxes = boxes.unsqueeze(1).expand(-1, scores.shape[1], -1).reshape(-1, 4)
        scores, labels = scores.reshape(-1), labels.reshape(-1)
        inds = torch.where(scores > self.score_thresh)[0]  # @nms-thresh
        boxes, scores, labels = boxes[inds], scores[inds], labels[inds]
        keep = _batched_nms_coordinate_trick(boxes, scores, labels, self.nms_thresh)
        return boxes[keep], scores[keep], labels[keep]


def nms_postprocess() -> tuple[Any, ...]:
    torch.manual_seed(0)
    xy = torch.rand(20, 2) * 50
    boxes = torch.cat([xy, xy + 5 + torch.rand(20, 2) * 20], dim=1)
    scores = torch.rand(20, 3)
    return DetectionPostprocess().eval(), (boxes, scores), {}, None


class RepeatInterleaveTensor(nn.Module):
    """pytorch#156873: `repeat_interleave` with a tensor of repeats (aten.repeat_interleave.Tensor:
    'No ONNX function found ... No decompositions registered')."""

    def forward(self, x: torch.Tensor, repeats: torch.Tensor) -> torch.Tensor:
        return torch.repeat_interleave(x, repeats, dim=0)  # @repeat-interleave


def repeat_interleave_tensor() -> tuple[Any, ...]:
    return RepeatInterleaveTensor(), (torch.randn(3, 4), torch.tensor([1, 2, 3])), {}, None


class ResizeToSize(nn.Module):
    """pytorch#149826: `interpolate(x, size=size.tolist())`, the size a tensor input."""

    def forward(self, x: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
        return F.interpolate(x, size=size.tolist())  # @interp-tolist


def interpolate_size_tolist() -> tuple[Any, ...]:
    x = torch.rand(1, 3, 400, 500)
    size = torch.tensor([1024, 1024]).to(torch.int32)
    return ResizeToSize(), (x, size), {}, None


class ItemIndex(nn.Module):
    """pytorch#131911: a loop that indexes with `b[i].item()` (the thread's function)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        wrk = torch.zeros(a.size(0))
        for i in range(a.size(0)):
            idx = b[i].item()  # @item-idx
            torch._check_is_size(idx)
            wrk[idx] += 1  # @item-index
        return wrk


def item_index_loop() -> tuple[Any, ...]:
    return ItemIndex(), (torch.randn([9]), torch.ones(9, dtype=torch.int32)), {}, None


class MergeImageTokens(nn.Module):
    """pytorch#150891: Llama4ForConditionalGeneration's merge of the vision embeddings
    into the text (its `if num_tokens_to_fill != projected_vision_flat.size(0)`)."""

    image_token_index = 7

    def forward(
        self, input_ids: torch.Tensor, inputs_embeds: torch.Tensor, projected_vision_flat: Any
    ) -> torch.Tensor:
        original_inputs_embeds_shape = inputs_embeds.shape
        special_image_mask = (input_ids == self.image_token_index).unsqueeze(-1)
        inputs_embeds = inputs_embeds.view(-1, inputs_embeds.size(-1))
        final_mask_1d = special_image_mask[..., 0].reshape(-1)
        num_tokens_to_fill = final_mask_1d.sum()
        if num_tokens_to_fill != projected_vision_flat.size(0):  # @llama4-if
            raise ValueError(
                f"Mismatch: final_mask wants {num_tokens_to_fill} embeddings, "
                f"but multi_modal_projector returned {projected_vision_flat.size(0)}"
            )
        expanded_mask = final_mask_1d.unsqueeze(-1).expand(-1, inputs_embeds.size(-1))
        inputs_embeds = inputs_embeds.masked_scatter(expanded_mask, projected_vision_flat)
        return inputs_embeds.view(original_inputs_embeds_shape)


def llama4_image_merge() -> tuple[Any, ...]:
    torch.manual_seed(0)
    ids = torch.tensor([[1, 7, 7, 7, 7, 2, 3, 4, 5, 6]])
    return MergeImageTokens(), (ids, torch.randn(1, 10, 16), torch.randn(4, 16)), {}, None


class RewrittenModel2(nn.Module):
    """pytorch#153705: a `scan` whose body indexes with `iv.item()` (the thread's code)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        def loop_body_1(z: Any, iv: Any, x: Any, y: Any) -> list[Any]:
            z = z.clone()
            i = iv.item()  # @scan-item
            z[i, :] = ((x[i, :] - y) ** 2).sum(dim=-1)  # @scan-index
            return [z, iv]

        z = torch.empty((x.shape[0], y.shape[0]))
        r = torch.ops.higher_order.scan(
            loop_body_1, [z], [torch.arange(x.shape[0], dtype=torch.int64)], [x, y]
        )  # @scan-call
        return r[0]


def scan_item_index() -> tuple[Any, ...]:
    dyn = Dim.DYNAMIC
    ds = ({0: dyn, 1: dyn}, {0: dyn, 1: dyn})
    return RewrittenModel2(), (torch.rand((3, 4)), torch.rand((5, 4))), {}, ds


class ItemSelect(nn.Module):
    """pytorch#150057: `y[0, b]` with `b = x.item()` (IndexError: got SymInt)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        b = x.item()
        torch._check_is_size(b)
        torch._check(b < y.shape[0])
        return y[0, b]  # @item-select


def item_select() -> tuple[Any, ...]:
    return ItemSelect(), (torch.tensor(4), torch.ones(10, 10)), {}, None


# --------------------------------------------------------------------------- silent wrong results


class ListAdd(nn.Module):
    """pytorch#139646 (and #139805): one tensor for five inputs, and a float `bs`."""

    def forward(self, x: list[torch.Tensor], y: torch.Tensor, z: torch.Tensor, bs: float = 0.1):
        y1 = y.clone()
        z1 = z + y
        for xi in x:
            y1 = y1 + xi + bs  # @listadd-bs
        return y1 + z1


def alias_listadd() -> tuple[Any, ...]:
    x = torch.rand(1024, 20, 16)
    return ListAdd(), ([x, x, x], x, x, 0.2), {}, None  # @listadd-args


class AddFourInputs(nn.Module):
    """pytorch#136179: `z = y` in the example, and a float `bias` argument."""

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor, bias: float = 0.1):
        return x + y + z + bias  # @addfour-bias


def alias_float_bias() -> tuple[Any, ...]:
    x = torch.rand(1024, 20, 16)
    y = torch.rand(1024, 20, 16)
    z = y
    return AddFourInputs(), (x, y, z, 0.1), {}, None  # @addfour-args


class ScaledDotProductAttention(nn.Module):
    """onnxscript#2479 / pytorch#159973: a boolean mask with a fully masked row."""

    def forward(self, query, key, value, attn_mask):  # type: ignore[no-untyped-def]
        return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask)  # @sdpa-nan


def sdpa_masked_row() -> tuple[Any, ...]:
    torch.manual_seed(0)
    attn_mask = torch.ones(2, 4, 8, 8).bool()
    attn_mask[0, 0, 0, :] = False  # masking an entire row (padding token)
    query = key = value = torch.randn(2, 4, 8, 16)  # @sdpa-qkv
    return ScaledDotProductAttention(), (query, key, value, attn_mask), {}, None  # @sdpa-args


class EmbedSDPA(nn.Module):
    """pytorch#152018: SDPA on 3-D embeddings, both dims of input_ids Dim.DYNAMIC."""

    def __init__(self) -> None:
        super().__init__()
        self.embeddings = nn.Embedding(1000, 512)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        embeddings = self.embeddings(input_ids)
        return F.scaled_dot_product_attention(embeddings, embeddings, embeddings)  # @sdpa-3d-emb


def sdpa_3d_embedding() -> tuple[Any, ...]:
    ids = torch.randint(0, 1000, (16, 128), dtype=torch.long)
    return EmbedSDPA().eval(), (ids,), {}, ((Dim.DYNAMIC, Dim.DYNAMIC),)


class ScaledDotProductAttentionModel(nn.Module):
    """pytorch#135615: SDPA on projected 3-D states, query and key lengths differ."""

    def __init__(self, d_model: int, scale: float) -> None:
        super().__init__()
        self.scale, self.d_model = scale, d_model
        self.query_linear = nn.Linear(d_model, d_model)
        self.key_linear = nn.Linear(d_model, d_model)
        self.value_linear = nn.Linear(d_model, d_model)

    def forward(self, query_states, key_states, value_states):  # type: ignore[no-untyped-def]
        query = self.query_linear(query_states)
        key = self.key_linear(key_states)
        value = self.value_linear(value_states)
        return F.scaled_dot_product_attention(query, key, value, scale=self.scale)  # @sdpa-3d-lin


def sdpa_3d_linear() -> tuple[Any, ...]:
    d_model = 64
    model = ScaledDotProductAttentionModel(d_model, 1.0 / math.sqrt(d_model)).eval()
    q = torch.randn(2, 10, d_model)
    kv = torch.randn(2, 15, d_model)
    return model, (q, kv, kv.clone()), {}, None


class AddIntArgument(nn.Module):
    """pytorch#157734: an int argument `a` marked Dim.DYNAMIC beside a tensor."""

    def forward(self, a: int, x: torch.Tensor) -> torch.Tensor:
        return a + torch.tensor(1) + x  # @symint-add


def int_argument() -> tuple[Any, ...]:
    return AddIntArgument(), (1, torch.ones(2)), {}, (Dim.DYNAMIC, {0: Dim.DYNAMIC})  # @symint-args


# --------------------------------------------------------------------------- dims


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = (
            nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            if stride != 1 or cin != cout
            else None
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + identity)  # @resnet-add


class SmallResNet(nn.Module):
    """torchvision's ResNet (BasicBlock, one block a stage), 8..64 channels."""

    def __init__(self, width: int = 8, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, width, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        chans = [width, width, width * 2, width * 4, width * 8]
        self.layers = nn.Sequential(
            *(BasicBlock(chans[i], chans[i + 1], 1 if i == 0 else 2) for i in range(4))
        )
        self.fc = nn.Linear(chans[-1], classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(F.relu(self.bn1(self.conv1(x))))
        x = self.layers(x)
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet_dynamic_height() -> tuple[Any, ...]:
    """pytorch#124507: ResNet with a dynamic height: torch.export wants the height even."""
    torch.manual_seed(0)
    height = Dim("height", min=320, max=7680)
    x = torch.randn((1, 3, 640, 320))
    return SmallResNet().eval(), (x,), {}, ({2: height},)  # @resnet-height


def resnet_batch_one() -> tuple[Any, ...]:
    """pytorch#157621: ResNet with a dynamic batch and a batch-1 example."""
    torch.manual_seed(0)
    return SmallResNet().eval(), (torch.randn(1, 3, 64, 64),), {}, ({0: "batch"},)  # @resnet-batch1


class ViewBySize1(nn.Module):
    """pytorch#126607: `x.view(x.size(1), -1)` with only the batch dim dynamic."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return nn.functional.softmax(x.view(x.size(1), -1), dim=0)  # @view-size1


def view_size1() -> tuple[Any, ...]:
    return ViewBySize1(), (torch.rand(1024, 20, 16),), {}, {"x": {0: Dim("batch")}}


class SpecMaker(nn.Module):
    """pytorch#148687: torchaudio Spectrogram(n_fft=512, hop 256) + AmplitudeToDB(top_db=100),
    as torchaudio.functional computes them, on a batch of waveforms."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("window", torch.hann_window(512))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shape = x.size()
        x = x.reshape(-1, shape[-1])
        spec = torch.stft(
            x, 512, 256, 512, self.window, center=True, pad_mode="reflect", return_complex=True
        )  # @spec-stft
        spec = spec.reshape(shape[:-1] + spec.shape[-2:]).abs().pow(2.0)
        x_db = 10.0 * torch.log10(torch.clamp(spec, min=1e-10))
        packed_channels = x_db.shape[-3] if x_db.dim() > 2 else 1  # @spec-packed
        x_db = x_db.reshape(-1, packed_channels, x_db.shape[-2], x_db.shape[-1])
        x_db = torch.max(x_db, (x_db.amax(dim=(-3, -2, -1)) - 100.0).view(-1, 1, 1, 1))
        return x_db.reshape(shape[:-1] + x_db.shape[-2:])


def spectrogram_batch() -> tuple[Any, ...]:
    wav = torch.rand(16000)
    batch = torch.stack([wav, wav])
    return SpecMaker().eval(), (batch,), {}, ({0: "batch"},)


class InterpolateScale(nn.Module):
    """pytorch#124884: conv, `interpolate(scale_factor=2)`, conv, with dynamic sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.conv_down1 = nn.Conv2d(1, 16, 3, 1, 0)
        self.activation = nn.LeakyReLU(negative_slope=0.2, inplace=True)
        self.conv_up1 = nn.Conv2d(16, 1, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv_down1(x)
        x = self.activation(x)
        x = F.interpolate(x, scale_factor=2, mode="nearest")  # @interp-scale
        x = self.conv_up1(x)
        return self.activation(x)


def interpolate_scale() -> tuple[Any, ...]:
    torch.manual_seed(0)
    x = torch.randn(2, 1, 64, 64)
    return InterpolateScale().eval(), (x,), {}, ({0: "batch", 2: "height", 3: "width"},)


# --------------------------------------------------------------------------- cannot be analysed


class QuantM(nn.Module):
    """pytorch#137111: eager-mode static quantization (QuantStub, Linear, ReLU, DeQuantStub)."""

    def __init__(self) -> None:
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.linear = nn.Linear(4, 8)
        self.relu = nn.ReLU()
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)  # @quant-stub
        x = self.linear(x)  # @quant-linear
        x = self.relu(x)
        return self.dequant(x)


def quantized_eager() -> tuple[Any, ...]:
    model_fp32 = QuantM().eval()
    model_fp32.qconfig = torch.ao.quantization.get_default_qconfig("x86")
    prepared = torch.ao.quantization.prepare(model_fp32)
    input_fp32 = torch.randn(1, 1, 4)
    prepared(input_fp32)  # @quant-calibrate
    model_int8 = torch.ao.quantization.convert(prepared)  # @quant-convert
    return model_int8, (input_fp32,), {}, None


def fake_quantize() -> tuple[Any, ...]:
    """pytorch#167063: the official FakeQuantize module, observer disabled."""
    fq = torch.ao.quantization.FakeQuantize()  # @fq-module
    fq = fq.eval()
    fq.disable_observer()
    return fq, (torch.zeros(1, 1),), {}, None


class GradOfSquare(nn.Module):
    """pytorch#125984: `torch.autograd.grad` inside forward (forces from energies)."""

    def forward(self, x: torch.Tensor) -> Any:
        y = x.square()
        return torch.autograd.grad(y.sum(), x)  # @autograd-grad


def autograd_grad() -> tuple[Any, ...]:
    x = torch.ones(3)
    x.requires_grad_(True)
    return GradOfSquare(), (x,), {}, None


# ------------------------------------------------------------------------ ops without a translation


class ISTFTHead(nn.Module):
    """pytorch#138830 (vocos): the ISTFT head: `torch.istft` of a complex spectrogram."""

    def __init__(self, dim: int = 16, n_fft: int = 64, hop: int = 16) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.out = nn.Linear(dim, n_fft + 2)
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.out(x).transpose(1, 2)
        mag, p = x.chunk(2, dim=1)
        mag = torch.exp(mag).clip(max=1e2)
        spec = mag * (torch.cos(p) + 1j * torch.sin(p))  # @istft-complex
        return torch.istft(spec, self.n_fft, self.hop, self.n_fft, self.window)  # @istft


def istft_head() -> tuple[Any, ...]:
    torch.manual_seed(0)
    return ISTFTHead().eval(), (torch.randn(2, 20, 16),), {}, None


FACTORIES = {
    f.__name__: f
    for f in (
        unique_tolist,
        where_single_arg,
        bool_mask_assign,
        masked_scatter,
        moe_routing,
        nms_postprocess,
        repeat_interleave_tensor,
        interpolate_size_tolist,
        item_index_loop,
        llama4_image_merge,
        scan_item_index,
        item_select,
        alias_listadd,
        alias_float_bias,
        sdpa_masked_row,
        sdpa_3d_embedding,
        sdpa_3d_linear,
        int_argument,
        resnet_dynamic_height,
        resnet_batch_one,
        view_size1,
        spectrogram_batch,
        interpolate_scale,
        quantized_eager,
        fake_quantize,
        autograd_grad,
        istft_head,
    )
}
