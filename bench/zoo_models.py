"""The model zoo of bench/zoo.py: real architectures, random init, small configs.

Each factory returns (model, args, kwargs, dynamic_shapes) like an onnxlint
target factory. transformers and MONAI are installed by zoo.py when missing
(never replacing torch). Sizes are small so that the ground truth (real
tensors, real weights) runs on a laptop.
"""

from __future__ import annotations

from typing import Any

import torch

TEXT_DIMS = {"input_ids": {0: "batch", 1: "seq"}}


def _ids(vocab: int = 64, batch: int = 2, seq: int = 8) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq))


def _text(model: Any) -> tuple[Any, ...]:
    model.eval()
    return model, (), {"input_ids": _ids()}, TEXT_DIMS


_SMALL = {
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "intermediate_size": 64,
    "vocab_size": 64,
}


def bert() -> tuple[Any, ...]:
    import transformers as t

    return _text(t.BertModel(t.BertConfig(**_SMALL)))


def roberta() -> tuple[Any, ...]:
    import transformers as t

    return _text(t.RobertaModel(t.RobertaConfig(**_SMALL, pad_token_id=1)))


def distilbert() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.DistilBertConfig(vocab_size=64, dim=32, n_layers=2, n_heads=4, hidden_dim=64)
    return _text(t.DistilBertModel(cfg))


def gpt2() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.GPT2Config(vocab_size=64, n_embd=32, n_layer=2, n_head=4, use_cache=False)
    return _text(t.GPT2Model(cfg))


def gpt_neox() -> tuple[Any, ...]:
    import transformers as t

    return _text(t.GPTNeoXModel(t.GPTNeoXConfig(**_SMALL, use_cache=False)))


def llama() -> tuple[Any, ...]:
    import transformers as t

    return _text(t.LlamaModel(t.LlamaConfig(**_SMALL, num_key_value_heads=2, use_cache=False)))


def mistral() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.MistralConfig(**_SMALL, num_key_value_heads=2, use_cache=False)
    return _text(t.MistralModel(cfg))


def qwen2() -> tuple[Any, ...]:
    import transformers as t

    return _text(t.Qwen2Model(t.Qwen2Config(**_SMALL, num_key_value_heads=2, use_cache=False)))


def mixtral_moe() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.MixtralConfig(
        **_SMALL,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        use_cache=False,
    )
    return _text(t.MixtralModel(cfg))


def qwen2_moe() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.Qwen2MoeConfig(
        **_SMALL,
        num_key_value_heads=2,
        num_experts=4,
        num_experts_per_tok=2,
        moe_intermediate_size=32,
        shared_expert_intermediate_size=32,
        use_cache=False,
    )
    return _text(t.Qwen2MoeModel(cfg))


def t5_encoder() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.T5Config(
        vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=2, num_heads=4, use_cache=False
    )
    return _text(t.T5EncoderModel(cfg))


def bart() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.BartConfig(
        vocab_size=64,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        use_cache=False,
    )
    return _text(t.BartModel(cfg))


def mamba_scan() -> tuple[Any, ...]:
    """State-space model: without the CUDA kernels, a Python scan over the sequence."""
    import transformers as t

    cfg = t.MambaConfig(
        vocab_size=64, hidden_size=32, state_size=4, num_hidden_layers=2, use_cache=False
    )
    return _text(t.MambaModel(cfg))


def vit_trunc_normal() -> tuple[Any, ...]:
    """ViT: `_init_weights` uses torch.nn.init.trunc_normal_."""
    import transformers as t

    cfg = t.ViTConfig(
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=64,
        image_size=32,
        patch_size=8,
        num_channels=3,
    )
    model = t.ViTModel(cfg).eval()
    return model, (torch.randn(2, 3, 32, 32),), {}, ({0: "batch"},)


def swin_trunc_normal() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.SwinConfig(
        image_size=32,
        patch_size=4,
        num_channels=3,
        embed_dim=16,
        depths=[1, 1],
        num_heads=[2, 2],
        window_size=4,
    )
    model = t.SwinModel(cfg).eval()
    return model, (torch.randn(2, 3, 32, 32),), {}, ({0: "batch"},)


def convnext() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.ConvNextConfig(
        num_channels=3, num_stages=2, hidden_sizes=[8, 16], depths=[1, 1], image_size=32
    )
    model = t.ConvNextModel(cfg).eval()
    return model, (torch.randn(2, 3, 32, 32),), {}, ({0: "batch"},)


def resnet() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.ResNetConfig(num_channels=3, embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1])
    model = t.ResNetModel(cfg).eval()
    return model, (torch.randn(2, 3, 32, 32),), {}, ({0: "batch"},)


def wav2vec2_audio() -> tuple[Any, ...]:
    import transformers as t

    cfg = t.Wav2Vec2Config(
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=4,
        intermediate_size=64,
        conv_dim=(8, 8),
        conv_stride=(5, 2),
        conv_kernel=(10, 3),
        num_conv_pos_embeddings=8,
        num_conv_pos_embedding_groups=2,
    )
    model = t.Wav2Vec2Model(cfg).eval()
    return model, (torch.randn(2, 400),), {}, ({0: "batch", 1: "samples"},)


def monai_unet() -> tuple[Any, ...]:
    from monai.networks.nets import UNet

    model = UNet(2, 1, 2, channels=(4, 8, 16), strides=(2, 2)).eval()
    return model, (torch.randn(2, 1, 32, 32),), {}, ({0: "batch"},)


def monai_segresnet() -> tuple[Any, ...]:
    from monai.networks.nets import SegResNet

    model = SegResNet(spatial_dims=3, init_filters=8, in_channels=1, out_channels=2).eval()
    return model, (torch.randn(2, 1, 16, 16, 16),), {}, ({0: "batch"},)


def monai_highresnet() -> tuple[Any, ...]:
    from monai.networks.nets import HighResNet

    model = HighResNet(spatial_dims=3, in_channels=1, out_channels=2, norm_type="batch").eval()
    return model, (torch.randn(2, 1, 16, 16, 16),), {}, ({0: "batch"},)


def monai_dynunet() -> tuple[Any, ...]:
    from monai.networks.nets import DynUNet

    model = DynUNet(
        2,
        1,
        2,
        kernel_size=[3, 3, 3],
        strides=[1, 2, 2],
        upsample_kernel_size=[2, 2],
        filters=[4, 8, 16],
    ).eval()
    return model, (torch.randn(2, 1, 32, 32),), {}, ({0: "batch"},)


def monai_swinunetr() -> tuple[Any, ...]:
    """Swin transformer UNet: trunc_normal_ init."""
    from monai.networks.nets import SwinUNETR

    model = SwinUNETR(in_channels=1, out_channels=2, feature_size=12, spatial_dims=2).eval()
    return model, (torch.randn(2, 1, 32, 32),), {}, ({0: "batch"},)


def monai_vit() -> tuple[Any, ...]:
    from monai.networks.nets import ViT

    model = ViT(
        in_channels=1,
        img_size=(32, 32),
        patch_size=(8, 8),
        hidden_size=32,
        mlp_dim=64,
        num_layers=2,
        num_heads=4,
        spatial_dims=2,
        classification=True,
    ).eval()
    return model, (torch.randn(2, 1, 32, 32),), {}, ({0: "batch"},)


class LSTMTagger(torch.nn.Module):
    """An RNN: a graph break for dynamo, no problem for torch.onnx.export."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(64, 16)
        self.lstm = torch.nn.LSTM(16, 16, batch_first=True)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, input_ids: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(input_ids))
        return self.head(hidden)


def lstm_tagger() -> tuple[Any, ...]:
    return LSTMTagger().eval(), (_ids(),), {}, ({0: "batch"},)


class ScatterMean(torch.nn.Module):
    """A silently wrong export (for --verify): scatter_reduce(reduce="mean")."""

    def forward(self, x: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        base = torch.zeros(4, x.shape[1])
        return base.scatter_reduce(0, index, x, reduce="mean", include_self=False) + 1


def scatter_mean_verify() -> tuple[Any, ...]:
    x = torch.randn(6, 3)
    index = torch.tensor([[0, 0, 0], [1, 1, 1], [0, 0, 0], [2, 2, 2], [3, 3, 3], [1, 1, 1]])
    return ScatterMean(), (x, index), {}, None


# ---------------------------------------------------------------- where users struggle most
# Data-dependent ops, eager int8, silent wrong results (issue 25): each from installable
# code (transformers, MONAI, diffusers, torch.ao), with what torch 2.13 does measured by
# zoo.py's ground truth.


def switch_moe() -> tuple[Any, ...]:
    """A mixture of experts with data-dependent routing (boolean indexing per expert)."""
    import transformers as t

    cfg = t.SwitchTransformersConfig(
        vocab_size=64,
        d_model=32,
        d_kv=8,
        d_ff=64,
        num_layers=2,
        num_sparse_encoder_layers=1,
        num_decoder_layers=1,
        num_sparse_decoder_layers=1,
        num_heads=4,
        num_experts=4,
    )
    return _text(t.SwitchTransformersEncoderModel(cfg))


class NMSDetector(torch.nn.Module):
    """A one-stage detection head with its post-processing: a score threshold (boolean
    indexing) and MONAI's pure-torch batched NMS (a while loop over the data)."""

    def __init__(self, classes: int = 3) -> None:
        super().__init__()
        self.backbone = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=4, padding=1), torch.nn.ReLU()
        )
        self.boxes = torch.nn.Conv2d(8, 4, 1)
        self.scores = torch.nn.Conv2d(8, classes, 1)

    def forward(self, images: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from monai.data.box_utils import batched_nms

        f = self.backbone(images)
        boxes = self.boxes(f).permute(0, 2, 3, 1).reshape(-1, 4)
        boxes = torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:].exp()], dim=1)
        logits = self.scores(f).sigmoid().permute(0, 2, 3, 1).reshape(boxes.shape[0], -1)
        scores, labels = logits.max(dim=1)
        keep = scores > 0.3
        boxes, scores, labels = boxes[keep], scores[keep], labels[keep]
        picked = batched_nms(boxes, scores, labels, nms_thresh=0.5)
        return boxes[picked], scores[picked], labels[picked]


def nms_detector() -> tuple[Any, ...]:
    return NMSDetector().eval(), (torch.randn(1, 3, 32, 32),), {}, None


def monai_unet_dynamic() -> tuple[Any, ...]:
    """A U-Net with skip connections and dynamic H/W: works for multiples of 4 only."""
    from monai.networks.nets import UNet

    model = UNet(
        spatial_dims=2,
        in_channels=1,
        out_channels=2,
        channels=(4, 8, 16),
        strides=(2, 2),
        num_res_units=1,
    ).eval()
    return model, (torch.randn(1, 1, 32, 32),), {}, {"x": {2: "h", 3: "w"}}


def bert_int8() -> tuple[Any, ...]:
    """Eager-mode dynamic int8 quantization (the transformers + torch.ao tutorial)."""
    import transformers as t

    model = t.BertModel(t.BertConfig(**_SMALL)).eval()
    quantized = torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)
    return quantized, (), {"input_ids": _ids()}, None


def diffusers_unet_float_timestep() -> tuple[Any, ...]:
    """diffusers' UNet2DModel with the timestep given as a Python float."""
    from diffusers import UNet2DModel

    model = UNet2DModel(
        sample_size=16,
        in_channels=3,
        out_channels=3,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("DownBlock2D", "AttnDownBlock2D"),
        up_block_types=("AttnUpBlock2D", "UpBlock2D"),
        norm_num_groups=4,
    ).eval()
    return model, (torch.randn(1, 3, 16, 16), 10.0), {}, None


def bart_aliased_ids() -> tuple[Any, ...]:
    """One tensor for the encoder's and the decoder's ids (`model(ids, decoder_input_ids=ids)`)."""
    import transformers as t

    cfg = t.BartConfig(
        vocab_size=64,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        max_position_embeddings=64,
        use_cache=False,
    )
    ids = torch.randint(3, 64, (2, 8))
    return t.BartModel(cfg).eval(), (), {"input_ids": ids, "decoder_input_ids": ids}, None


def bert_padded_row_verify() -> tuple[Any, ...]:
    """BERT with a batch row that is all padding: its attention rows are fully masked."""
    import transformers as t

    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1] = 0
    model = t.BertModel(t.BertConfig(**_SMALL)).eval()
    return model, (), {"input_ids": _ids(), "attention_mask": mask}, None


ZOO = {
    f.__name__: f
    for f in (
        bert,
        roberta,
        distilbert,
        gpt2,
        gpt_neox,
        llama,
        mistral,
        qwen2,
        mixtral_moe,
        qwen2_moe,
        t5_encoder,
        bart,
        mamba_scan,
        vit_trunc_normal,
        swin_trunc_normal,
        convnext,
        resnet,
        wav2vec2_audio,
        monai_unet,
        monai_segresnet,
        monai_highresnet,
        monai_dynunet,
        monai_swinunetr,
        monai_vit,
        lstm_tagger,
        scatter_mean_verify,
        switch_moe,
        nms_detector,
        monai_unet_dynamic,
        bert_int8,
        diffusers_unet_float_timestep,
        bart_aliased_ids,
        bert_padded_row_verify,
    )
}
VERIFY = {"scatter_mean_verify", "bert_padded_row_verify"}
