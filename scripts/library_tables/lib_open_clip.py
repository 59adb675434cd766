"""open_clip: the model class of every built-in config name (captured from create_model's own choice
between CLIP, CustomTextCLIP and CoCa without building), tiny CLIP (ViT and ResNet towers),
CustomTextCLIP and CoCa built and observed."""

from __future__ import annotations

from typing import Any

from .common import LibraryTables, qualname

TEXT = {"context_length": 8, "vocab_size": 64, "width": 32, "heads": 2, "layers": 1}
VISION_VIT = {"layers": 1, "width": 32, "patch_size": 8, "image_size": 32, "head_width": 16}
VISION_RESNET = {"layers": (1, 1, 1, 1), "width": 8, "image_size": 32, "head_width": 16}
MULTIMODAL = {"context_length": 8, "vocab_size": 64, "width": 32, "heads": 2, "layers": 1, "attn_pooler_heads": 2}
# CoCa's towers return their tokens too (as in open_clip's coca_*.json configs)
COCA_VISION = {**VISION_VIT, "attentional_pool": True, "attn_pooler_heads": 2, "output_tokens": True}
COCA_TEXT = {**TEXT, "embed_cls": True, "output_tokens": True}


class _Captured(Exception):
    def __init__(self, model_class: type) -> None:
        self.model_class = model_class


def _classes_by_name() -> dict[str, type]:
    """Built-in config name -> the class create_model instantiates for it (nothing is built)."""
    import open_clip
    from open_clip import factory

    originals = {name: getattr(factory, name) for name in ("CLIP", "CustomTextCLIP", "CoCa")}

    def stand_in(model_class: type) -> Any:
        def capture(*args: Any, **kwargs: Any) -> Any:
            raise _Captured(model_class)

        return capture

    found = {}
    try:
        for name, model_class in originals.items():
            setattr(factory, name, stand_in(model_class))
        for model_name in open_clip.list_models():
            try:
                factory.create_model(model_name, pretrained=None, pretrained_text=False)
            except _Captured as captured:
                found[model_name] = captured.model_class
                continue
            raise RuntimeError(
                f"open_clip.create_model({model_name!r}) did not instantiate CLIP, CustomTextCLIP or CoCa"
            )
    finally:
        for name, model_class in originals.items():
            setattr(factory, name, model_class)
    return found


def describe(tables: LibraryTables) -> None:
    import open_clip
    import torch
    from open_clip import factory

    tables.public_modules = ("open_clip",)
    by_name = _classes_by_name()
    model_classes = [open_clip.CLIP, open_clip.CustomTextCLIP, open_clip.CoCa]
    for cls in model_classes:
        tables.add_class(cls)
    unknown = {"unknown": True}
    model_spec = {
        "by_argument": {
            "position": 0,
            "keyword": "model_name",
            "values": {name: qualname(cls) for name, cls in sorted(by_name.items())},
            "attribute": None,
            "tag_separator": None,
        },
        # 'hf-hub:' / 'local-dir:' names: the class their config selects
        "otherwise": {"candidates": sorted(qualname(cls) for cls in model_classes)},
        "keyword_overrides": {
            "force_custom_text": {"candidates": [qualname(open_clip.CoCa), qualname(open_clip.CustomTextCLIP)]},
            "jit": unknown,
        },
    }
    tables.add_factory(factory.create_model, model_spec)
    tables.add_factory(factory.create_model_and_transforms, {"tuple": {"0": model_spec}})
    # create_model_from_pretrained returns (model, preprocess), or the model with return_transform=False
    tables.add_factory(
        factory.create_model_from_pretrained,
        {"tuple": {"0": model_spec}, "keyword_overrides": {"return_transform=False": model_spec}},
    )

    image = torch.randn(1, 3, 32, 32)
    text = torch.randint(0, TEXT["vocab_size"], (1, TEXT["context_length"]))
    builds = [
        (open_clip.CLIP, {"vision_cfg": VISION_VIT, "text_cfg": TEXT}),
        (open_clip.CLIP, {"vision_cfg": VISION_RESNET, "text_cfg": TEXT}),
        (open_clip.CustomTextCLIP, {"vision_cfg": VISION_VIT, "text_cfg": TEXT}),
        (open_clip.CoCa, {"vision_cfg": COCA_VISION, "text_cfg": COCA_TEXT, "multimodal_cfg": MULTIMODAL}),
    ]
    for model_class, kwargs in builds:
        torch.manual_seed(0)
        model = model_class(embed_dim=16, **kwargs).eval()
        tables.record_built(model)
        tables.observe(model, "encode_image", lambda m: m(image), "encode_image(image)")
        tables.observe(model, "encode_text", lambda m: m(text), "encode_text(text)")
        tables.observe(model, "get_logits", lambda m: m(image, text), "get_logits(image, text)", optional=True)
        tables.observe(
            model, "forward_intermediates", lambda m: m(image, text), "forward_intermediates(image, text)", optional=True
        )
        tables.observe(model, "no_weight_decay", lambda m: m(), "no_weight_decay()", optional=True)
        tables.observe(
            model, "set_grad_checkpointing", lambda m: m(True), "set_grad_checkpointing(True)", optional=True
        )
        if model_class is open_clip.CoCa:
            # CoCa.generate asserts that transformers has BeamSearchScorer, which transformers 5 removed:
            # with the pinned versions it raises AssertionError before running anything; decided by reading
            tables.read_later(model_class, ["generate"])
        tables.observe(model, "lock_text_tower", lambda m: m(), "lock_text_tower()", optional=True)
        tables.observe(model, "lock_image_tower", lambda m: m(), "lock_image_tower()", optional=True)
