"""diffusers: every model class the package exports (the candidates of diffusers.AutoModel), the
autoencoders, UNets and diffusion transformers people train with Fabric built small and observed,
``from_pretrained`` / ``from_config`` / ``from_single_file`` returning the class they are called on."""

from __future__ import annotations

import inspect
import tempfile
from typing import Any

from .common import LibraryTables, qualname

AUTOENCODER_KL = {
    "in_channels": 3, "out_channels": 3, "down_block_types": ("DownEncoderBlock2D",),
    "up_block_types": ("UpDecoderBlock2D",), "block_out_channels": (8,), "layers_per_block": 1,
    "latent_channels": 4, "norm_num_groups": 4, "sample_size": 16,
}
VQ_MODEL = {**AUTOENCODER_KL, "num_vq_embeddings": 16, "vq_embed_dim": 4}
AUTOENCODER_TINY = {
    "encoder_block_out_channels": (8, 8), "decoder_block_out_channels": (8, 8),
    "num_encoder_blocks": (1, 1), "num_decoder_blocks": (1, 1), "latent_channels": 4,
}
UNET_2D = {
    "sample_size": 16, "in_channels": 3, "out_channels": 3, "layers_per_block": 1, "block_out_channels": (8, 16),
    "down_block_types": ("DownBlock2D", "AttnDownBlock2D"), "up_block_types": ("AttnUpBlock2D", "UpBlock2D"),
    "norm_num_groups": 4, "attention_head_dim": 8,
}
UNET_2D_CONDITION = {
    "sample_size": 16, "in_channels": 4, "out_channels": 4, "layers_per_block": 1, "block_out_channels": (8, 16),
    "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"), "up_block_types": ("UpBlock2D", "CrossAttnUpBlock2D"),
    "cross_attention_dim": 8, "norm_num_groups": 4, "attention_head_dim": 2,
}
DIT = {
    "num_attention_heads": 2, "attention_head_dim": 4, "in_channels": 4, "num_layers": 1, "sample_size": 8,
    "patch_size": 2, "num_embeds_ada_norm": 10,
}
SD3 = {
    "sample_size": 8, "patch_size": 2, "in_channels": 4, "num_layers": 1, "attention_head_dim": 8,
    "num_attention_heads": 2, "joint_attention_dim": 16, "caption_projection_dim": 16, "pooled_projection_dim": 16,
    "out_channels": 4, "pos_embed_max_size": 16,
}
FLUX = {
    "patch_size": 1, "in_channels": 4, "num_layers": 1, "num_single_layers": 1, "attention_head_dim": 8,
    "num_attention_heads": 2, "joint_attention_dim": 16, "pooled_projection_dim": 16, "axes_dims_rope": (2, 2, 4),
}
CONTROLNET = {
    "in_channels": 4, "layers_per_block": 1, "block_out_channels": (8, 16),
    "down_block_types": ("CrossAttnDownBlock2D", "DownBlock2D"), "cross_attention_dim": 8, "norm_num_groups": 4,
    "attention_head_dim": 2, "conditioning_embedding_out_channels": (4, 8),
}

# ModelMixin methods that look like they could run the model and do not.
TRAPS = [
    ("enable_gradient_checkpointing", "enable_gradient_checkpointing()"),
    ("disable_gradient_checkpointing", "disable_gradient_checkpointing()"),
    ("num_parameters", "num_parameters()"),
    ("set_default_attn_processor", "set_default_attn_processor()"),
    ("enable_slicing", "enable_slicing()"),
    ("disable_slicing", "disable_slicing()"),
    ("enable_tiling", "enable_tiling()"),
    ("disable_tiling", "disable_tiling()"),
]


def _model_classes() -> list[type]:
    """Every nn.Module class the diffusers package exports (the classes diffusers.AutoModel may load)."""
    import diffusers

    found = {}
    for name in dir(diffusers):
        if name.startswith("_"):
            continue
        try:
            obj = getattr(diffusers, name)
        except Exception:  # an optional backend missing: not a class of this environment
            continue
        if inspect.isclass(obj) and issubclass(obj, diffusers.ModelMixin) and obj.__module__.startswith("diffusers."):
            found[qualname(obj)] = obj
    return [found[name] for name in sorted(found)]


def describe(tables: LibraryTables) -> None:
    import diffusers
    import torch
    from diffusers.configuration_utils import ConfigMixin
    from diffusers.loaders.single_file_model import FromOriginalModelMixin

    diffusers.utils.logging.set_verbosity_error()
    tables.public_modules = ("diffusers.models",)
    classes = _model_classes()
    for cls in classes:
        tables.add_class(cls)
    tables.add_class(diffusers.AutoModel)
    receiver = {"receiver": True}
    tables.add_factory(None, receiver, key=f"{qualname(diffusers.ModelMixin)}.from_pretrained")
    tables.add_factory(None, receiver, key=f"{qualname(FromOriginalModelMixin)}.from_single_file")
    tables.add_factory(
        None,
        {"receiver": True, "keyword_overrides": {"return_unused_kwargs": {"tuple": {"0": receiver}}}},
        key=f"{qualname(ConfigMixin)}.from_config",
    )
    candidates = {"candidates": [qualname(cls) for cls in classes]}
    # AutoModel loads the class its config names (trust_remote_code: a class of the checkpoint's code)
    overrides = {"trust_remote_code": {"unknown": True}}
    tables.add_factory(
        None, {**candidates, "keyword_overrides": overrides}, key=f"{qualname(diffusers.AutoModel)}.from_pretrained"
    )
    tables.add_factory(
        None, {**candidates, "keyword_overrides": overrides}, key=f"{qualname(diffusers.AutoModel)}.from_config"
    )

    image = torch.randn(1, 3, 16, 16)
    builds: list[tuple[type, dict[str, Any], list[tuple[str, Any, str]]]] = [
        (diffusers.AutoencoderKL, AUTOENCODER_KL, [
            ("encode", lambda m: m(image), "encode(x)"),
            ("decode", lambda m: m(torch.randn(1, 4, 16, 16)), "decode(z)"),
        ]),
        (diffusers.VQModel, VQ_MODEL, [
            ("encode", lambda m: m(image), "encode(x)"),
            ("decode", lambda m: m(torch.randn(1, 4, 16, 16)), "decode(h)"),
        ]),
        (diffusers.AutoencoderTiny, AUTOENCODER_TINY, [
            ("encode", lambda m: m(image), "encode(x)"),
            ("decode", lambda m: m(torch.randn(1, 4, 8, 8)), "decode(x)"),
        ]),
        (diffusers.UNet2DModel, UNET_2D, []),
        (diffusers.UNet2DConditionModel, UNET_2D_CONDITION, []),
        (diffusers.DiTTransformer2DModel, DIT, []),
        (diffusers.SD3Transformer2DModel, SD3, []),
        (diffusers.FluxTransformer2DModel, FLUX, []),
        (diffusers.ControlNetModel, CONTROLNET, []),
    ]
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-tables-") as save_directory:
        for model_class, config, observations in builds:
            torch.manual_seed(0)
            model = model_class(**config).eval()
            tables.record_built(model)
            for method, invoke, call in observations:
                tables.observe(model, method, invoke, call)
            for method, call in TRAPS:
                tables.observe(model, method, lambda m: m(), call, optional=True)
            tables.observe(model, "save_pretrained", lambda m: m(save_directory), "save_pretrained(save_directory)")
