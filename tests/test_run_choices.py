"""Values the program states, and choices it leaves to run time (issue 34): which arms of a branch are
followed, which are taken only under a command-line option, an environment variable or a configuration
value, how such a choice is named, and where a `sys.path` addition computed from `__file__` leads.

Each program here runs through the real engine (`check_source`); the fixtures under fixtures/cases prove the
same shapes under real Lightning (fab001_flag_*, fab001_env_*, fab001_config_file_*, fab001_hydra_*, ...)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fabric_lsp.analysis.project import config_imports, sys_path_literals
from fabric_lsp.analysis.semantics.run_choices import choice_description, choice_phrase
from fabric_lsp.analysis.values import Choice, const
from fabric_lsp.engine import check_source
from fabric_lsp.settings.config import Config

HEADER = '''\
import argparse, os
import torch
from torch import nn
from lightning.fabric import Fabric


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.Linear(4, 4)

    def forward(self, x):
        return self.layer(x)

    def sample(self, x=None):
        if x is None:
            return torch.zeros(1)
        return self.layer(x)


fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
fabric.launch()
model = fabric.setup_module(Net())
'''


def _check(tmp_path: Path, body: str, files: dict[str, str] | None = None, header: str = HEADER):
    for name, text in (files or {}).items():
        target = tmp_path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text), encoding="utf-8")
    path = tmp_path / "train.py"
    text = header + textwrap.dedent(body)
    path.write_text(text, encoding="utf-8")
    found = check_source(str(path), text, Config(hints=True, root=str(tmp_path)))
    return [(f.code, f.severity.value, text.splitlines()[f.span.start.line].strip(), " | ".join(f.notes)) for f in found]


def _one(found, code="FAB001"):
    matching = [f for f in found if f[0] == code]
    assert len(matching) == 1, found
    return matching[0]


# -- arms the program's values rule out --------------------------------------------------------------------
@pytest.mark.parametrize("body", [
    # a parameter whose every caller leaves its default
    '''
    def evaluate(model, enabled=False):
        if enabled:
            model.sample(torch.ones(4))
    evaluate(model)
    ''',
    # `is None` on an attribute every instance sets to an object
    '''
    class Loop:
        def __init__(self, model, fabric=None):
            self.model, self.fabric = model, fabric
        def run(self):
            if self.fabric is None:
                self.model.sample(torch.ones(4))
    Loop(model, fabric=fabric).run()
    ''',
    # `not` of an object, and `and` ended by a constant
    '''
    every = 0
    if not fabric:
        model.sample(torch.ones(4))
    for step in range(3):
        if every and step % every == 0:
            model.sample(torch.ones(4))
    ''',
    # JSON and YAML text written in the program
    '''
    import json, yaml
    settings = yaml.safe_load("preview: false\\nevery: 0")
    flags = json.loads('{"sample": false}')
    if settings["preview"] or flags["sample"]:
        model.sample(torch.ones(4))
    ''',
    # a dataclass default no caller overrides
    '''
    from dataclasses import dataclass
    @dataclass
    class Options:
        preview: bool = False
    options = Options()
    if options.preview:
        model.sample(torch.ones(4))
    ''',
    # the call's own arguments take the method's way without a module (x is None)
    '''
    model.sample()
    model.sample(None)
    ''',
])
def test_arms_the_program_rules_out_are_not_followed(tmp_path, body):
    assert _check(tmp_path, body) == []


def test_hasattr_on_the_wrapper_reads_the_original_class(tmp_path):
    found = _check(tmp_path, '''
    for name in ("sample", "decode"):
        if hasattr(model, name):
            model.mark_forward_method(name)
    model.sample(torch.ones(4))
    ''')
    assert found == []  # "decode" is skipped (no FAB004); "sample" is marked before the call (no FAB001)


def test_a_list_of_device_indices_counts_as_its_length(tmp_path):
    header = HEADER.replace('fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")',
                            'ids = [0, 1]\nfabric = Fabric(accelerator="cpu", devices=len(ids))')
    assert _one(_check(tmp_path, "model.sample(torch.ones(4))\n", header=header))[1] == "error"
    header = HEADER.replace('fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")',
                            'devices = [0] if torch.cuda.is_available() else 1\nfabric = Fabric(accelerator="cpu", devices=devices)')
    assert _one(_check(tmp_path, "model.sample(torch.ones(4))\n", header=header))[1] == "hint"


# -- run-time choices: a warning that names the choice ------------------------------------------------------
@pytest.mark.parametrize(("body", "phrase"), [
    ('''
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", action="store_true")
    args = parser.parse_args()
    if args.sample:
        model.sample(torch.ones(4))
    ''', "when run with `--sample`"),
    ('''
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-eval", dest="evaluate", action="store_false")
    args = parser.parse_args()
    if not args.evaluate:
        model.sample(torch.ones(4))
    ''', "when run with `--no-eval`"),
    ('''
    parser = argparse.ArgumentParser()
    parser.add_argument("--mode", default="train", choices=["train", "sample"])
    args, _ = parser.parse_known_args()
    if args.mode == "sample":
        model.sample(torch.ones(4))
    ''', "when run with `--mode sample`"),
    ('''
    if os.environ.get("EVAL", "0") == "1":
        model.sample(torch.ones(4))
    ''', "when `EVAL=1`"),
    ('''
    if int(os.getenv("WORLD_SIZE", 1)) > 1:
        model.sample(torch.ones(4))
    ''', "when `WORLD_SIZE` > 1"),
    ('''
    if "PREVIEW" in os.environ:
        model.sample(torch.ones(4))
    ''', "when `PREVIEW` is set"),
    # a function called only under the choice; the rest of a function after `if not ...: return`
    ('''
    def preview(model):
        model.sample(torch.ones(4))
    def main():
        parser = argparse.ArgumentParser()
        parser.add_argument("--preview", action="store_true")
        args = parser.parse_args()
        if args.preview:
            preview(model)
    main()
    ''', "when run with `--preview`"),
    ('''
    def maybe(model):
        if os.environ.get("PREVIEW") != "yes":
            return
        model.sample(torch.ones(4))
    maybe(model)
    ''', "when `PREVIEW=yes`"),
    # a value made only under the choice, tested for None later
    ('''
    parser = argparse.ArgumentParser()
    parser.add_argument("--preview", choices=["none", "grid"], default="none")
    args = parser.parse_args()
    previewer = model if args.preview == "grid" else None
    if previewer is not None:
        previewer.sample(torch.ones(4))
    ''', "when run with `--preview grid`"),
    # both parts of `and` must hold
    ('''
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", action="store_true")
    args = parser.parse_args()
    if args.sample and os.environ.get("RANK", "0") == "0":
        model.sample(torch.ones(4))
    ''', "when run with `--sample`"),
])
def test_a_path_taken_only_under_a_choice_is_a_warning_naming_it(tmp_path, body, phrase):
    code, severity, _, notes = _one(_check(tmp_path, body))
    assert (code, severity) == ("FAB001", "warning")
    assert phrase in notes


def test_the_default_arm_of_a_choice_stays_an_error(tmp_path):
    found = _check(tmp_path, '''
    parser = argparse.ArgumentParser()
    parser.add_argument("--fast", action="store_true")
    args = parser.parse_args()
    if not args.fast:
        model.sample(torch.ones(4))
    ''')
    assert _one(found)[1] == "error"


def test_a_strategy_from_the_command_line_is_a_choice_even_when_its_default_raises(tmp_path):
    header = HEADER.replace('fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")', (
        'parser = argparse.ArgumentParser()\nparser.add_argument("--strategy", default="ddp")\n'
        'args = parser.parse_args()\nfabric = Fabric(accelerator="cpu", devices=1, strategy=args.strategy)'))
    code, severity, _, notes = _one(_check(tmp_path, "model.sample(torch.ones(4))\n", header=header))
    assert severity == "warning" and '`--strategy`, default "ddp"' in notes


# -- configuration files ----------------------------------------------------------------------------------
def test_a_yaml_file_gives_the_default_runs_values_as_choices(tmp_path):
    found = _check(tmp_path, '''
    import yaml
    with open("configs/train.yaml") as handle:
        config = yaml.safe_load(handle)
    if config["preview"]:
        model.sample(torch.ones(4))
    if config["every"] > 0:
        model.sample(torch.ones(4))
    ''', files={"configs/train.yaml": "preview: false\nevery: 10\n"})
    assert [(f[0], f[1]) for f in found] == [("FAB001", "warning"), ("FAB001", "error")]
    assert "when `preview: true` (configs/train.yaml)" in found[0][3]


def test_an_omegaconf_file_names_its_strategy(tmp_path):
    header = HEADER.replace('fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")', (
        'from omegaconf import OmegaConf\ncfg = OmegaConf.load("conf.yaml")\n'
        'fabric = Fabric(accelerator="cpu", **cfg.fabric)'))
    found = _check(tmp_path, "model.sample(torch.ones(4))\n", files={"conf.yaml": "fabric:\n  strategy: ddp\n  devices: 1\n"},
                   header=header)
    code, severity, _, notes = _one(found)
    assert severity == "warning" and "`fabric.strategy: ddp` in conf.yaml" in notes


def test_a_file_outside_the_project_is_not_read(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.yaml"
    outside.write_text("preview: true\n")
    found = _check(tmp_path, f'''
    import yaml
    config = yaml.safe_load(open({str(outside)!r}))
    if config["preview"]:
        model.sample(torch.ones(4))
    ''')
    code, severity, _, notes = _one(found)
    assert severity == "error" and "preview" not in notes  # unknown value: both arms, no choice named


def test_hydra_composes_the_default_run_and_instantiate_builds_the_target(tmp_path):
    files = {
        "conf/config.yaml": "defaults:\n  - model: net\n  - _self_\npreview: false\n",
        "conf/model/net.yaml": "_target_: nets.Big\nwidth: 4\n",
        "conf/model/small.yaml": "_target_: nets.Small\n",
        "nets.py": '''
            import torch
            from torch import nn
            class Big(nn.Module):
                def __init__(self, width=4):
                    super().__init__()
                    self.layer = nn.Linear(width, width)
                def forward(self, x):
                    return self.layer(x)
                def generate(self, x):
                    return self.layer(x)
            class Small(nn.Module):
                def forward(self, x):
                    return x
                def generate(self, x):
                    return x
        ''',
    }
    header = '''\
import hydra
import torch
from hydra.utils import instantiate
from lightning.fabric import Fabric


@hydra.main(version_base=None, config_path="conf", config_name="config")
def main(cfg):
    fabric = Fabric(accelerator="cpu", devices=1, strategy="ddp")
    fabric.launch()
    model = fabric.setup_module(instantiate(cfg.model))
    model.generate(torch.ones(4))
    if cfg.preview:
        model.generate(torch.ones(4))
'''
    found = _check(tmp_path, "", files=files, header=header)
    assert [(f[0], f[1]) for f in found] == [("FAB001", "error"), ("FAB001", "warning")]
    assert "when run with `preview=true`" in found[1][3]


def test_a_script_that_instantiates_configs_imports_their_targets(tmp_path):
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "net.yaml").write_text("_target_: pkg.nets.Big\n")
    text = 'import hydra\nfrom hydra.utils import instantiate\n@hydra.main(config_path="conf")\ndef main(cfg): instantiate(cfg.model)\n'
    imports = config_imports(str(tmp_path / "train.py"), text)
    assert [(i.module, i.names) for i in imports] == [("pkg.nets", ("Big",))]
    assert config_imports(str(tmp_path / "train.py"), "import yaml\n") == []


# -- naming a choice --------------------------------------------------------------------------------------
def test_choice_phrases():
    sample = Choice("flag", "--sample", const(False), "store_true")
    assert choice_phrase(sample, True) == "when run with `--sample`"
    assert choice_phrase(sample, False) == "when run without `--sample`"
    mode = Choice("flag", "--mode", const(False), "value", (("Eq", "sample"),))
    assert choice_phrase(mode, True) == "when run with `--mode sample`"
    assert choice_phrase(mode, False) == "when run with `--mode` other than `sample`"
    variable = Choice("env", "USE_DDP", const(False), "", (("Eq", "1"), ("not",)))
    assert choice_phrase(variable, False) == "when `USE_DDP=1`"
    value = Choice("config", "trainer.compile", const(False), "configs/a.yaml")
    assert choice_phrase(value, True) == "when `trainer.compile: true` (configs/a.yaml)"
    override = Choice("hydra", "model.name", const("vae"), "conf/model/vae.yaml", (("Eq", "vaem"),))
    assert choice_phrase(override, True) == "when run with `model.name=vaem`"
    assert choice_description(Choice("flag", "--strategy", const("ddp"), "value")) == '`--strategy`, default "ddp"'
    assert choice_description(Choice("config", "strategy", const("ddp"), "c.yaml")) == "`strategy: ddp` in c.yaml"


# -- sys.path additions ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("line", "folder"), [
    ('sys.path.insert(0, "src")', "src"),
    ('sys.path.append(os.path.join(os.path.dirname(__file__), "..", "lib"))', "../lib"),
    ('sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))', ".."),
    ('sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "vendor"))', "../../vendor"),
    ('sys.path.append(str(Path(__file__).parent / "third_party"))', "third_party"),
    ('sys.path.append(os.path.join(__file__, "..", ".."))', ".."),
    ('ROOT = os.path.dirname(os.path.abspath(__file__))\nsys.path.append(ROOT + "/ext")', "ext"),
    ('ROOT = os.path.dirname(__file__)\nsys.path.append(f"{ROOT}/../ext")', "../ext"),
])
def test_sys_path_additions_computed_from_the_file(line, folder):
    assert sys_path_literals(f"import os, sys\nfrom pathlib import Path\n{line}\n") == (folder,)


def test_sys_path_additions_that_cannot_be_read_add_nothing():
    assert sys_path_literals("import os, sys\nsys.path.append(os.getcwd())\nsys.path.append(__file__)\n") == ()
