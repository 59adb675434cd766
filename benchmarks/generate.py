"""Generated inputs for the benchmarks (deterministic: the same seed gives the same bytes).

- `training_script()`: a ~3,000-line single-file training script in the style of nanoGPT / lit-gpt:
  config, data utilities, a model zoo, evaluation, checkpointing and a Fabric main with FSDP, with
  one FAB001, one FAB002 and one FAB003 finding in it.
- `no_fabric_script()`: the same size, a plain PyTorch script that never mentions Fabric, `setup`,
  `init_module` or `meta` (the pre-filter case).
- `write_tree(root, files=2000)`: a tree of small projects shaped like real repositories: packages of
  models / data / utils, tests, setup.py, argparse scripts (`metavar` contains "meta"), and Fabric
  training scripts whose models live in other modules of their package. Most files never mention
  Fabric; about a quarter contain one of the engine's trigger words.

    python benchmarks/generate.py script OUT.py      # the 3,000-line script
    python benchmarks/generate.py tree DIR [N]       # the N-file tree (default 2000)
"""

from __future__ import annotations

import os
import random
import sys
import textwrap

HEADER = '''"""Pretrain a decoder-only language model with Lightning Fabric.

    fabric run --devices 8 --strategy fsdp train.py --data data/train.bin
"""

import argparse
import json
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

import lightning as L
from lightning.fabric.strategies import FSDPStrategy


@dataclass
class TrainConfig:
    vocab_size: int = 50304
    block_size: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = False
    learning_rate: float = 6e-4
    weight_decay: float = 0.1
    beta1: float = 0.9
    beta2: float = 0.95
    grad_clip: float = 1.0
    warmup_iters: int = 2000
    lr_decay_iters: int = 600000
    min_lr: float = 6e-5
    batch_size: int = 12
    gradient_accumulation_steps: int = 40
    eval_interval: int = 2000
    eval_iters: int = 200
    log_interval: int = 10
    out_dir: str = "out"
    tags: list = field(default_factory=list)
'''

UTILITY = '''

def {name}(values: list, scale: float = {scale}, offset: int = {offset}) -> list:
    """{doc}"""
    result = []
    running = 0.0
    for index, value in enumerate(values):
        if index % {modulo} == 0:
            running = running * 0.5
        running += float(value) * scale
        if running > {limit}:
            running = {limit}
        result.append(running + offset)
    if not result:
        return [offset]
    mean = sum(result) / len(result)
    spread = max(result) - min(result)
    return [(item - mean) / (spread or 1.0) for item in result]
'''

DATA_FUNCTION = '''

def load_split_{index}(data_dir: Path, split: str, block_size: int) -> np.ndarray:
    """Token ids of one split of shard {index}, memory-mapped."""
    path = data_dir / f"shard_{index:03d}_{{split}}.bin"
    if not path.exists():
        raise FileNotFoundError(f"missing shard: {{path}}")
    data = np.memmap(path, dtype=np.uint16, mode="r")
    if len(data) <= block_size + 1:
        raise ValueError(f"shard {{path}} is shorter than one block")
    return data


def get_batch_{index}(data: np.ndarray, batch_size: int, block_size: int, device: torch.device):
    starts = torch.randint(len(data) - block_size - 1, (batch_size,))
    x = torch.stack([torch.from_numpy(data[i : i + block_size].astype(np.int64)) for i in starts])
    y = torch.stack([torch.from_numpy(data[i + 1 : i + 1 + block_size].astype(np.int64)) for i in starts])
    if device.type == "cuda":
        x, y = x.pin_memory().to(device, non_blocking=True), y.pin_memory().to(device, non_blocking=True)
    else:
        x, y = x.to(device), y.to(device)
    return x, y
'''

LAYER = '''

class {name}(nn.Module):
    """{doc}"""

    def __init__(self, dim: int, hidden: int = {hidden}, dropout: float = 0.0) -> None:
        super().__init__()
        self.fc_in = nn.Linear(dim, hidden, bias=False)
        self.fc_out = nn.Linear(hidden, dim, bias=False)
        self.norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(dropout)
        self.scale = {scale}

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.fc_in(self.norm(x))
        h = F.gelu(h) * self.scale
        return x + self.dropout(self.fc_out(h))

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    def extra_repr(self) -> str:
        return f"hidden={{self.fc_in.out_features}}, scale={{self.scale}}"
'''

MODEL = '''

class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def reset_parameters(self) -> None:
        torch.nn.init.ones_(self.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        norm = x.float().pow(2).mean(-1, keepdim=True).add(self.eps).rsqrt()
        return (x.float() * norm).type_as(x) * self.weight


class LearnedScale(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.gain = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.gain


class CausalSelfAttention(nn.Module):
    def __init__(self, config: TrainConfig) -> None:
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        q = q.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        v = v.view(b, t, self.n_head, c // self.n_head).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, dropout_p=self.dropout if self.training else 0, is_causal=True)
        y = y.transpose(1, 2).contiguous().view(b, t, c)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, config: TrainConfig) -> None:
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, config: TrainConfig) -> None:
        super().__init__()
        self.ln_1 = RMSNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = RMSNorm(config.n_embd)
        self.mlp = MLP(config)
        self.scale = LearnedScale(config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return self.scale(x + self.mlp(self.ln_2(x)))


class GPT(nn.Module):
    def __init__(self, config: TrainConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.h = nn.ModuleList([Block(config) for _ in range(config.n_layer)])
        self.ln_f = RMSNorm(config.n_embd)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight

    def forward(self, idx: torch.Tensor, targets: Optional[torch.Tensor] = None):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1)
        return logits, loss

    def num_parameters(self, non_embedding: bool = True) -> int:
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.wpe.weight.numel()
        return n

    @torch.no_grad()
    def generate(self, idx: torch.Tensor, max_new_tokens: int, temperature: float = 1.0, top_k: Optional[int] = None):
        for _ in range(max_new_tokens):
            idx_cond = idx if idx.size(1) <= self.config.block_size else idx[:, -self.config.block_size :]
            logits, _ = self(idx_cond)
            logits = logits[:, -1, :] / temperature
            if top_k is not None:
                v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
                logits[logits < v[:, [-1]]] = -float("Inf")
            probs = F.softmax(logits, dim=-1)
            idx = torch.cat((idx, torch.multinomial(probs, num_samples=1)), dim=1)
        return idx

    @torch.no_grad()
    def score(self, idx: torch.Tensor) -> torch.Tensor:
        logits, _ = self(idx[:, :-1])
        logprobs = F.log_softmax(logits, dim=-1)
        return logprobs.gather(-1, idx[:, 1:].unsqueeze(-1)).squeeze(-1).sum(-1)
'''

EVAL_FUNCTION = '''

@torch.no_grad()
def evaluate_{index}(fabric: L.Fabric, model: nn.Module, data: np.ndarray, config: TrainConfig) -> dict:
    """Loss and perplexity on {iters} batches of held-out shard {index}."""
    model.eval()
    losses = torch.zeros({iters})
    for k in range({iters}):
        x, y = get_batch_{data_index}(data, config.batch_size, config.block_size, fabric.device)
        _, loss = model(x, y)
        losses[k] = loss.item()
    model.train()
    mean = losses.mean().item()
    return {{"loss": mean, "perplexity": math.exp(min(mean, 20.0)), "shard": {index}}}
'''

CHECKPOINT_FUNCTION = '''

def save_checkpoint_{index}(fabric: L.Fabric, state: dict, out_dir: str, step: int) -> Path:
    """Write a sharded checkpoint and a small json sidecar ({index})."""
    path = Path(out_dir) / f"iter-{{step:06d}}-ckpt-{index}"
    fabric.save(path, state)
    if fabric.global_rank == 0:
        sidecar = path.with_suffix(".json")
        sidecar.write_text(json.dumps({{"step": step, "time": time.time(), "variant": {index}}}))
    fabric.barrier()
    return path


def load_checkpoint_{index}(fabric: L.Fabric, state: dict, out_dir: str) -> int:
    candidates = sorted(Path(out_dir).glob("iter-*-ckpt-{index}"))
    if not candidates:
        return 0
    remainder = fabric.load(candidates[-1], state)
    return int(remainder.get("iter_num", 0))
'''

MAIN = '''

def get_lr(it: int, config: TrainConfig) -> float:
    if it < config.warmup_iters:
        return config.learning_rate * it / config.warmup_iters
    if it > config.lr_decay_iters:
        return config.min_lr
    decay_ratio = (it - config.warmup_iters) / (config.lr_decay_iters - config.warmup_iters)
    coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
    return config.min_lr + coeff * (config.learning_rate - config.min_lr)


def train(fabric: L.Fabric, model: nn.Module, optimizer, train_data, val_data, config: TrainConfig) -> None:
    iter_num = 0
    t0 = time.perf_counter()
    while iter_num < config.lr_decay_iters:
        lr = get_lr(iter_num, config)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        if iter_num % config.eval_interval == 0:
            metrics = evaluate_0(fabric, model, val_data, config)
            fabric.print(f"step {iter_num}: val loss {metrics['loss']:.4f}")
        for micro_step in range(config.gradient_accumulation_steps):
            x, y = get_batch_0(train_data, config.batch_size, config.block_size, fabric.device)
            is_accumulating = micro_step < config.gradient_accumulation_steps - 1
            with fabric.no_backward_sync(model, enabled=is_accumulating):
                _, loss = model(x, y)
                fabric.backward(loss / config.gradient_accumulation_steps)
        fabric.clip_gradients(model, optimizer, max_norm=config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if iter_num % config.log_interval == 0:
            dt = time.perf_counter() - t0
            fabric.print(f"iter {iter_num}: loss {loss.item():.4f}, time {dt * 1000:.2f}ms")
            t0 = time.perf_counter()
        iter_num += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, default=Path("data"))
    parser.add_argument("--out-dir", default="out")
    parser.add_argument("--devices", type=int, default=8)
    args = parser.parse_args()
    config = TrainConfig(out_dir=args.out_dir)

    strategy = FSDPStrategy(auto_wrap_policy={Block}, state_dict_type="sharded")
    fabric = L.Fabric(accelerator="cuda", devices=args.devices, strategy=strategy, precision="bf16-mixed")
    fabric.launch()
    fabric.seed_everything(1337 + fabric.global_rank)

    with fabric.init_module(empty_init=True):
        model = GPT(config)
    model = fabric.setup(model)
    model.mark_forward_method(model.generate)
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.learning_rate, weight_decay=config.weight_decay)
    optimizer = fabric.setup_optimizers(optimizer)

    train_data = load_split_0(args.data, "train", config.block_size)
    val_data = load_split_0(args.data, "val", config.block_size)
    train(fabric, model, optimizer, train_data, val_data, config)

    prompt = torch.zeros((1, 1), dtype=torch.long, device=fabric.device)
    sample = model.generate(prompt, max_new_tokens=64)
    fabric.print(sample[0].tolist())
    held_out = torch.randint(0, config.vocab_size, (4, 65), device=fabric.device)
    fabric.print(model.score(held_out))
    save_checkpoint_0(fabric, {"model": model, "optimizer": optimizer}, config.out_dir, config.lr_decay_iters)


if __name__ == "__main__":
    main()
'''

_WORDS = ("smooth", "normalize", "rescale", "window", "clip", "bucket", "running", "decay", "warm", "mix")


def _utility(rng: random.Random, index: int) -> str:
    name = f"{rng.choice(_WORDS)}_{rng.choice(_WORDS)}_{index}"
    return UTILITY.format(
        name=name,
        scale=round(rng.uniform(0.1, 2.0), 3),
        offset=rng.randint(0, 9),
        doc=f"Running statistic number {index} over a list of values.",
        modulo=rng.randint(2, 17),
        limit=rng.randint(10, 1000),
    )


def _layer(rng: random.Random, index: int) -> str:
    return LAYER.format(
        name=f"Adapter{index}",
        doc=f"Residual adapter variant {index}.",
        hidden=rng.choice((256, 512, 1024, 2048)),
        scale=round(rng.uniform(0.5, 1.5), 3),
    )


def training_script(lines: int = 3000, seed: int = 5) -> str:
    """~`lines` lines: a fixed core plus generated utilities, layers, evaluation and checkpoint code."""
    rng = random.Random(seed)
    core = [HEADER, MODEL]
    tail = [MAIN]
    body: list[str] = []
    count = sum(part.count("\n") for part in core + tail)
    makers = (
        lambda i: _utility(rng, i),
        lambda i: DATA_FUNCTION.format(index=i),
        lambda i: _layer(rng, i),
        lambda i: EVAL_FUNCTION.format(index=i, iters=rng.choice((50, 100, 200)), data_index=i),
        lambda i: CHECKPOINT_FUNCTION.format(index=i),
    )
    index = 0
    while count < lines:
        piece = makers[index % len(makers)](index // len(makers))
        if count + piece.count("\n") > lines + 10:
            break
        body.append(piece)
        count += piece.count("\n")
        index += 1
    # Utilities and data functions first (the evaluation code calls get_batch_N), then the model.
    return "".join([HEADER, *body, MODEL, *tail])


def no_fabric_script(lines: int = 3000, seed: int = 7) -> str:
    """A plain PyTorch script of about the same size without any of the engine's trigger words."""
    text = training_script(int(lines * 1.5), seed)  # a third is Fabric code, removed below
    start = text.index("\n\ndef get_lr(")
    plain_main = '''

def train_plain(model: nn.Module, optimizer, data, config: TrainConfig) -> None:
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model.to(device)
    for step in range(config.lr_decay_iters):
        x, y = get_batch_0(data, config.batch_size, config.block_size, device)
        _, loss = model(x, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if step % config.log_interval == 0:
            print(f"step {step}: loss {loss.item():.4f}")


if __name__ == "__main__":
    cfg = TrainConfig()
    net = GPT(cfg)
    train_plain(net, torch.optim.AdamW(net.parameters(), lr=cfg.learning_rate), load_split_0(Path("data"), "train", cfg.block_size), cfg)
'''
    text = text[:start] + plain_main
    # Drop the Fabric-typed helpers (evaluation and checkpoints take a Fabric) and the Fabric imports.
    kept = []
    for chunk in text.split("\n\n\n"):
        if "L.Fabric" in chunk or "fabric" in chunk.lower():
            continue
        kept.append(chunk)
    text = "\n\n\n".join(kept)
    text = text.replace("import lightning as L\n", "").replace(
        "from lightning.fabric.strategies import FSDPStrategy\n", ""
    )
    for word in ("setup", "init_module", "meta", "mark_forward_method", "Fabric"):
        assert word not in text, word
    return text


# ---------------------------------------------------------------------------------------------
# The tree

TREE_MODEL = '''"""{doc}"""

import torch
from torch import nn
import torch.nn.functional as F


class {name}(nn.Module):
    def __init__(self, dim: int = {dim}, hidden: int = {hidden}, classes: int = {classes}) -> None:
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
        self.head = nn.Linear(hidden, classes)
{extra_init}
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(F.relu(self.encoder(x)){extra_forward})

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)

    def predict_proba(self, x: torch.Tensor) -> torch.Tensor:
        return self(x).softmax(dim=-1)
'''

TREE_DATA = '''"""Dataset {index}: {doc}"""

import os
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset


class Records{index}(Dataset):
    def __init__(self, root: str, split: str = "train", length: int = {length}) -> None:
        self.root = Path(root)
        self.split = split
        self.length = length
        self.files = sorted(self.root.glob(f"{{split}}-*.npy")) if self.root.exists() else []

    def __len__(self) -> int:
        return max(self.length, len(self.files))

    def __getitem__(self, index: int):
        if self.files:
            array = np.load(self.files[index % len(self.files)])
            return torch.from_numpy(array).float(), index % {classes}
        generator = torch.Generator().manual_seed(index)
        return torch.randn({dim}, generator=generator), index % {classes}


def collate_{index}(batch):
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.tensor(ys)
'''

TREE_UTIL = '''"""Small helpers ({index})."""

import json
import logging
import time
from collections import defaultdict

log = logging.getLogger(__name__)


class AverageMeter{index}:
    def __init__(self) -> None:
        self.totals = defaultdict(float)
        self.counts = defaultdict(int)

    def update(self, name: str, value: float, n: int = 1) -> None:
        self.totals[name] += value * n
        self.counts[name] += n

    def averages(self) -> dict:
        return {{name: self.totals[name] / max(1, self.counts[name]) for name in self.totals}}


def timed_{index}(function):
    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            log.debug("%s took %.3fs", function.__name__, time.perf_counter() - start)
    return wrapper


def dump_{index}(path: str, payload: dict) -> None:
    with open(path, "w") as handle:
        json.dump(payload, handle, indent=2, sort_keys=True)
'''

TREE_CLI = '''"""Command line of tool {index}."""

import argparse


def parse_args_{index}(argv=None):
    parser = argparse.ArgumentParser(description="tool {index}")
    parser.add_argument("--data", metavar="DIR", default="data")
    parser.add_argument("--epochs", metavar="N", type=int, default={epochs})
    parser.add_argument("--lr", metavar="LR", type=float, default={lr})
    parser.add_argument("--seed", type=int, default=0)
    return parser.parse_args(argv)
'''

TREE_TEST = '''"""Tests for {package}.{module}."""

import torch

from {package}.models.{module} import {cls}


class Test{cls}:
    def setup_method(self):
        torch.manual_seed(0)
        self.model = {cls}()

    def test_forward_shape(self):
        out = self.model(torch.randn(4, {dim}))
        assert out.shape == (4, {classes})

    def test_embed(self):
        assert self.model.embed(torch.randn(2, {dim})).shape[0] == 2
'''

TREE_SETUP = '''from setuptools import find_packages, setup

setup(
    name="{package}",
    version="0.{index}.0",
    packages=find_packages(exclude=["tests"]),
    install_requires=["torch", "lightning", "numpy"],
)
'''

TREE_TRAIN = '''"""Train {cls} with Fabric ({strategy})."""

import torch
import lightning as L
from torch.utils.data import DataLoader

from {package}.models.{module} import {cls}
from {package}.data.records_{data_index} import Records{data_index}, collate_{data_index}


def train(fabric, model, optimizer, loader, epochs: int = 1) -> None:
    model.train()
    for _ in range(epochs):
        for x, y in loader:
            loss = torch.nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            fabric.backward(loss)
            optimizer.step()


def main() -> None:
    fabric = L.Fabric(accelerator="cpu", devices={devices}, strategy="{strategy}")
    fabric.launch()
    model = {cls}()
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    model, optimizer = fabric.setup(model, optimizer)
{mark}    loader = fabric.setup_dataloaders(DataLoader(Records{data_index}("data"), batch_size=32, collate_fn=collate_{data_index}))
    train(fabric, model, optimizer, loader)
    features = model.embed(torch.randn(8, {dim}))
    fabric.print(features.shape)


if __name__ == "__main__":
    main()
'''

TREE_PLAIN_TRAIN = '''"""Train {cls} on one device without Fabric."""

import torch

from {package}.models.{module} import {cls}
from {package}.data.records_{data_index} import Records{data_index}


def main() -> None:
    model = {cls}()
    data = Records{data_index}("data")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for index in range(len(data)):
        x, y = data[index]
        loss = torch.nn.functional.cross_entropy(model(x[None]), torch.tensor([y]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()


if __name__ == "__main__":
    main()
'''


def _project_files(rng: random.Random, project: int, budget: int) -> dict[str, str]:
    package = f"proj{project:02d}"
    files: dict[str, str] = {
        "setup.py": TREE_SETUP.format(package=package, index=project),
        f"{package}/__init__.py": f'"""Project {project}."""\n__version__ = "0.{project}.0"\n',
        f"{package}/models/__init__.py": "",
        f"{package}/data/__init__.py": "",
        f"{package}/utils/__init__.py": "",
        "tests/__init__.py": "",
    }
    models: list[tuple[str, str, int, int]] = []
    index = 0
    while len(files) < budget:
        kind = index % 10
        if kind in (0, 1):
            module, cls = f"net_{index}", f"Net{project}x{index}"
            dim, classes = rng.choice((16, 32, 64)), rng.choice((2, 10, 100))
            owns = rng.random() < 0.3
            files[f"{package}/models/{module}.py"] = TREE_MODEL.format(
                doc=f"Model {cls}.", name=cls, dim=dim, hidden=rng.choice((64, 128, 256)), classes=classes,
                extra_init="        self.temperature = nn.Parameter(torch.ones(1))\n" if owns else "",
                extra_forward=" / self.temperature" if owns else "",
            )
            models.append((module, cls, dim, classes))
        elif kind in (2, 3):
            files[f"{package}/data/records_{index}.py"] = TREE_DATA.format(
                index=index, doc="synthetic records", length=rng.randint(100, 10000), classes=10, dim=32
            )
        elif kind in (4, 5):
            files[f"{package}/utils/helpers_{index}.py"] = TREE_UTIL.format(index=index)
        elif kind == 6:
            files[f"{package}/utils/cli_{index}.py"] = TREE_CLI.format(
                index=index, epochs=rng.randint(1, 100), lr=rng.choice((0.1, 0.01, 1e-3))
            )
        elif kind == 7 and models:
            module, cls, dim, classes = rng.choice(models)
            files[f"tests/test_{module}_{index}.py"] = TREE_TEST.format(
                package=package, module=module, cls=cls, dim=dim, classes=classes
            )
        elif kind == 8 and models:
            module, cls, dim, _ = rng.choice(models)
            data_files = [name for name in files if "/data/records_" in name]
            data_index = int(data_files[-1].rsplit("_", 1)[1][:-3]) if data_files else None
            if data_index is None:
                index += 1
                continue
            if rng.random() < 0.5:
                strategy = rng.choice(("ddp", "fsdp", "auto"))
                devices = 1 if strategy == "auto" else 2
                marked = rng.random() < 0.5
                files[f"scripts/train_{index}.py"] = TREE_TRAIN.format(
                    cls=cls, package=package, module=module, data_index=data_index, devices=devices,
                    strategy=strategy, dim=dim,
                    mark='    model.mark_forward_method("embed")\n' if marked else "",
                )
            else:
                files[f"scripts/plain_{index}.py"] = TREE_PLAIN_TRAIN.format(
                    cls=cls, package=package, module=module, data_index=data_index
                )
        else:
            files[f"{package}/utils/constants_{index}.py"] = "".join(
                f"{name.upper()}_{index}_{k} = {rng.randint(0, 1000)}\n" for k, name in enumerate(rng.sample(_WORDS, 5))
            )
        index += 1
    return files


def write_tree(root: str, files: int = 2000, seed: int = 11, per_project: int = 80) -> list[str]:
    """Write the tree (replacing nothing outside `root`); returns the .py paths written."""
    rng = random.Random(seed)
    written: list[str] = []
    project = 0
    with open(os.path.join(_mkdir(root), "pyproject.toml"), "w") as handle:
        handle.write("[tool.fabric-lsp]\nselect = [\"FAB001\", \"FAB002\", \"FAB003\"]\n\n[tool.ruff]\nline-length = 120\n")
    while len(written) < files:
        budget = min(per_project, files - len(written))
        project_root = os.path.join(root, f"project{project:02d}")
        for relative, text in _project_files(rng, project, budget).items():
            path = os.path.join(project_root, relative)
            _mkdir(os.path.dirname(path))
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            written.append(path)
        project += 1
    return written


def _mkdir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "script":
        with open(argv[1], "w", encoding="utf-8") as handle:
            handle.write(training_script())
        return 0
    if len(argv) >= 2 and argv[0] == "tree":
        count = int(argv[2]) if len(argv) > 2 else 2000
        print(len(write_tree(argv[1], count)), "files")
        return 0
    print(textwrap.dedent(__doc__), file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
