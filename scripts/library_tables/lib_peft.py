"""peft: get_peft_model's PeftModel subclass by task type (the package's own mapping), the tuner
classes, and LoRA on tiny Llama / T5 / BERT models built and observed."""

from __future__ import annotations

import contextlib
import io
import tempfile
from typing import Any

from .common import LibraryTables, qualname

LLAMA = {
    "vocab_size": 99, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 64, "pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2,
}
T5 = {
    "vocab_size": 99, "d_model": 32, "d_ff": 64, "d_kv": 8, "num_layers": 2, "num_decoder_layers": 2, "num_heads": 4,
    "pad_token_id": 0, "eos_token_id": 1, "decoder_start_token_id": 0,
}
BERT = {
    "vocab_size": 99, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
    "max_position_embeddings": 64, "pad_token_id": 0,
}


GENERATE = "generate(input_ids=input_ids, max_new_tokens=2, do_sample=False)"


def _quietly(call: Any) -> Any:
    with contextlib.redirect_stdout(io.StringIO()):
        return call()


def describe(tables: LibraryTables) -> None:
    import peft
    import torch
    import transformers
    from peft import LoraConfig, get_peft_model
    from peft.auto import MODEL_TYPE_TO_PEFT_MODEL_MAPPING, _BaseAutoPeftModel
    from peft.mapping import PEFT_TYPE_TO_CONFIG_MAPPING, PEFT_TYPE_TO_TUNER_MAPPING

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    tables.public_modules = ("peft.tuners",)
    task_classes = {task: cls for task, cls in sorted(MODEL_TYPE_TO_PEFT_MODEL_MAPPING.items())}
    for cls in (peft.PeftModel, peft.PeftMixedModel, *task_classes.values(), *PEFT_TYPE_TO_TUNER_MAPPING.values()):
        tables.add_class(cls)
    # the task_type that get_peft_model reads: TaskType members and the configs' keyword
    tables.export(peft.TaskType)
    for config_class in PEFT_TYPE_TO_CONFIG_MAPPING.values():
        tables.export(config_class)
    peft_model = qualname(peft.PeftModel)
    tables.add_factory(
        get_peft_model,
        {
            "by_argument": {
                "position": 1,
                "keyword": "peft_config",
                "values": {str(task): qualname(cls) for task, cls in task_classes.items()},
                "attribute": "task_type",
                "tag_separator": None,
            },
            "otherwise": {"instance": peft_model},
            "keyword_overrides": {"mixed": {"instance": qualname(peft.PeftMixedModel)}},
        },
    )
    every_peft_model = sorted({peft_model, *(qualname(cls) for cls in task_classes.values())})
    # PeftModel.from_pretrained picks the class by the saved config's task_type (cls for any other)
    tables.add_factory(None, {"candidates": every_peft_model}, key=f"{peft_model}.from_pretrained")
    for name in dir(peft):
        auto_class = getattr(peft, name)
        is_auto = isinstance(auto_class, type) and issubclass(auto_class, _BaseAutoPeftModel)
        if is_auto and auto_class._target_peft_class:
            tables.add_class(auto_class)
            target = auto_class._target_peft_class
            spec = {"candidates": every_peft_model} if target is peft.PeftModel else {"instance": qualname(target)}
            tables.add_factory(None, spec, key=f"{qualname(auto_class)}.from_pretrained")

    ids = torch.randint(3, 90, (1, 4))
    builds = [
        (
            lambda: transformers.LlamaForCausalLM(transformers.LlamaConfig(**LLAMA)),
            {"task_type": "CAUSAL_LM", "target_modules": ["q_proj", "v_proj"]},
            [("generate", lambda m: m(input_ids=ids, max_new_tokens=2, do_sample=False), GENERATE)],
        ),
        (
            lambda: transformers.T5ForConditionalGeneration(transformers.T5Config(**T5)),
            {"task_type": "SEQ_2_SEQ_LM", "target_modules": ["q", "v"]},
            [("generate", lambda m: m(input_ids=ids, max_new_tokens=2, do_sample=False), GENERATE)],
        ),
        (
            lambda: transformers.BertForSequenceClassification(transformers.BertConfig(**BERT)),
            {"task_type": "SEQ_CLS", "target_modules": ["query", "value"]},
            [],
        ),
        (lambda: transformers.BertModel(transformers.BertConfig(**BERT)), {"target_modules": ["query", "value"]}, []),
    ]
    for build_base, lora, observations in builds:
        torch.manual_seed(0)
        model = get_peft_model(build_base().eval(), LoraConfig(r=2, lora_alpha=4, **lora))
        tables.record_built(model)
        for method, invoke, call in observations:
            tables.observe(model, method, invoke, call)
        tables.observe(model, "get_base_model", lambda m: m(), "get_base_model()")
        tables.observe(model, "print_trainable_parameters", lambda m: _quietly(m), "print_trainable_parameters()")
        tables.observe(model, "get_nb_trainable_parameters", lambda m: m(), "get_nb_trainable_parameters()")
        tables.observe(model, "disable_adapter", lambda m: m(), "disable_adapter()")
        with tempfile.TemporaryDirectory(prefix="fabric-lsp-tables-") as save_directory:
            tables.observe(model, "save_pretrained", lambda m: m(save_directory), "save_pretrained(save_directory)")
        # names PeftModel forwards to its tuner (PeftModel.__getattr__ -> base_model): observed on the tuner
        tuner = model.base_model
        tables.observe(tuner, "enable_adapter_layers", lambda m: m(), "enable_adapter_layers()")
        tables.observe(tuner, "disable_adapter_layers", lambda m: m(), "disable_adapter_layers()")
        tables.observe(tuner, "merge_and_unload", lambda m: m(), "merge_and_unload()")
