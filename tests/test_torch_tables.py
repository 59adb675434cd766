"""The torch/Lightning fallback tables: the committed JSON is what the generator produces from the
installed torch + lightning, its facts agree with what real torch/Lightning do, and the loader
reads it without importing either."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fabric_lsp.analysis.libraries.torch_tables import load_raw, parse_tables, tables

REPO_ROOT = Path(__file__).resolve().parent.parent
SCRIPT = REPO_ROOT / "scripts" / "generate_torch_tables.py"
COMMITTED = REPO_ROOT / "server" / "fabric_lsp" / "analysis" / "libraries" / "data" / "torch_tables.json"
VERSION_FIELDS = ("torch_version", "lightning_version")


def _require_torch_and_lightning() -> None:
    pytest.importorskip("torch", reason="torch is not installed: cannot regenerate or verify the tables")
    pytest.importorskip("lightning", reason="lightning is not installed: cannot regenerate or verify the tables")


@pytest.fixture(scope="module")
def generator():
    _require_torch_and_lightning()
    spec = importlib.util.spec_from_file_location("generate_torch_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def regenerated(generator):
    return generator.build_tables()


# --- the committed file is the generator's output ------------------------------------------------


def test_committed_tables_equal_regenerated_tables(generator, regenerated):
    committed = json.loads(COMMITTED.read_text(encoding="utf-8"))
    same_versions = all(committed[field] == regenerated[field] for field in VERSION_FIELDS)
    if same_versions:
        # Byte-for-byte: regenerating must not even reorder anything.
        assert generator.render(regenerated) == COMMITTED.read_text(encoding="utf-8"), (
            "torch_tables.json is stale; run: python scripts/generate_torch_tables.py"
        )
    else:
        for field in VERSION_FIELDS:
            committed.pop(field)
            regenerated = {key: value for key, value in regenerated.items() if key != field}
        assert regenerated == committed, (
            "the installed torch/lightning give different facts than the committed tables; "
            "run: python scripts/generate_torch_tables.py"
        )


def test_regeneration_is_deterministic(generator, regenerated):
    assert generator.render(generator.build_tables()) == generator.render(regenerated)


def test_check_mode_exit_status(generator, regenerated, tmp_path, capsys):
    current = tmp_path / "current.json"
    current.write_text(generator.render(regenerated), encoding="utf-8")
    assert generator.main(["--check", "--output", str(current)]) == 0

    stale = tmp_path / "stale.json"
    stale_tables = dict(regenerated, fabric_module_attributes=[*regenerated["fabric_module_attributes"], "generate"])
    stale.write_text(generator.render(stale_tables), encoding="utf-8")
    assert generator.main(["--check", "--output", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().err


def test_every_public_torch_nn_module_is_listed_and_constructed(regenerated):
    import torch

    public_modules = {
        name
        for name in dir(torch.nn)
        if not name.startswith("_") and isinstance(getattr(torch.nn, name), type)
        and issubclass(getattr(torch.nn, name), torch.nn.Module)
    }
    assert set(regenerated["nn_modules"]) == public_modules
    assert regenerated["unknown_nn_modules"] == []


# --- spot checks on the shipped tables (no torch needed) ----------------------------------------


def test_linear_has_reset_parameters_and_owns_tensors():
    linear = tables().nn_module("Linear")
    assert linear.has_reset_parameters
    assert linear.owns_tensors == "always"
    assert not linear.container
    assert tables().nn_module("torch.nn.modules.linear.Linear") is linear
    assert tables().nn_module("torch.nn.Linear") is linear


def test_multihead_attention_owns_tensors_without_reset_parameters():
    attention = tables().nn_module("torch.nn.modules.activation.MultiheadAttention")
    assert attention.name == "MultiheadAttention"
    assert attention.owns_tensors == "always"
    assert not attention.has_reset_parameters


def test_cross_entropy_loss_owns_a_tensor_only_with_weight():
    loss = tables().nn_module("CrossEntropyLoss")
    assert loss.owns_tensors == "with_kwargs"
    assert loss.tensor_kwargs == ("weight",)
    assert not loss.has_reset_parameters
    assert loss.owns_tensors_when(tensor_args=["weight"]) is True
    assert loss.owns_tensors_when(tensor_args=[]) is False
    assert loss.argument_position("weight") == 0
    assert set(tables().nn_module("BCEWithLogitsLoss").tensor_kwargs) == {"weight", "pos_weight"}


def test_containers():
    for name in ("Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict"):
        assert tables().nn_module(name).container, name
    assert tables().nn_module("Sequential").owns_tensors == "never"
    assert not tables().nn_module("Linear").container
    for name in ("ParameterList", "ParameterDict"):
        facts = tables().nn_module(name)
        assert facts.owns_added_parameters and facts.owns_tensors == "with_kwargs"
        assert not facts.has_reset_parameters
    assert not tables().nn_module("ModuleList").owns_added_parameters


def test_stateless_modules_own_nothing():
    for name in ("Identity", "ReLU", "Dropout", "Transformer", "TransformerEncoderLayer"):
        assert tables().nn_module(name).owns_tensors == "never", name


def test_wrapper_attributes():
    attributes = tables().fabric_module_attributes
    assert {"parameters", "forward", "mark_forward_method", "module", "state_dict", "train", "eval", "to"} <= attributes
    assert {"_forward_module", "_original_module"} <= attributes  # the wrapper's own _modules
    assert "generate" not in attributes
    assert "weight" not in attributes
    assert tables().step_methods == ("training_step", "validation_step", "test_step", "predict_step")
    assert {"parameters", "state_dict", "zero_grad"} <= tables().nn_module_attributes
    assert "mark_forward_method" not in tables().nn_module_attributes


def test_fabric_and_materialize_names():
    spellings = ("lightning.Fabric", "lightning.fabric.Fabric", "lightning.fabric.fabric.Fabric", "lightning_fabric.Fabric")
    for name in spellings:
        assert tables().is_fabric_class(name), name
    assert not tables().is_fabric_class("lightning.pytorch.Trainer")
    assert tables().is_materialize_function("lightning.fabric.utilities.init._materialize_meta_tensors")
    assert tables().is_materialize_function("lightning.fabric.utilities.init._materialize_distributed_module")


@pytest.mark.parametrize(
    ("name", "wraps"),
    [
        ("ddp", True),
        ("DDP_Spawn", True),  # Fabric lower-cases strategy=
        ("dp", True),
        ("fsdp", True),
        ("deepspeed_stage_3", True),
        ("xla_fsdp", True),
        ("xla", False),
        ("single_xla", False),
        ("auto", None),
        ("no_such_strategy", None),
        ("DDPStrategy", True),
        ("lightning.fabric.strategies.fsdp.FSDPStrategy", True),
        ("lightning_fabric.strategies.DeepSpeedStrategy", True),
        ("SingleDeviceStrategy", False),
        ("ModelParallelStrategy", False),
        ("XLAStrategy", False),
        ("Strategy", None),
    ],
)
def test_strategy_wraps(name, wraps):
    assert tables().strategy_wraps(name) is wraps


def test_strategy_string_flags_match_their_classes():
    raw = load_raw()
    for key, entry in raw["strategy_strings"].items():
        assert entry["wraps_module"] == raw["strategies"][entry["strategy"]]["wraps_module"], key


def test_loader_does_not_import_torch_or_lightning():
    code = (
        "import sys\n"
        "from fabric_lsp.analysis.libraries.torch_tables import tables\n"
        "assert tables().nn_module('Linear') is not None\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'lightning', 'lightning_fabric')))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT / "server"))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert result.stdout.strip() == "[]"


def test_parse_tables_is_cached_and_consistent():
    assert tables() is tables()
    assert parse_tables(load_raw()) == tables()


# --- the facts agree with real torch / Lightning ---------------------------------------------------


def test_materialization_outcome_matches_the_tables(generator):
    import torch
    from lightning.fabric.utilities.init import _materialize_meta_tensors

    def materialize(build):
        with torch.device("meta"):
            module = build()
        _materialize_meta_tensors(module, torch.device("cpu"))

    materialize(lambda: torch.nn.Linear(4, 4))
    materialize(lambda: torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()))
    materialize(lambda: torch.nn.CrossEntropyLoss())
    with pytest.raises(TypeError, match=r"`MultiheadAttention\.reset_parameters` method is implemented"):
        materialize(lambda: torch.nn.MultiheadAttention(4, 2))
    with pytest.raises(TypeError, match=r"`CrossEntropyLoss\.reset_parameters` method is implemented"):
        materialize(lambda: torch.nn.CrossEntropyLoss(weight=torch.ones(4)))
    with pytest.raises(TypeError, match=r"`ParameterList\.reset_parameters` method is implemented"):
        materialize(lambda: torch.nn.ParameterList([torch.nn.Parameter(torch.ones(1))]))


# Run in a fresh process: it initialises a (one-process, gloo) torch.distributed group.
_STRATEGY_PROBE = textwrap.dedent(
    """
    import json, warnings
    import torch
    from lightning.fabric import Fabric
    from lightning.fabric.strategies import DataParallelStrategy, ModelParallelStrategy
    from torch.distributed.fsdp import fully_shard

    warnings.simplefilter("ignore")

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.layer(x)

        def generate(self):
            return self.layer(torch.ones(2))

    def probe(wrapped):
        try:
            wrapped.generate()
            raised = False
        except RuntimeError:
            raised = True
        wrapped.state_dict(), list(wrapped.parameters()), wrapped.train()  # wrapper names never raise
        return {"wraps": wrapped._forward_module is not wrapped._original_module, "generate_raised": raised}

    results = {"SingleDeviceStrategy": probe(Fabric(accelerator="cpu", devices=1).setup(Model()))}
    ddp = Fabric(accelerator="cpu", devices=1, strategy="ddp")
    ddp.launch()
    results["DDPStrategy"] = probe(ddp.setup(Model()))

    model = Model()
    results["DataParallelStrategy"] = {
        "wraps": DataParallelStrategy(parallel_devices=[torch.device("cpu")]).setup_module(model) is not model
    }
    strategy = ModelParallelStrategy(parallelize_fn=lambda m, mesh: fully_shard(m, mesh=mesh))
    strategy.parallel_devices = [torch.device("cpu")]
    strategy.cluster_environment = ddp._strategy.cluster_environment
    strategy.accelerator = ddp._strategy.accelerator
    strategy.setup_environment()
    model = Model()
    results["ModelParallelStrategy"] = {"wraps": strategy.setup_module(model) is not model}
    print("RESULTS " + json.dumps(results))
    """
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_strategy_wrapping_matches_real_lightning():
    """The CPU-runnable strategies' wraps_module flags, confirmed by running Fabric.setup: under a
    wrapping strategy a forwarded method that runs a layer raises, wrapper names never do."""
    _require_torch_and_lightning()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), PYTHONWARNINGS="ignore")
    for variable in ("LT_STRATEGY", "LT_DEVICES", "LT_ACCELERATOR", "LT_NUM_NODES", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(variable, None)
    result = subprocess.run(
        [sys.executable, "-c", _STRATEGY_PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
    assert result.returncode == 0 and lines, result.stdout + result.stderr
    observed = json.loads(lines[-1].removeprefix("RESULTS "))

    for class_name, outcome in observed.items():
        assert tables().strategies[class_name].wraps_module is outcome["wraps"], class_name
        if "generate_raised" in outcome:
            assert outcome["generate_raised"] is outcome["wraps"], class_name


# --- what init_module(empty_init=True) builds on, per strategy ------------------------------------


@pytest.mark.parametrize(
    ("name", "meta"),
    [("fsdp", True), ("FSDPStrategy", True), ("ModelParallelStrategy", True), ("xla_fsdp", False),
     ("XLAFSDPStrategy", False), ("ddp", False), ("deepspeed", False), ("SingleDeviceStrategy", False)],
)
def test_empty_init_meta_per_strategy(name, meta):
    # XLAFSDPStrategy.module_init_context enters _EmptyInit, not torch.device("meta") (xla_fsdp.py in
    # Lightning 2.6.6; the generator checks each listed function's source): XLA cannot run here.
    assert tables().strategy(name).empty_init_meta is meta


def test_generator_refuses_a_module_init_context_it_does_not_list(generator, monkeypatch):
    monkeypatch.delitem(generator.MODULE_INIT_META, "XLAFSDPStrategy.module_init_context")
    with pytest.raises(RuntimeError, match="update MODULE_INIT_META"):
        generator.fabric_facts()
    monkeypatch.setitem(generator.MODULE_INIT_META, "XLAFSDPStrategy.module_init_context", (True, "wrong"))
    with pytest.raises(RuntimeError, match="disagrees with its source"):
        generator.fabric_facts()


_EMPTY_INIT_PROBE = textwrap.dedent(
    """
    import json, warnings
    warnings.simplefilter("ignore")
    import torch
    from lightning.fabric import Fabric
    from lightning.fabric.strategies import FSDPStrategy, ModelParallelStrategy
    results = {}
    for name, strategy in (("SingleDeviceStrategy", "auto"), ("DDPStrategy", "ddp"),
                           ("ModelParallelStrategy", ModelParallelStrategy(parallelize_fn=lambda m, d: m))):
        fabric = Fabric(accelerator="cpu", devices=1, strategy=strategy)
        fabric.launch()
        assert type(fabric.strategy).__name__ == name, type(fabric.strategy).__name__
        with fabric.init_module(empty_init=True):
            layer = torch.nn.Linear(2, 2)
        results[name] = layer.weight.is_meta
    # FSDP refuses a CPU Fabric: its module_init_context is entered directly.
    with FSDPStrategy(parallel_devices=[torch.device("cpu")]).module_init_context(empty_init=True):
        layer = torch.nn.Linear(2, 2)
    results["FSDPStrategy"] = layer.weight.is_meta
    print("RESULTS " + json.dumps(results))
    """
)


def test_empty_init_meta_matches_real_lightning():
    _require_torch_and_lightning()
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_free_port()), PYTHONWARNINGS="ignore",
               CUDA_VISIBLE_DEVICES="")
    for variable in ("LT_STRATEGY", "LT_DEVICES", "LT_ACCELERATOR", "LT_NUM_NODES", "WORLD_SIZE", "RANK", "LOCAL_RANK"):
        env.pop(variable, None)
    result = subprocess.run(
        [sys.executable, "-c", _EMPTY_INIT_PROBE], capture_output=True, text=True, env=env, timeout=300
    )
    lines = [line for line in result.stdout.splitlines() if line.startswith("RESULTS ")]
    assert result.returncode == 0 and lines, result.stdout + result.stderr
    observed = json.loads(lines[-1].removeprefix("RESULTS "))
    assert set(observed) == {"SingleDeviceStrategy", "DDPStrategy", "ModelParallelStrategy", "FSDPStrategy"}
    for class_name, meta in observed.items():
        assert tables().strategies[class_name].empty_init_meta is meta, class_name
