"""torchvision: every model builder of torchvision.models.list_models() and the class it returns (its
return annotation, confirmed by building where a model is built), get_model by name, and the common
classification/detection/segmentation/video models built (small on the CPU, or on the meta device) for
their ownership facts and observations."""

from __future__ import annotations

import inspect
from typing import Any

from .common import LibraryTables, qualname

# (builder name, keyword arguments, input shape or None (built for ownership only), device)
BUILDS: list[tuple[str, dict[str, Any], tuple[int, ...] | None, str]] = [
    ("resnet18", {"num_classes": 10}, (1, 3, 32, 32), "cpu"),
    ("mobilenet_v3_small", {"num_classes": 10}, (1, 3, 32, 32), "cpu"),
    ("vit_b_16", {}, (1, 3, 224, 224), "meta"),
    ("swin_t", {}, (1, 3, 224, 224), "meta"),
    ("convnext_tiny", {}, (1, 3, 224, 224), "meta"),
    ("efficientnet_b0", {}, (1, 3, 224, 224), "meta"),
    # its builder computes the block widths with tensors: not on the meta device
    ("regnet_y_400mf", {"num_classes": 10}, (1, 3, 32, 32), "cpu"),
    ("densenet121", {}, (1, 3, 224, 224), "meta"),
    ("maxvit_t", {}, (1, 3, 224, 224), "meta"),
    ("vgg11", {}, (1, 3, 224, 224), "meta"),
    ("mobilenet_v2", {}, (1, 3, 224, 224), "meta"),
    ("fasterrcnn_mobilenet_v3_large_fpn", {"weights_backbone": None}, None, "meta"),
    ("maskrcnn_resnet50_fpn", {"weights_backbone": None}, None, "meta"),
    ("retinanet_resnet50_fpn", {"weights_backbone": None}, None, "meta"),
    ("ssdlite320_mobilenet_v3_large", {"weights_backbone": None}, None, "meta"),
    ("deeplabv3_mobilenet_v3_large", {"weights_backbone": None}, None, "meta"),
    ("fcn_resnet50", {"weights_backbone": None}, None, "meta"),
    ("lraspp_mobilenet_v3_large", {"weights_backbone": None}, None, "meta"),
    ("r3d_18", {}, None, "meta"),
    ("raft_small", {}, None, "meta"),
]

# Methods observed where the built model has them: (method, call text); the input is the model's input.
OBSERVED = [("_forward_impl", "_forward_impl(x)"), ("_process_input", "_process_input(x)")]


def describe(tables: LibraryTables) -> None:
    import torch
    import torchvision.models as models

    tables.public_modules = ("torchvision.models",)
    returns: dict[str, type] = {}
    for name in models.list_models():
        builder = models.get_model_builder(name)
        annotation = inspect.signature(builder).return_annotation
        if not (isinstance(annotation, type) and issubclass(annotation, torch.nn.Module)):
            raise RuntimeError(f"torchvision builder {name} has no model class as its return annotation")
        returns[name] = annotation
        tables.add_class(annotation)
        tables.add_factory(builder, {"instance": qualname(annotation)})
    tables.add_factory(
        models.get_model,
        {
            "by_argument": {
                "position": 0,
                "keyword": "name",
                "values": {name: qualname(cls) for name, cls in sorted(returns.items())},
                "attribute": None,
                "tag_separator": None,
            },
            "otherwise": {"candidates": sorted({qualname(cls) for cls in returns.values()})},
        },
    )

    for name, kwargs, shape, device in BUILDS:
        torch.manual_seed(0)
        with torch.device(device):
            model = models.get_model(name, weights=None, **kwargs).eval()
        if type(model) is not returns[name]:
            raise RuntimeError(f"{name} built a {qualname(type(model))}, its annotation says {qualname(returns[name])}")
        tables.record_built(model)
        if shape is None:
            continue
        where = "" if device == "cpu" else " on the meta device"
        for method, call in OBSERVED:
            if hasattr(model, method):
                tables.observe(model, method, lambda m: m(torch.randn(*shape, device=device)), call + where)
