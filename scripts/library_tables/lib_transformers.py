"""transformers: the model families people use with Fabric, built from small configs and observed;
every class of every ``AutoModel*`` mapping described (bases, attributes) so that a method's owner is
found for any candidate of ``AutoModelFor*.from_pretrained``; ``generate`` overrides read where no
model of the class is built."""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import Callable
from typing import Any

from .common import LibraryTables, qualname

VOCAB = 99
# Keyword arguments that make a config small, applied where the config class accepts them.
SMALL: dict[str, Any] = {
    "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
    "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8, "max_position_embeddings": 64,
    "n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "n_inner": 64,
    "d_model": 32, "d_ff": 64, "d_kv": 8, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4,
    "encoder_layers": 2, "decoder_layers": 2, "encoder_attention_heads": 4, "decoder_attention_heads": 4,
    "encoder_ffn_dim": 64, "decoder_ffn_dim": 64, "ffn_dim": 64, "word_embed_proj_dim": 32,
    "image_size": 32, "patch_size": 8, "projection_dim": 16,
    "dim": 32, "hidden_dim": 64, "n_layers": 2, "n_heads": 4,
    "num_local_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16,
    "max_source_positions": 16, "max_target_positions": 64, "num_mel_bins": 16,
    "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 1,
}

# The Auto classes whose candidates are all described: those whose models generate, and the task heads
# Fabric code fine-tunes. The others (AutoModel, AutoBackbone, detection, audio, ...) are described as
# returning some PreTrainedModel: their candidates would double the table and a method call on an
# unknown checkpoint's class could not be decided from them anyway.
DESCRIBED_AUTO_CLASSES = (
    "AutoModelForCausalLM", "AutoModelForSeq2SeqLM", "AutoModelForImageTextToText", "AutoModelForMultimodalLM",
    "AutoModelForSpeechSeq2Seq", "AutoModelForMaskedLM", "AutoModelForSequenceClassification",
    "AutoModelForTokenClassification", "AutoModelForQuestionAnswering", "AutoModelForMultipleChoice",
    "AutoModelForImageClassification", "AutoModelForZeroShotImageClassification", "AutoModelForCTC",
    "AutoModelForPreTraining", "AutoModelForTextEncoding",
)

# (config class, overrides, model classes to build: the first is observed in full)
# kinds: causal (generate), seq2seq (generate, get_encoder/get_decoder), encoder, vision,
# dual (get_text_features/get_image_features), whisper, blip, llava.
ARCHITECTURES: list[tuple[str, str, dict[str, Any], list[str]]] = [
    ("causal", "GPT2Config", {}, ["GPT2LMHeadModel", "GPT2Model"]),
    ("causal", "LlamaConfig", {}, ["LlamaForCausalLM", "LlamaModel", "LlamaForSequenceClassification"]),
    ("causal", "MistralConfig", {}, ["MistralForCausalLM"]),
    ("causal", "Qwen2Config", {}, ["Qwen2ForCausalLM"]),
    ("causal", "Qwen3Config", {}, ["Qwen3ForCausalLM"]),
    ("causal", "GemmaConfig", {}, ["GemmaForCausalLM"]),
    ("causal", "Gemma2Config", {}, ["Gemma2ForCausalLM"]),
    ("causal", "PhiConfig", {}, ["PhiForCausalLM"]),
    ("causal", "Phi3Config", {}, ["Phi3ForCausalLM"]),
    ("causal", "GPTNeoXConfig", {}, ["GPTNeoXForCausalLM"]),
    ("causal", "OPTConfig", {}, ["OPTForCausalLM"]),
    ("causal", "FalconConfig", {}, ["FalconForCausalLM"]),
    ("causal", "BloomConfig", {}, ["BloomForCausalLM"]),
    ("causal", "MixtralConfig", {}, ["MixtralForCausalLM"]),
    ("causal", "GPTNeoConfig", {"attention_types": [[["global", "local"], 1]]}, ["GPTNeoForCausalLM"]),
    ("seq2seq", "T5Config", {}, ["T5ForConditionalGeneration", "T5EncoderModel"]),
    ("seq2seq", "BartConfig", {}, ["BartForConditionalGeneration"]),
    ("encoder", "BertConfig", {}, ["BertModel", "BertForSequenceClassification", "BertForMaskedLM"]),
    ("encoder", "RobertaConfig", {}, ["RobertaModel", "RobertaForSequenceClassification"]),
    ("encoder", "DistilBertConfig", {}, ["DistilBertModel", "DistilBertForSequenceClassification"]),
    ("encoder", "DebertaV2Config", {}, ["DebertaV2Model", "DebertaV2ForSequenceClassification"]),
    ("vision", "ViTConfig", {}, ["ViTForImageClassification", "ViTModel"]),
    ("vision", "Dinov2Config", {}, ["Dinov2Model"]),
    ("dual", "CLIPConfig", {}, ["CLIPModel", "CLIPVisionModel", "CLIPTextModel"]),
    ("dual", "SiglipConfig", {}, ["SiglipModel"]),
    ("whisper", "WhisperConfig", {}, ["WhisperForConditionalGeneration"]),
    ("blip", "BlipConfig", {}, ["BlipForConditionalGeneration"]),
    ("llava", "LlavaConfig", {}, ["LlavaForConditionalGeneration"]),
]

# Methods of PreTrainedModel and its mixins that look like they might run the model and do not
# (observed on the first model class of each architecture when it has them).
TRAPS: list[tuple[str, Callable[[Callable[..., Any]], Any], str]] = [
    ("get_input_embeddings", lambda method: method(), "get_input_embeddings()"),
    ("get_output_embeddings", lambda method: method(), "get_output_embeddings()"),
    ("num_parameters", lambda method: method(), "num_parameters()"),
    ("get_memory_footprint", lambda method: method(), "get_memory_footprint()"),
    ("gradient_checkpointing_enable", lambda method: method(), "gradient_checkpointing_enable()"),
    ("gradient_checkpointing_disable", lambda method: method(), "gradient_checkpointing_disable()"),
    ("enable_input_require_grads", lambda method: method(), "enable_input_require_grads()"),
    ("disable_input_require_grads", lambda method: method(), "disable_input_require_grads()"),
    ("tie_weights", lambda method: method(), "tie_weights()"),
    ("can_generate", lambda method: method(), "can_generate()"),
]


def _small(config_class: type, overrides: dict[str, Any]) -> Any:
    """A small config of config_class: SMALL where accepted, sub-configs made small the same way."""
    from transformers import AutoConfig

    parameters = inspect.signature(config_class.__init__).parameters
    kwargs = {key: value for key, value in SMALL.items() if key in parameters}
    for name, sub_class in getattr(config_class, "sub_configs", {}).items():
        if name in overrides or sub_class is AutoConfig:
            continue
        sub_parameters = inspect.signature(sub_class.__init__).parameters
        kwargs[name] = {key: value for key, value in SMALL.items() if key in sub_parameters}
    kwargs.update(overrides)
    return config_class(**kwargs)


def _llava_config() -> Any:
    from transformers import CLIPVisionConfig, LlamaConfig, LlavaConfig

    vision = _small(CLIPVisionConfig, {})
    text = _small(LlamaConfig, {})
    return LlavaConfig(vision_config=vision, text_config=text, image_token_id=VOCAB - 1, image_seq_length=16)


def _ids(torch: Any, length: int = 4) -> Any:
    return torch.randint(3, VOCAB - 2, (1, length))


def _observations(kind: str, torch: Any) -> list[tuple[str, Callable[[Callable[..., Any]], Any], str]]:
    generate = "generate(input_ids, max_new_tokens=2, do_sample=False)"
    pixels = lambda: torch.randn(1, 3, 32, 32)  # noqa: E731
    if kind == "causal":
        return [("generate", lambda m: m(_ids(torch), max_new_tokens=2, do_sample=False), generate)]
    if kind == "seq2seq":
        return [
            (
                "generate",
                lambda m: m(_ids(torch), max_new_tokens=2, do_sample=False, decoder_start_token_id=0),
                "generate(input_ids, max_new_tokens=2, do_sample=False, decoder_start_token_id=0)",
            ),
            ("get_encoder", lambda m: m(), "get_encoder()"),
            ("get_decoder", lambda m: m(), "get_decoder()"),
        ]
    if kind == "dual":
        return [
            ("get_text_features", lambda m: m(_ids(torch)), "get_text_features(input_ids)"),
            ("get_image_features", lambda m: m(pixels()), "get_image_features(pixel_values)"),
        ]
    if kind == "whisper":
        return [
            (
                "generate",
                lambda m: m(torch.randn(1, SMALL["num_mel_bins"], 2 * SMALL["max_source_positions"]), max_new_tokens=2),
                "generate(input_features, max_new_tokens=2)",
            ),
            ("get_encoder", lambda m: m(), "get_encoder()"),
        ]
    if kind == "blip":
        return [
            (
                "generate",
                lambda m: m(pixels(), _ids(torch), max_new_tokens=2),
                "generate(pixel_values, input_ids, max_new_tokens=2)",
            )
        ]
    if kind == "llava":
        return [
            ("generate", lambda m: m(_ids(torch), max_new_tokens=2, do_sample=False), generate),
            ("get_image_features", lambda m: m(pixels()), "get_image_features(pixel_values)"),
        ]
    return []


def _config_for(model_class: type, config: Any) -> Any:
    """config, or its sub-config of the model class's config class (CLIPVisionModel of a CLIPConfig)."""
    if isinstance(config, model_class.config_class):
        return config
    for name in config.sub_configs:
        sub = getattr(config, name)
        if isinstance(sub, model_class.config_class):
            return sub
    raise RuntimeError(f"no config of {model_class.__name__} in {type(config).__name__}")


def _input_embeddings(model: Any) -> Any:
    try:
        return model.get_input_embeddings()
    except NotImplementedError:  # composite models (CLIPModel) have no single input embedding
        return None


def _auto_classes() -> dict[str, type]:
    from transformers.models.auto import auto_factory, modeling_auto

    found = {}
    for name in dir(modeling_auto):
        obj = getattr(modeling_auto, name)
        if (
            inspect.isclass(obj)
            and issubclass(obj, auto_factory._BaseAutoModelClass)
            and getattr(obj, "_model_mapping", None) is not None
        ):
            found[name] = obj
    return found


def _mapping_classes(auto_class: type) -> tuple[dict[str, type], list[type]]:
    """(config class qualname -> the class from_config builds for it, every class the mapping can give),
    resolved as from_config/from_pretrained do: ``mapping[type(config)]``."""
    from transformers.utils.import_utils import DummyObject

    mapping = auto_class._model_mapping
    by_config: dict[str, type] = {}
    every: list[type] = []
    for config_class in mapping.keys():
        found = mapping[config_class]
        # classes that need a backend the environment lacks are placeholders (DummyObject): left out
        classes = [
            cls for cls in (found if isinstance(found, (list, tuple)) else (found,)) if not isinstance(cls, DummyObject)
        ]
        if not classes:
            continue
        every.extend(classes)
        # from_config picks the first of several unless config.architectures names another
        by_config[qualname(config_class)] = classes[0]
    return by_config, every


def describe(tables: LibraryTables) -> None:
    import torch
    import transformers
    from transformers.generation.utils import GenerationMixin

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tables.public_modules = ("transformers",)
    tables.add_class(GenerationMixin)
    tables.add_class(transformers.PreTrainedModel)

    # Auto factories. Those of DESCRIBED_AUTO_CLASSES: every class of the mapping described, so the
    # owner of any method of any candidate resolves; the other Auto classes: a PreTrainedModel.
    unknown = {"unknown": True}
    overrides = {"trust_remote_code": unknown}
    pretrained_model = qualname(transformers.PreTrainedModel)
    auto_classes = _auto_classes()
    missing = sorted(set(DESCRIBED_AUTO_CLASSES) - set(auto_classes))
    if missing:
        raise RuntimeError(f"update DESCRIBED_AUTO_CLASSES: no longer in transformers: {missing}")
    for auto_name, auto_class in sorted(auto_classes.items()):
        tables.add_class(auto_class)
        keys = [f"{qualname(auto_class)}.{method}" for method in ("from_pretrained", "from_config")]
        if auto_name not in DESCRIBED_AUTO_CLASSES:
            for key in keys:
                tables.add_factory(None, {"subclass_of": pretrained_model, "keyword_overrides": overrides}, key=key)
            continue
        by_config, every = _mapping_classes(auto_class)
        for model_class in every:
            tables.add_class(model_class)
            if "generate" in dir(model_class):
                tables.read_later(model_class, ["generate"])
        candidates = sorted({qualname(cls) for cls in every})
        tables.add_factory(None, {"candidates": candidates, "keyword_overrides": overrides}, key=keys[0])
        # from_config: the candidates that no config class selects are listed besides by_config
        selected = {qualname(cls) for cls in by_config.values()}
        tables.add_factory(
            None,
            {
                "by_config": {config: qualname(cls) for config, cls in sorted(by_config.items())},
                "candidates": [name for name in candidates if name not in selected],
                "keyword_overrides": overrides,
            },
            key=keys[1],
        )
        for config_class in auto_class._model_mapping.keys():
            if qualname(config_class) in by_config:
                tables.export(config_class)
    # A model class's own from_pretrained / _from_config return an instance of that class.
    tables.add_factory(None, {"receiver": True}, key=f"{qualname(transformers.PreTrainedModel)}.from_pretrained")
    tables.add_factory(None, {"receiver": True}, key=f"{qualname(transformers.PreTrainedModel)}._from_config")

    torch.manual_seed(0)
    with tempfile.TemporaryDirectory(prefix="fabric-lsp-tables-") as save_directory:
        for kind, config_name, overrides, model_names in ARCHITECTURES:
            config_class = getattr(transformers, config_name)
            config = _llava_config() if kind == "llava" else _small(config_class, overrides)
            for index, model_name in enumerate(model_names):
                model_class = getattr(transformers, model_name)
                model = model_class(_config_for(model_class, config)).eval()
                tables.record_built(model)
                if index:
                    continue
                for method, invoke, call in _observations(kind, torch):
                    tables.observe(model, method, invoke, call)
                for method, invoke, call in TRAPS:
                    if hasattr(model, method):
                        tables.observe(model, method, invoke, call, optional=True)
                tables.observe(model, "save_pretrained", lambda m: m(save_directory), "save_pretrained(save_directory)")
                if isinstance(_input_embeddings(model), torch.nn.Embedding):
                    tables.observe(
                        model,
                        "resize_token_embeddings",
                        lambda m: m(VOCAB + 8),
                        "resize_token_embeddings(new_num_tokens)",
                    )
