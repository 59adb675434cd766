"""timm: every registered model name mapped to the class its entrypoint builds (captured from
``build_model_with_cfg`` without building), the most used architectures built small and observed, the
other classes' ``forward_features``/``forward_head``/``forward_intermediates`` read."""

from __future__ import annotations

import sys
from typing import Any

from .common import LibraryTables, qualname

# (model name, keyword arguments that make it small, input size, device); one per class. The most used
# architectures are built small on the CPU; others whose methods reading cannot decide are built at
# their registered size on the meta device (no memory, no initialisation compute: the forward hooks
# fire as on the CPU).
BUILDS: list[tuple[str, dict[str, Any], int, str]] = [
    ("vit_tiny_patch16_224", {"img_size": 32, "depth": 2}, 32, "cpu"),
    ("deit_tiny_distilled_patch16_224", {"img_size": 32, "depth": 2}, 32, "cpu"),
    ("eva02_tiny_patch14_224", {"img_size": 28, "depth": 2}, 28, "cpu"),
    ("beit_base_patch16_224", {"img_size": 32, "depth": 1, "embed_dim": 64, "num_heads": 2}, 32, "cpu"),
    ("swin_tiny_patch4_window7_224", {"img_size": 64, "window_size": 2, "depths": (1, 1, 1, 1)}, 64, "cpu"),
    ("resnet18", {}, 32, "cpu"),
    ("convnext_atto", {}, 32, "cpu"),
    ("efficientnet_b0", {}, 32, "cpu"),
    ("mobilenetv3_small_050", {}, 32, "cpu"),
    ("regnetx_002", {}, 32, "cpu"),
    ("densenet121", {}, 32, "cpu"),
    ("mixer_s16_224", {"img_size": 32}, 32, "cpu"),
    ("efficientvit_b0", {}, 64, "cpu"),
    ("poolformerv2_s12", {}, 32, "cpu"),
    ("fastvit_t8", {}, 64, "cpu"),
    ("edgenext_xx_small", {}, 64, "cpu"),
    ("rexnet_100", {}, 32, "cpu"),
    ("ghostnet_100", {}, 32, "cpu"),
    ("pvt_v2_b0", {}, 32, "cpu"),
    ("gernet_s", {}, 32, "cpu"),
    ("xcit_nano_12_p16_224", {"img_size": 32}, 32, "cpu"),
    ("inception_v3", {}, 299, "meta"),
    ("inception_v4", {}, 299, "meta"),
    ("inception_resnet_v2", {}, 299, "meta"),
    ("vgg11", {}, 224, "meta"),
    ("resnetv2_50", {}, 224, "meta"),
    ("legacy_seresnet18", {}, 224, "meta"),
    ("legacy_xception", {}, 299, "meta"),
    ("dla34", {}, 224, "meta"),
    ("dpn68", {}, 224, "meta"),
    ("levit_128s", {}, 224, "meta"),
    ("twins_svt_small", {}, 224, "meta"),
    ("tresnet_m", {}, 224, "meta"),
    ("ese_vovnet19b_dw", {}, 224, "meta"),
    ("selecsls42b", {}, 224, "meta"),
    ("vit_relpos_small_patch16_224", {}, 224, "meta"),
    ("hrnet_w18_small", {}, 224, "meta"),
    ("cspresnet50", {}, 224, "meta"),
]

READ_METHODS = ("forward_features", "forward_head", "forward_intermediates")


class _Captured(Exception):
    def __init__(self, model_class: Any) -> None:
        self.model_class = model_class


def _registered_classes() -> dict[str, type]:
    """Model name -> the class its entrypoint gives build_model_with_cfg (nothing is built)."""
    import timm.models  # noqa: F401  (registers every model)
    from timm.models import _registry

    def capture(model_cls: Any, *args: Any, **kwargs: Any) -> Any:
        raise _Captured(model_cls)

    patched = {
        name: module
        for name, module in list(sys.modules.items())
        if name.startswith("timm.models") and module is not None and hasattr(module, "build_model_with_cfg")
    }
    originals = {name: module.build_model_with_cfg for name, module in patched.items()}
    found: dict[str, type] = {}
    try:
        for module in patched.values():
            module.build_model_with_cfg = capture
        for name, entrypoint in sorted(_registry._model_entrypoints.items()):
            try:
                entrypoint(pretrained=False)
            except _Captured as captured:
                if isinstance(captured.model_class, type):
                    found[name] = captured.model_class
                continue
            raise RuntimeError(f"timm entrypoint {name} does not build through build_model_with_cfg")
    finally:
        for name, module in patched.items():
            module.build_model_with_cfg = originals[name]
    return found


def describe(tables: LibraryTables) -> None:
    import timm
    import torch

    tables.public_modules = ("timm.models",)
    by_name = _registered_classes()
    classes = sorted({qualname(cls): cls for cls in by_name.values()}.items())
    for _, cls in classes:
        tables.add_class(cls)
    tables.add_factory(
        timm.create_model,
        {
            "by_argument": {
                "position": 0,
                "keyword": "model_name",
                "values": {name: qualname(cls) for name, cls in sorted(by_name.items())},
                "attribute": None,
                "tag_separator": ".",
            },
            "otherwise": {"candidates": [name for name, _ in classes]},
            # features_only wraps the model in a feature extractor class (FeatureListNet, ...)
            "keyword_overrides": {"features_only": {"unknown": True}},
        },
    )

    built = set()
    for name, kwargs, size, device in BUILDS:
        torch.manual_seed(0)
        with torch.device(device):
            model = timm.create_model(name, pretrained=False, num_classes=10, **kwargs).eval()
        if type(model) is not by_name[name]:
            raise RuntimeError(
                f"{name} built a {qualname(type(model))}, the registry capture said {qualname(by_name[name])}"
            )
        if type(model) in built:
            raise RuntimeError(f"{name}: {qualname(type(model))} is built twice")
        built.add(type(model))
        tables.record_built(model)
        image = torch.randn(1, 3, size, size, device=device)
        where = "" if device == "cpu" else " on the meta device"
        with torch.no_grad():
            features = model.forward_features(image)
        tables.observe(model, "forward_features", lambda m: m(image), f"forward_features(x){where}")
        tables.observe(model, "forward_head", lambda m: m(features), f"forward_head(features){where}")
        if hasattr(model, "forward_intermediates"):
            tables.observe(
                model, "forward_intermediates", lambda m: m(image), f"forward_intermediates(x){where}", optional=True
            )
        for method, call in (
            ("get_classifier", "get_classifier()"),
            ("no_weight_decay", "no_weight_decay()"),
            ("group_matcher", "group_matcher()"),
        ):
            if hasattr(model, method):
                tables.observe(model, method, lambda m: m(), call + where, optional=True)
        tables.observe(
            model, "set_grad_checkpointing", lambda m: m(True), f"set_grad_checkpointing(True){where}", optional=True
        )
        with torch.device(device):
            tables.observe(
                model, "reset_classifier", lambda m: m(5), f"reset_classifier(num_classes){where}", optional=True
            )
    for _, cls in classes:
        tables.read_later(cls, [method for method in READ_METHODS if hasattr(cls, method)])
