"""The library tables (server/fabric_lsp/analysis/libraries/data/*.json): the loader answers without
importing any library or torch and loads a table only when its library is asked about; the shipped
facts are the ones the issue relies on; the committed files are what the generator produces from the
pinned libraries (.venv-libs), every time; and the verdicts agree with real Lightning under DDP.

The tests that need the libraries run with `.venv-libs/bin/python` (`make libs`; another interpreter
with the same pins: FABRIC_LSP_LIBS_PYTHON). Without it they are skipped, unless
FABRIC_LSP_REQUIRE_LIBS=1 (as `make test` sets): then they fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from fabric_lsp.analysis import libraries
from fabric_lsp.analysis.libraries import LibraryTableError
from support.cases import _SCRUBBED_ENV_NAMES, _SCRUBBED_ENV_PREFIXES
from support.libs import require_libs_python

REPO_ROOT = Path(__file__).resolve().parent.parent
GENERATOR = REPO_ROOT / "scripts" / "generate_library_tables.py"
DATA_DIR = REPO_ROOT / "server" / "fabric_lsp" / "analysis" / "libraries" / "data"
PROBE = Path(__file__).resolve().parent / "support" / "library_probe.py"

GPT2_LM = "transformers.models.gpt2.modeling_gpt2.GPT2LMHeadModel"
GENERATION_MIXIN = "transformers.generation.utils.GenerationMixin"
LLAMA_LM = "transformers.models.llama.modeling_llama.LlamaForCausalLM"
LLAMA_ROTARY = "transformers.models.llama.modeling_llama.LlamaRotaryEmbedding"
TIMM_VIT = "timm.models.vision_transformer.VisionTransformer"
OPEN_CLIP = "open_clip.model.CLIP"


# --- the loader, on the shipped tables (no library needed) ------------------------------------------


def _run_python(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "server"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_loader_imports_no_library_and_loads_a_table_only_when_asked():
    code = (
        "import sys, json\n"
        "from fabric_lsp.analysis import libraries as L\n"
        "out = {'after_import': L.loaded_libraries()}\n"
        "L.library_of('transformers.GPT2LMHeadModel')\n"
        "out['after_library_of'] = L.loaded_libraries()\n"
        "L.canonical('timm.create_model')\n"
        "out['after_timm'] = L.loaded_libraries()\n"
        "for library in L.LIBRARIES:\n"
        "    L.version(library)\n"
        "L.runs_module('transformers.GPT2LMHeadModel', 'generate')\n"
        "heavy = ('torch', 'transformers', 'peft', 'timm', 'open_clip', 'torchvision', 'diffusers',\n"
        "         'sentence_transformers', 'lightning', 'numpy')\n"
        "out['imported'] = sorted(m for m in sys.modules if m.split('.')[0] in heavy)\n"
        "print(json.dumps(out))\n"
    )
    out = json.loads(_run_python(code))
    assert out["after_import"] == []
    assert out["after_library_of"] == []
    assert out["after_timm"] == ["timm"]
    assert out["imported"] == []


def test_library_of_reads_the_first_component_only():
    assert libraries.library_of("transformers.GPT2LMHeadModel") == "transformers"
    assert libraries.library_of("open_clip") == "open_clip"
    assert libraries.library_of("sentence_transformers.SentenceTransformer") == "sentence_transformers"
    assert libraries.library_of("torch.nn.Linear") is None
    assert libraries.library_of("transformers_extra.X") is None
    assert libraries.canonical("torch.nn.Linear") is None
    assert libraries.library_class("lightning.Fabric") is None


def test_public_spellings_resolve_to_the_defining_name():
    assert libraries.canonical("transformers.GPT2LMHeadModel") == GPT2_LM
    assert libraries.canonical("transformers.models.gpt2.GPT2LMHeadModel") == GPT2_LM
    assert libraries.canonical(GPT2_LM) == GPT2_LM
    assert libraries.canonical("transformers.AutoModelForCausalLM") == (
        "transformers.models.auto.modeling_auto.AutoModelForCausalLM"
    )
    assert libraries.canonical("timm.create_model") == "timm.models._factory.create_model"
    assert libraries.canonical("open_clip.create_model_and_transforms") == (
        "open_clip.factory.create_model_and_transforms"
    )
    assert libraries.canonical("torchvision.models.resnet18") == "torchvision.models.resnet.resnet18"
    assert libraries.canonical("peft.get_peft_model") == "peft.mapping_func.get_peft_model"
    assert libraries.canonical("diffusers.AutoencoderKL") == (
        "diffusers.models.autoencoders.autoencoder_kl.AutoencoderKL"
    )
    assert libraries.canonical("transformers.GPT2Config") == "transformers.models.gpt2.configuration_gpt2.GPT2Config"
    assert libraries.canonical("transformers.NoSuchModel") is None


def test_gpt2_generate_runs_a_module_and_is_owned_by_generation_mixin():
    assert libraries.find_attribute("transformers.GPT2LMHeadModel", "generate") == (GENERATION_MIXIN, "method")
    verdict = libraries.runs_module("transformers.GPT2LMHeadModel", "generate")
    assert verdict.runs is True and verdict.how == "observed"
    assert verdict.stored_under == GENERATION_MIXIN
    assert verdict.observed_on == GPT2_LM
    assert "generate(" in verdict.call


def test_embedding_accessors_and_utilities_do_not_run_a_module():
    for method in ("get_input_embeddings", "get_output_embeddings", "num_parameters", "gradient_checkpointing_enable"):
        verdict = libraries.runs_module(GPT2_LM, method)
        assert verdict is not None and verdict.runs is False, method


def test_mro_walks_through_torch_to_the_generation_mixin():
    order = libraries.mro(GPT2_LM)
    assert order[0] == GPT2_LM
    # torch.nn.Module sits between PreTrainedModel and the mixins: the walk goes on past it
    assert order.index("torch.nn.modules.module.Module") < order.index(GENERATION_MIXIN)
    assert libraries.library_class(GENERATION_MIXIN).module is False
    assert libraries.library_class(GPT2_LM).module is True


def test_every_causal_lm_candidate_resolves_generate_to_an_owner_with_a_verdict_or_a_named_gap():
    spec = libraries.factory("transformers.AutoModelForCausalLM.from_pretrained")
    assert len(spec.candidates) > 150
    undecided = []
    for candidate in spec.candidates:
        owner, kind = libraries.find_attribute(candidate, "generate")
        assert kind == "method", candidate
        verdict = libraries.runs_module(candidate, "generate")
        if verdict is None:
            undecided.append(owner)
        else:
            assert verdict.runs is True, candidate
    # overrides neither observed nor decidable by reading (DiffusionGemma's, with these pins)
    assert len(set(undecided)) <= 3, sorted(set(undecided))


def test_timm_open_clip_diffusers_sentence_transformers_verdicts():
    assert libraries.runs_module(TIMM_VIT, "forward_features").runs is True
    assert libraries.runs_module(TIMM_VIT, "forward_head").runs is True
    assert libraries.runs_module(TIMM_VIT, "get_classifier").runs is False
    assert libraries.runs_module("open_clip.CLIP", "encode_image").runs is True
    assert libraries.runs_module("open_clip.CLIP", "encode_text").runs is True
    assert libraries.runs_module("diffusers.AutoencoderKL", "encode").runs is True
    assert libraries.runs_module("diffusers.AutoencoderKL", "decode").runs is True
    assert libraries.runs_module("sentence_transformers.SentenceTransformer", "encode").runs is True
    assert libraries.runs_module("peft.PeftModelForCausalLM", "generate").runs is True
    assert libraries.runs_module("peft.PeftModelForCausalLM", "get_base_model").runs is False


def test_rotary_embedding_is_unresettable_and_listed_in_llama():
    rotary = libraries.library_class(LLAMA_ROTARY)
    assert rotary.owns_tensors == "always" and not rotary.has_reset_parameters
    llama = libraries.library_class(LLAMA_LM)
    entries = {entry.path: entry for entry in llama.unresettable}
    assert entries["model.rotary_emb"].cls == LLAMA_ROTARY
    assert "inv_freq" in entries["model.rotary_emb"].tensors
    vit = libraries.library_class(TIMM_VIT).unresettable[0]
    assert (vit.path, vit.cls) == ("", TIMM_VIT)
    assert {"cls_token", "pos_embed"} <= set(vit.tensors)
    clip = {entry.path: entry for entry in libraries.library_class(OPEN_CLIP).unresettable}
    assert clip[""].cls == OPEN_CLIP and "logit_scale" in clip[""].tensors
    hf_clip = {entry.path: entry for entry in libraries.library_class("transformers.CLIPModel").unresettable}
    assert "logit_scale" in hf_clip[""].tensors


def test_factories():
    from_config = libraries.factory("transformers.AutoModelForCausalLM.from_config")
    assert from_config.by_config[libraries.canonical("transformers.GPT2Config")] == GPT2_LM
    assert GPT2_LM in from_config.possible_classes()
    assert from_config.keyword_overrides["trust_remote_code"].unknown
    # a model class's own from_pretrained returns that class (looked up along its MRO)
    assert libraries.factory("transformers.GPT2LMHeadModel.from_pretrained").receiver is True
    create_model = libraries.factory("timm.create_model")
    assert create_model.by_argument.select("resnet18") == "timm.models.resnet.ResNet"
    assert create_model.by_argument.select("resnet18.a1_in1k") == "timm.models.resnet.ResNet"
    assert create_model.by_argument.select("hf-hub:timm/resnet18.a1_in1k") is None
    assert "timm.models.resnet.ResNet" in create_model.otherwise.candidates
    assert create_model.keyword_overrides["features_only"].unknown
    transforms = libraries.factory("open_clip.create_model_and_transforms")
    assert transforms.tuple_items[0].by_argument.select("ViT-B-32") == OPEN_CLIP
    assert transforms.tuple_items[0].by_argument.select("coca_ViT-B-32") == "open_clip.coca_model.CoCa"
    peft_model = libraries.factory("peft.get_peft_model")
    assert peft_model.by_argument.attribute == "task_type"
    assert peft_model.by_argument.select("CAUSAL_LM") == "peft.peft_model.PeftModelForCausalLM"
    assert peft_model.otherwise.instance == "peft.peft_model.PeftModel"
    assert libraries.factory("torchvision.models.resnet18").instance == "torchvision.models.resnet.ResNet"
    assert libraries.factory("torchvision.models.get_model").by_argument.select("vit_b_16") == (
        "torchvision.models.vision_transformer.VisionTransformer"
    )
    assert libraries.factory("diffusers.AutoencoderKL.from_pretrained").receiver is True
    assert libraries.factory("diffusers.UNet2DConditionModel.from_config").receiver is True


def test_every_table_is_closed_under_bases_and_factories():
    """Every base and every class a factory returns is described in the same table, so MRO walks and
    factory results never leave the table."""
    for library in libraries.LIBRARIES:
        raw = json.loads((DATA_DIR / f"{library}.json").read_text(encoding="utf-8"))
        classes = raw["classes"]
        for name, entry in classes.items():
            for base in entry["bases"]:
                assert base in classes, (library, name, base)
            if libraries.library_of(name) == library:  # torch's, abc's, ...: steps of walks only
                assert libraries.mro(name)[-1] in classes, (library, name)
            for verdict in entry.get("runs_module", {}).values():
                assert verdict["observed_on"] is None or verdict["observed_on"] in classes
        for name in raw["factories"]:
            spec = libraries.factory(name)
            for cls in spec.possible_classes():
                assert cls in classes, (library, name, cls)
        assert libraries.version(library) == raw["version"]


def test_malformed_table_is_a_clear_error(monkeypatch):
    raw = json.loads((DATA_DIR / "open_clip.json").read_text(encoding="utf-8"))
    raw["classes"][OPEN_CLIP]["attributes"] = {"methods": ["encode_image"]}  # not a kind
    monkeypatch.setattr(libraries, "_tables", {})
    monkeypatch.setattr(libraries, "_read_raw", lambda library: raw)
    with pytest.raises(LibraryTableError, match=r"open_clip table is malformed at classes\.open_clip\.model\.CLIP"):
        libraries.library_class(OPEN_CLIP)


# --- with the pinned libraries ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def libs_python() -> str:
    return require_libs_python()


def _generate(python: str, output: Path, *args: str) -> subprocess.CompletedProcess:
    output.mkdir(parents=True, exist_ok=True)
    return subprocess.run(
        [python, str(GENERATOR), "--output-dir", str(output), *args],
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_committed_tables_equal_a_regeneration_which_is_deterministic(libs_python, tmp_path):
    """One test, so that the whole generation runs once even when pytest-xdist spreads the tests."""
    regenerated = tmp_path / "regenerated"
    result = _generate(libs_python, regenerated)
    assert result.returncode == 0, result.stderr[-4000:]
    stale = [
        library
        for library in libraries.LIBRARIES
        if (regenerated / f"{library}.json").read_bytes() != (DATA_DIR / f"{library}.json").read_bytes()
    ]
    assert stale == [], (
        f"the library tables of {stale} differ from what the pinned libraries give; "
        "run: .venv-libs/bin/python scripts/generate_library_tables.py"
    )

    # In other processes (other hash seeds) open_clip's table comes out byte for byte the same, so
    # --check passes it; a changed sentence_transformers table is reported, with exit status 1.
    checked = tmp_path / "checked"
    checked.mkdir()
    (checked / "open_clip.json").write_bytes((regenerated / "open_clip.json").read_bytes())
    table = (regenerated / "sentence_transformers.json").read_text(encoding="utf-8")
    assert '"encode"' in table
    (checked / "sentence_transformers.json").write_text(table.replace('"encode"', '"encodes"', 1), encoding="utf-8")
    result = _generate(libs_python, checked, "--check", "--library", "open_clip", "--library", "sentence_transformers")
    assert result.returncode == 1, result.stderr[-4000:]
    assert "out of date: sentence_transformers; run:" in result.stderr


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# probe case -> (class, method) whose verdict the table gives
FAB001_CASES = {
    "gpt2-generate": (GPT2_LM, "generate"),
    "auto-gpt2-generate": ("transformers.AutoModelForCausalLM.from_config", "generate"),
    "gpt2-get_input_embeddings": (GPT2_LM, "get_input_embeddings"),
    "gpt2-num_parameters": (GPT2_LM, "num_parameters"),
    "timm-vit-forward_features": (TIMM_VIT, "forward_features"),
    "timm-vit-get_classifier": (TIMM_VIT, "get_classifier"),
    "open_clip-encode_image": (OPEN_CLIP, "encode_image"),
    "open_clip-encode_text": (OPEN_CLIP, "encode_text"),
    "diffusers-encode": ("diffusers.AutoencoderKL", "encode"),
    "diffusers-enable_tiling": ("diffusers.AutoencoderKL", "enable_tiling"),
    "peft-generate": ("peft.get_peft_model", "generate"),
    "peft-get_base_model": ("peft.get_peft_model", "get_base_model"),
    "sentence_transformers-encode": ("sentence_transformers.SentenceTransformer", "encode"),
    "sentence_transformers-save_pretrained": ("sentence_transformers.SentenceTransformer", "save_pretrained"),
}
FAB002_CASES = {"llama": LLAMA_LM, "timm-vit": TIMM_VIT, "open_clip-clip": OPEN_CLIP}


def _model_class(name: str) -> str:
    """The class a probe case's model has: a class, or what the factory gives for the probe's call."""
    if name == "transformers.AutoModelForCausalLM.from_config":
        return libraries.factory(name).by_config[libraries.canonical("transformers.GPT2Config")]
    if name == "peft.get_peft_model":
        return libraries.factory(name).by_argument.select("CAUSAL_LM")
    return libraries.canonical(name)


@pytest.mark.ground_truth
def test_verdicts_agree_with_real_lightning_ddp(libs_python):
    """Each probe call on a model wrapped by a real Fabric(strategy="ddp") raises Lightning's 'You are
    calling the method' exactly when the table says the method runs a module; each model built on the
    meta device fails materialization naming the first unresettable module the table lists."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in _SCRUBBED_ENV_NAMES and not key.startswith(_SCRUBBED_ENV_PREFIXES)
    }
    env.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1",
        PYTHONWARNINGS="ignore", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
    )
    result = subprocess.run([libs_python, str(PROBE)], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
    assert result.returncode == 0 and lines, result.stdout[-2000:] + result.stderr[-4000:]
    observed = json.loads(lines[-1].removeprefix("RESULTS "))

    assert set(observed["fab001"]) == set(FAB001_CASES)
    for case, (name, method) in FAB001_CASES.items():
        verdict = libraries.runs_module(_model_class(name), method)
        assert verdict is not None, case
        outcome = observed["fab001"][case]
        assert outcome["raised"] is verdict.runs, (case, outcome["message"])
        if verdict.runs:
            assert f".{method}()` from outside the model" in outcome["message"], case

    assert set(observed["fab002"]) == set(FAB002_CASES)
    for case, cls in FAB002_CASES.items():
        first = libraries.library_class(cls).unresettable[0].cls.rpartition(".")[2]
        outcome = observed["fab002"][case]
        assert outcome["raised"], case
        assert f"`{first}.reset_parameters` method is implemented" in outcome["message"], (case, outcome["message"])
