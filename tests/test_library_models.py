"""Library models in the engine (issue 25): transformers, peft, timm, open_clip, torchvision,
diffusers and sentence-transformers answered from the library tables, identically whether or not
the libraries are installed where the analysis looks.

Each case is checked twice: analysed against this test environment (which has none of the
libraries) and against `.venv-libs` (which has all of them, pinned to the tables' versions). The
runtime facts behind the expected findings are proven by the ground-truth fixtures
(`fixtures/cases/lib_*`, run under real Lightning with `.venv-libs`) and by
tests/test_library_tables.py's real-DDP checks of the tables.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fabric_lsp import check_paths

ROOT = Path(__file__).resolve().parent.parent
LIBS_PYTHON = ROOT / ".venv-libs" / "bin" / "python"
REQUIRE_LIBS = os.environ.get("FABRIC_LSP_REQUIRE_LIBS") == "1"

HEADER = """\
import sys
import torch
import lightning as L

fabric = L.Fabric(accelerator="cpu", strategy="ddp", devices=1)
fabric.launch()
"""


def interpreters() -> list:
    found = [pytest.param(None, id="without-libraries")]
    if LIBS_PYTHON.exists() or REQUIRE_LIBS:
        found.append(pytest.param(str(LIBS_PYTHON), id="with-libraries"))
    return found


def findings(tmp_path: Path, body: str, python: str | None, hints: bool = False) -> list[tuple[int, str, str]]:
    """(line, code, severity) of the findings in HEADER + body."""
    script = tmp_path / "train.py"
    script.write_text(HEADER + textwrap.dedent(body))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        found = check_paths([script.name], python=python, hints=hints)
    finally:
        os.chdir(old)
    return sorted((f["location"]["row"] - HEADER.count("\n"), f["code"], f["severity"]) for f in found)


def messages(tmp_path: Path, body: str, python: str | None = None) -> list[str]:
    script = tmp_path / "train.py"
    script.write_text(HEADER + textwrap.dedent(body))
    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        return [f["message"] for f in check_paths([script.name], python=python)]
    finally:
        os.chdir(old)


CASES = {
    # the issue's own example: the concrete class chosen by the config's class
    "auto_from_config": ("""\
        from transformers import AutoModelForCausalLM, GPT2Config
        model = fabric.setup(AutoModelForCausalLM.from_config(GPT2Config(n_layer=1)))
        model.generate(torch.randint(0, 100, (1, 5)))
        """, [(3, "FAB001", "error")]),
    # a checkpoint name the analysis cannot read: every causal-LM class generates by running the model
    "auto_from_pretrained_unknown_name": ("""\
        from transformers import AutoModelForCausalLM
        model = fabric.setup(AutoModelForCausalLM.from_pretrained(sys.argv[1]))
        model.generate(torch.randint(0, 100, (1, 5)))
        """, [(3, "FAB001", "error")]),
    "traps_do_not_raise": ("""\
        from transformers import GPT2LMHeadModel, GPT2Config
        model = fabric.setup(GPT2LMHeadModel(GPT2Config(n_layer=1)))
        model.module.generate(torch.randint(0, 100, (1, 5)))
        embeddings = model.get_input_embeddings()
        logits = model.lm_head(torch.randn(1, 768))
        model.mark_forward_method("generate")
        model.generate(torch.randint(0, 100, (1, 5)))
        """, []),
    "project_method_calls_library_child": ("""\
        from torch import nn
        from transformers import AutoModelForCausalLM

        class Policy(nn.Module):
            def __init__(self, name):
                super().__init__()
                self.lm = AutoModelForCausalLM.from_pretrained(name)

            def sample(self, prompt):
                return self.lm.generate(prompt, max_new_tokens=4)

        def rollout(policy, prompt):
            return policy.sample(prompt)

        policy = fabric.setup(Policy(sys.argv[1]))
        rollout(policy, torch.randint(0, 100, (1, 5)))
        """, [(13, "FAB001", "error")]),
    "subclass_of_a_library_model": ("""\
        from diffusers import AutoencoderKL

        class VAE(AutoencoderKL):
            def reconstruct(self, x):
                return self.decode(self.encode(x).latent_dist.sample()).sample

        vae = fabric.setup(VAE.from_pretrained(sys.argv[1]))
        vae.reconstruct(torch.randn(1, 3, 32, 32))
        """, [(8, "FAB001", "error")]),
    "peft_task_type_from_the_config": ("""\
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM
        config = LoraConfig(task_type="CAUSAL_LM", r=4)
        model = fabric.setup(get_peft_model(AutoModelForCausalLM.from_pretrained(sys.argv[1]), config))
        model.generate(input_ids=torch.randint(0, 100, (1, 5)))
        base = model.get_base_model()
        """, [(5, "FAB001", "error")]),
    "timm_literal_name_and_features_only": ("""\
        import timm
        backbone = fabric.setup(timm.create_model("resnet18", num_classes=0))
        backbone.forward_features(torch.randn(1, 3, 64, 64))
        classifier = backbone.get_classifier()
        pyramid = fabric.setup(timm.create_model("resnet18", features_only=True))
        pyramid.forward_features(torch.randn(1, 3, 64, 64))
        """, [(3, "FAB001", "error")]),
    "open_clip_tuple": ("""\
        import open_clip
        clip, _, preprocess = open_clip.create_model_and_transforms("ViT-B-32")
        clip = fabric.setup(clip)
        clip.encode_image(torch.randn(1, 3, 224, 224))
        clip.encode_text(torch.randint(0, 100, (1, 77)))
        """, [(4, "FAB001", "error"), (5, "FAB001", "error")]),
    "single_device_is_a_hint": ("""\
        from transformers import GPT2LMHeadModel, GPT2Config
        single = L.Fabric(accelerator="cpu", devices=1)
        model = single.setup(GPT2LMHeadModel(GPT2Config(n_layer=1)))
        model.generate(torch.randint(0, 100, (1, 5)))
        """, [(4, "FAB001", "hint")]),
    # (each mark alone: a misspelt mark raises on every strategy, so a later line is not reached: rules/first_error)
    "mark_forward_method_typo": ("""\
        from transformers import GPT2LMHeadModel, GPT2Config
        model = fabric.setup(GPT2LMHeadModel(GPT2Config(n_layer=1)))
        model.mark_forward_method("get_input_embeddings")
        model.mark_forward_method("genrate")
        """, [(4, "FAB004", "error")]),
    "mark_forward_method_bound": ("""\
        from transformers import GPT2LMHeadModel, GPT2Config
        model = fabric.setup(GPT2LMHeadModel(GPT2Config(n_layer=1)))
        model.mark_forward_method("get_input_embeddings")
        model.mark_forward_method(model.generate)
        """, [(4, "FAB003", "error")]),
    "meta_device_library_model": ("""\
        from lightning.fabric.utilities.init import _materialize_meta_tensors
        from transformers import LlamaConfig, LlamaForCausalLM
        with torch.device("meta"):
            model = LlamaForCausalLM(LlamaConfig(hidden_size=32, num_hidden_layers=1, num_attention_heads=2))
        _materialize_meta_tensors(model, "cpu")
        """, [(4, "FAB002", "error")]),
    # what the tables do not describe stays quiet (features_only above; an unknown method here)
    "unknown_stays_quiet": ("""\
        from transformers import GPT2LMHeadModel, GPT2Config
        model = fabric.setup(GPT2LMHeadModel(GPT2Config(n_layer=1)))
        model.some_method_a_later_release_may_add()
        """, []),
}


@pytest.mark.parametrize("python", interpreters())
@pytest.mark.parametrize("name", sorted(CASES))
def test_library_models(tmp_path, name, python):
    body, expected = CASES[name]
    assert findings(tmp_path, body, python, hints=True) == expected


def test_the_library_tables_answer_without_jedi(tmp_path):
    """No jedi question for a name of these libraries: transformers' lazy `__init__` sent one
    question through 4,500 star imports (38 s, 2.4 GB) before the tables answered them."""
    from fabric_lsp.analysis import program as program_module

    asked = []
    original = program_module.Program.ask_jedi

    def spy(self, path, name):
        asked.append((path, name))
        return original(self, path, name)

    program_module.Program.ask_jedi = spy
    try:
        findings(tmp_path, CASES["auto_from_config"][0] + CASES["timm_literal_name_and_features_only"][0],
                 str(LIBS_PYTHON) if LIBS_PYTHON.exists() else None)
    finally:
        program_module.Program.ask_jedi = original
    assert not [path for path, _ in asked if "site-packages" in path], asked


def test_a_family_raises_only_when_every_candidate_does(tmp_path):
    from fabric_lsp.analysis.libraries import models

    names = models.result_classes("transformers.AutoModelForCausalLM.from_pretrained")
    [family] = names
    assert len(models.candidates(family)) > 100
    assert models.method_verdict(family, "generate").runs is True
    # get_input_embeddings was observed to run nothing on some candidates only: undecided, no finding
    assert models.method_verdict(family, "get_input_embeddings").runs is not True
    # A family whose candidates disagree, or one that may hold classes the tables do not list, is unknown.
    [open_family] = models.result_classes("transformers.AutoModel.from_pretrained")
    assert models.method_verdict(open_family, "generate").runs is None


def test_version_skew_is_named(tmp_path):
    """A transformers of another version than the tables' in the analysis interpreter: the finding
    says so in its related information."""
    venv = tmp_path / "venv"
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "transformers").mkdir(parents=True)
    (site / "transformers" / "__init__.py").write_text("")
    (site / "transformers-4.0.0.dist-info").mkdir()
    (venv / "bin").mkdir()
    os.symlink(sys.executable, venv / "bin" / "python")
    (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\nversion = "
                                     f"{sys.version_info.major}.{sys.version_info.minor}.0\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(HEADER + textwrap.dedent(CASES["auto_from_config"][0]))
    result = subprocess.run(
        [sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--python", str(venv / "bin" / "python"),
         "--output-format", "json", "train.py"],
        cwd=project, capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1, result.stderr
    import json

    [finding] = json.loads(result.stdout)
    notes = [related["message"] for related in finding["related"]]
    assert any("transformers 4.0.0 is installed" in note and "5.25.0" in note for note in notes), notes


def test_messages_say_where_the_verdict_comes_from(tmp_path):
    [message] = messages(tmp_path, CASES["auto_from_config"][0])
    assert "GPT2LMHeadModel.generate()" in message
    assert "GenerationMixin.generate" in message and "transformers 5.25.0 tables" in message
    [message] = messages(tmp_path, CASES["meta_device_library_model"][0])
    assert "`LlamaRMSNorm`" in message and "LlamaRotaryEmbedding" in message
