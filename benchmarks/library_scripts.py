"""The library rows' inputs (issue 25): small Fabric training scripts that import and use the models of
transformers, peft, timm, open_clip, torchvision, diffusers and sentence-transformers, and one file
importing all of them. Written under artifacts/bench/libs/ by lib_bench.py.

Each script is the shape the issue measured or found in public Fabric code: a library model set up
by Fabric under DDP (or FSDP with empty_init), then a library method that runs the model's
submodules called on the wrapped model. Every model is built from a small config or a builder with
random weights, so the scripts run without downloads (sentence-transformers apart: its model is
named, as users write it).
"""

from __future__ import annotations

# The e01: 17 lines importing GPT2LMHeadModel from transformers (51-57 s and 2.4 GB before
# the tables, with transformers in the analysis interpreter).
E01_TRANSFORMERS = '''\
"""Sampling from a small GPT-2 under DDP."""
import torch
import lightning as L
from transformers import AutoModelForCausalLM, GPT2Config, GPT2LMHeadModel

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100)
model = fabric.setup(AutoModelForCausalLM.from_config(config))
prompt = torch.randint(0, 100, (1, 5))
out = model.generate(prompt, max_new_tokens=3, pad_token_id=0)  # FAB001

reference = fabric.setup(GPT2LMHeadModel(config))
reference.mark_forward_method("generate")
again = reference.generate(prompt, max_new_tokens=3, pad_token_id=0)  # marked: fine
print(out.shape, again.shape, reference.get_input_embeddings().weight.shape)
'''

PEFT = '''\
"""LoRA fine-tuning of a small causal LM with PEFT, sampling after each step."""
import torch
import lightning as L
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, GPT2Config

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
base = AutoModelForCausalLM.from_config(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100))
model = get_peft_model(base, LoraConfig(task_type="CAUSAL_LM", r=4, target_modules=["c_attn"]))
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
model, optimizer = fabric.setup(model, optimizer)
batch = torch.randint(0, 100, (2, 8))
loss = model(input_ids=batch, labels=batch).loss
fabric.backward(loss)
optimizer.step()
sample = model.generate(input_ids=batch[:, :4], max_new_tokens=3)  # FAB001
model.print_trainable_parameters()
'''

TIMM = '''\
"""A timm classifier whose features and head are called separately."""
import torch
import timm
import lightning as L

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
model = timm.create_model("resnet18", num_classes=10)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
model, optimizer = fabric.setup(model, optimizer)
images, labels = torch.randn(2, 3, 64, 64), torch.tensor([1, 2])
features = model.forward_features(images)  # FAB001
logits = model.forward_head(features)  # FAB001
loss = torch.nn.functional.cross_entropy(logits, labels)
fabric.backward(loss)
optimizer.step()
'''

OPEN_CLIP = '''\
"""Contrastive image-text training step with an open_clip model."""
import torch
import open_clip
import lightning as L

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
model, _, preprocess = open_clip.create_model_and_transforms("RN50")
tokenizer = open_clip.get_tokenizer("RN50")
model = fabric.setup(model)
images, texts = torch.randn(2, 3, 224, 224), tokenizer(["a photo of a dog", "a photo of a cat"])
image_features = model.encode_image(images)  # FAB001
text_features = model.encode_text(texts)  # FAB001
logits = model.logit_scale.exp() * image_features @ text_features.T
loss = torch.nn.functional.cross_entropy(logits, torch.arange(2))
fabric.backward(loss)
'''

TORCHVISION = '''\
"""A torchvision backbone inside a project model, and a ViT initialised on the meta device."""
import torch
import torchvision
import lightning as L
from torch import nn


class Classifier(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = torchvision.models.resnet18(num_classes=10)

    def forward(self, images):
        return self.backbone(images)

    def embed(self, images):
        return self.backbone(images).flatten(1)


fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
model = fabric.setup(Classifier())
embedding = model.embed(torch.randn(2, 3, 64, 64))  # FAB001

sharded = L.Fabric(accelerator="cpu", strategy="fsdp", devices=1)
with sharded.init_module(empty_init=True):
    vit = torchvision.models.vit_b_16(num_classes=10)  # FAB002: class_token has no reset_parameters
vit = sharded.setup(vit)
'''

DIFFUSERS = '''\
"""Training a small diffusers autoencoder, encoding and decoding through the wrapped model."""
import torch
import lightning as L
from diffusers import AutoencoderKL

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
vae = AutoencoderKL(block_out_channels=(32,), norm_num_groups=8, latent_channels=4)
optimizer = torch.optim.Adam(vae.parameters(), lr=1e-4)
vae, optimizer = fabric.setup(vae, optimizer)
images = torch.randn(1, 3, 32, 32)
latents = vae.encode(images).latent_dist.sample()  # FAB001
reconstruction = vae.decode(latents).sample  # FAB001
loss = torch.nn.functional.mse_loss(reconstruction, images)
fabric.backward(loss)
optimizer.step()
'''

SENTENCE_TRANSFORMERS = '''\
"""Embedding a corpus with a sentence-transformers model set up by Fabric."""
import lightning as L
from sentence_transformers import SentenceTransformer

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
model = SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2", device="cpu")
model = fabric.setup(model)
corpus = ["A man is eating food.", "A monkey is playing drums."]
embeddings = model.encode(corpus, convert_to_tensor=True)  # FAB001
queries = model.encode_query(["Who is eating?"], convert_to_tensor=True)  # FAB001
print(model.similarity(queries, embeddings))
'''

ALL_LIBRARIES = '''\
"""One training script with a model of every library: LM, LoRA, vision backbones, CLIP, a VAE and a
sentence encoder, each set up by Fabric and used through the wrapped model."""
import open_clip
import timm
import torch
import torchvision
import lightning as L
from diffusers import AutoencoderKL
from peft import LoraConfig, get_peft_model
from sentence_transformers import SentenceTransformer
from torch import nn
from transformers import AutoModelForCausalLM, AutoTokenizer, GPT2Config, GPT2LMHeadModel


class Captioner(nn.Module):
    """A project model around library models: its methods run them."""

    def __init__(self):
        super().__init__()
        self.lm = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100))
        self.backbone = timm.create_model("resnet18", num_classes=0)
        self.vision = torchvision.models.resnet18(num_classes=32)

    def forward(self, images, tokens):
        return self.lm(input_ids=tokens).logits + self.backbone(images).mean() + self.vision(images).mean()

    def caption(self, tokens):
        return self.lm.generate(tokens, max_new_tokens=3, pad_token_id=0)

    def features(self, images):
        return self.backbone.forward_features(images)


def main():
    fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
    fabric.launch()
    tokens = torch.randint(0, 100, (1, 5))
    images = torch.randn(2, 3, 64, 64)

    captioner = fabric.setup(Captioner())
    captioner.caption(tokens)  # FAB001
    captioner.features(images)  # FAB001

    config = GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100)
    lm = fabric.setup(AutoModelForCausalLM.from_config(config))
    lm.generate(tokens, max_new_tokens=3, pad_token_id=0)  # FAB001
    lm.module.generate(tokens, max_new_tokens=3, pad_token_id=0)  # the unwrapped module: fine

    lora = get_peft_model(AutoModelForCausalLM.from_config(config), LoraConfig(task_type="CAUSAL_LM", r=4))
    lora = fabric.setup(lora)
    lora.generate(input_ids=tokens, max_new_tokens=3)  # FAB001

    classifier = fabric.setup(timm.create_model("vit_tiny_patch16_224", num_classes=10))
    classifier.forward_head(classifier.forward_features(torch.randn(1, 3, 224, 224)))  # FAB001 x2

    clip, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32")
    clip = fabric.setup(clip)
    clip.encode_text(open_clip.get_tokenizer("ViT-B-32")(["a dog"]))  # FAB001

    resnet = fabric.setup(torchvision.models.resnet50())
    resnet(images)  # forward: fine

    vae = fabric.setup(AutoencoderKL(block_out_channels=(32,), norm_num_groups=8))
    vae.decode(vae.encode(torch.randn(1, 3, 32, 32)).latent_dist.sample())  # FAB001 x2

    encoder = fabric.setup(SentenceTransformer("sentence-transformers/all-MiniLM-L6-v2", device="cpu"))
    encoder.encode(["A man is eating food."])  # FAB001

    tokenizer = AutoTokenizer.from_pretrained("gpt2")
    print(tokenizer.decode([0]))


if __name__ == "__main__":
    main()
'''

# Row label -> (file name, text); the all-libraries file last.
SCRIPTS: dict[str, tuple[str, str]] = {
    "transformers (the issue's e01: GPT2 / Auto* generate)": ("e01_transformers.py", E01_TRANSFORMERS),
    "peft (LoRA, generate)": ("peft_lora.py", PEFT),
    "timm (create_model, forward_features/head)": ("timm_features.py", TIMM),
    "open_clip (create_model_and_transforms, encode_*)": ("open_clip_contrastive.py", OPEN_CLIP),
    "torchvision (backbone in a project model, ViT on meta)": ("torchvision_models.py", TORCHVISION),
    "diffusers (AutoencoderKL encode/decode)": ("diffusers_vae.py", DIFFUSERS),
    "sentence-transformers (encode)": ("sentence_transformers_encode.py", SENTENCE_TRANSFORMERS),
    "all seven libraries in one file": ("all_libraries.py", ALL_LIBRARIES),
}
ALL_LABEL = "all seven libraries in one file"
