"""Run by the interpreter that has the pinned libraries (.venv-libs), never by the test process: calls
library methods on models wrapped by a real Lightning Fabric under DDP (one CPU process) and
materializes meta-device models with Lightning's own function, then prints one JSON line:

    RESULTS {"fab001": {case: {"raised": bool, "message": str}}, "fab002": {case: {"raised": ..., "message": ...}}}

tests/test_library_tables.py compares these outcomes with what the library tables say. Models are built
from small configs with random weights; nothing is downloaded.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import warnings

warnings.simplefilter("ignore")
logging.disable(logging.WARNING)
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402
from lightning.fabric import Fabric  # noqa: E402
from lightning.fabric.utilities.init import _materialize_meta_tensors  # noqa: E402

torch.set_num_threads(1)
VOCAB = 99
LLAMA = {
    "vocab_size": VOCAB, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
    "num_key_value_heads": 2, "max_position_embeddings": 64, "pad_token_id": 0,
}


def _ids():
    return torch.randint(3, VOCAB - 2, (1, 4))


def gpt2():
    from transformers import GPT2Config, GPT2LMHeadModel

    return GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, n_positions=64, pad_token_id=0))


def auto_gpt2():
    from transformers import AutoModelForCausalLM, GPT2Config

    config = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=1, n_head=2, pad_token_id=0)
    return AutoModelForCausalLM.from_config(config)


def llama():
    from transformers import LlamaConfig, LlamaForCausalLM

    return LlamaForCausalLM(LlamaConfig(**LLAMA))


def vit():
    import timm

    return timm.create_model("vit_tiny_patch16_224", pretrained=False, img_size=32, depth=1, num_classes=10)


def clip():
    import open_clip

    return open_clip.CLIP(
        embed_dim=16,
        vision_cfg={"layers": 1, "width": 32, "patch_size": 8, "image_size": 32, "head_width": 16},
        text_cfg={"context_length": 8, "vocab_size": 64, "width": 32, "heads": 2, "layers": 1},
    )


def autoencoder():
    from diffusers import AutoencoderKL

    return AutoencoderKL(
        down_block_types=("DownEncoderBlock2D",), up_block_types=("UpDecoderBlock2D",), block_out_channels=(8,),
        layers_per_block=1, latent_channels=4, norm_num_groups=4, sample_size=16,
    )


def lora_llama():
    from peft import LoraConfig, get_peft_model

    return get_peft_model(llama(), LoraConfig(task_type="CAUSAL_LM", r=2, target_modules=["q_proj", "v_proj"]))


def image(size=32):
    return torch.randn(1, 3, size, size)


# case -> (build, method, call); the test names the class and method each case checks
FAB001_CASES = {
    "gpt2-generate": (gpt2, "generate", lambda m: m(_ids(), max_new_tokens=2, do_sample=False)),
    "auto-gpt2-generate": (auto_gpt2, "generate", lambda m: m(_ids(), max_new_tokens=2, do_sample=False)),
    "gpt2-get_input_embeddings": (gpt2, "get_input_embeddings", lambda m: m()),
    "gpt2-num_parameters": (gpt2, "num_parameters", lambda m: m()),
    "timm-vit-forward_features": (vit, "forward_features", lambda m: m(image())),
    "timm-vit-get_classifier": (vit, "get_classifier", lambda m: m()),
    "open_clip-encode_image": (clip, "encode_image", lambda m: m(image())),
    "open_clip-encode_text": (clip, "encode_text", lambda m: m(torch.randint(0, 64, (1, 8)))),
    "diffusers-encode": (autoencoder, "encode", lambda m: m(torch.randn(1, 3, 16, 16))),
    "diffusers-enable_tiling": (autoencoder, "enable_tiling", lambda m: m()),
    "peft-generate": (lora_llama, "generate", lambda m: m(input_ids=_ids(), max_new_tokens=2, do_sample=False)),
    "peft-get_base_model": (lora_llama, "get_base_model", lambda m: m()),
}

# case -> build on the meta device, then Lightning's _materialize_meta_tensors
FAB002_CASES = {
    "llama": llama,
    "timm-vit": vit,
    "open_clip-clip": clip,
}


def sentence_transformer(folder):
    import transformers
    from sentence_transformers import SentenceTransformer

    vocab = os.path.join(folder, "vocab.txt")
    with open(vocab, "w", encoding="utf-8") as handle:
        handle.write("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "hello", "world"]) + "\n")
    transformers.BertTokenizerFast(vocab_file=vocab).save_pretrained(folder)
    config = transformers.BertConfig(
        vocab_size=7, hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=4,
        max_position_embeddings=64, pad_token_id=0,
    )
    transformers.BertModel(config).save_pretrained(folder)
    return SentenceTransformer(folder, device="cpu")


def main() -> None:
    fabric = Fabric(accelerator="cpu", strategy="ddp", devices=1)
    fabric.launch()
    results = {"fab001": {}, "fab002": {}}

    def record(group, case, call):
        try:
            call()
            results[group][case] = {"raised": False, "message": ""}
        except (RuntimeError, TypeError) as error:
            results[group][case] = {"raised": True, "message": f"{type(error).__name__}: {error}"}

    for case, (build, method, invoke) in FAB001_CASES.items():
        torch.manual_seed(0)
        wrapped = fabric.setup(build().eval())
        record("fab001", case, lambda: invoke(getattr(wrapped, method)))

    with tempfile.TemporaryDirectory() as folder:
        torch.manual_seed(0)
        wrapped = fabric.setup(sentence_transformer(folder))
        record("fab001", "sentence_transformers-encode", lambda: wrapped.encode(["hello world"]))
        save = os.path.join(folder, "out")
        record("fab001", "sentence_transformers-save_pretrained", lambda: wrapped.save_pretrained(save))

    for case, build in FAB002_CASES.items():
        with torch.device("meta"):
            model = build()
        record("fab002", case, lambda: _materialize_meta_tensors(model, torch.device("cpu")))
    print("RESULTS " + json.dumps(results))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
