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
    )
}
VERIFY = {"scatter_mean_verify"}
