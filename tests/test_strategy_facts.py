"""What a Fabric's strategy and device count are, read from the code (trial-1207 #7-#10, #15): a conditional
`devices=` arm by arm (a list of device indices counts its length), "auto" never building on the meta device,
XLAFSDP's `init_module(empty_init=True)` not using the meta device and its setup materializing nothing, and
FAB006 under a project strategy subclass or a test's parametrized strategies. Each runs the real CLI on a small
project; the ground truth of the shapes is in fixtures/cases (fab002_neg_init_module_*, fab005_devices_*,
fab006_*subclass*, fab006_neg_parametrized_*)."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

SERVER = Path(__file__).resolve().parents[1] / "server"

MODEL = """import torch
from torch import nn


class NormHead(nn.Module):  # owns a tensor, has no reset_parameters
    def __init__(self, dim):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(dim, dim))

    def forward(self, x):
        return x @ self.weight
"""


def _check(folder: Path, source: str) -> list[dict]:
    (folder / ".git").mkdir(exist_ok=True)
    (folder / "model.py").write_text(MODEL)
    (folder / "main.py").write_text(textwrap.dedent(source))
    env = dict(os.environ, PYTHONPATH=str(SERVER))
    done = subprocess.run([sys.executable, "-m", "fabric_lsp", "check", "--no-cache", "--hints", "--output-format",
                           "json", "main.py"], cwd=folder, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return [(f["code"], f["severity"], f["location"]["row"]) for f in json.loads(done.stdout)]


def test_one_device_either_way_needs_no_launch_and_builds_nothing_on_meta(tmp_path):
    # trial-1207 #7 (litgpt/deploy/serve.py): an int 1 or a list of one index, no strategy.
    assert _check(tmp_path, """\
        import sys
        import torch
        import lightning as L
        from model import NormHead
        device = torch.device(sys.argv[1])
        fabric = L.Fabric(accelerator=device.type, devices=1 if device.type == "cpu" else [device.index])
        with fabric.init_module(empty_init=True):
            model = NormHead(4)
        model = fabric.setup_module(model)
        """) == []


def test_a_two_index_arm_is_chosen_at_run_time(tmp_path):
    found = _check(tmp_path, """\
        import sys
        import torch
        import lightning as L
        from model import NormHead
        device = torch.device(sys.argv[1])
        fabric = L.Fabric(accelerator=device.type, devices=1 if device.type == "cpu" else [0, 1])
        with fabric.init_module(empty_init=True):
            model = NormHead(4)
        model = fabric.setup_module(model)
        """)
    assert found == [("FAB005", "warning", 7)]  # launch needed on the GPUs; "auto" still builds nothing on meta


def test_xla_fsdp_or_auto_builds_nothing_on_meta(tmp_path):
    # trial-1207 #8/#9 (extensions/xla/generate/base.py): the device count is not known either.
    assert _check(tmp_path, """\
        import sys
        import lightning as L
        from lightning.fabric.strategies import XLAFSDPStrategy
        from model import NormHead
        devices = int(sys.argv[1])
        strategy = XLAFSDPStrategy(auto_wrap_policy={NormHead}) if devices > 1 else "auto"
        fabric = L.Fabric(devices=devices, strategy=strategy)
        fabric.launch()
        with fabric.init_module(empty_init=True):
            model = NormHead(4)
        model = fabric.setup_module(model)
        """) == []


def test_xla_fsdp_setup_does_not_materialize_a_meta_model(tmp_path):
    # trial-1207 #10 (extensions/xla/utils.py): a model built under torch.device("meta") and given to
    # setup_module under XLAFSDP (or "auto"): neither materializes, so no rule says setup does.
    assert _check(tmp_path, """\
        import sys
        import torch
        import lightning as L
        from lightning.fabric.strategies import XLAFSDPStrategy
        from model import NormHead
        devices = int(sys.argv[1])
        fabric = L.Fabric(devices=devices, strategy=XLAFSDPStrategy() if devices > 1 else "auto")
        fabric.launch()
        with torch.device("meta"):
            model = NormHead(4)
        model = fabric.setup_module(model)
        """) == []


def test_fsdp_or_auto_still_warns(tmp_path):
    found = _check(tmp_path, """\
        import sys
        import lightning as L
        from model import NormHead
        devices = int(sys.argv[1])
        fabric = L.Fabric(devices=devices, strategy="fsdp" if devices > 1 else "auto")
        fabric.launch()
        with fabric.init_module(empty_init=True):
            model = NormHead(4)
        model = fabric.setup_module(model)
        """)
    assert ("FAB002", "warning", 8) in found


FAB006_TEST = """\
    import pytest
    import torch
    from lightning import Fabric
    from lightning.fabric.strategies import DDPStrategy


    class MyDDP(DDPStrategy):
        {body}


    @pytest.mark.parametrize("strategy", ["ddp", "mine"])
    def test_no_backward_sync(strategy):
        if strategy == "mine":
            strategy = MyDDP()
        fabric = Fabric(devices=1, accelerator="cpu", strategy=strategy{precision})
        fabric.launch()
        model = fabric.setup(torch.nn.Linear(1, 1))
        model(torch.ones(1)).backward()
    """


def _backward_line(source: str) -> int:
    return next(n for n, line in enumerate(textwrap.dedent(source).splitlines(), 1) if ".backward()" in line)


def test_parametrized_ddp_and_a_plain_ddp_subclass_need_no_fabric_backward(tmp_path):
    # trial-1207 #15 (tests/test_thunder_ddp.py).
    assert _check(tmp_path, FAB006_TEST.format(body="pass", precision="")) == []


def test_a_subclass_overriding_backward_is_found(tmp_path):
    body = "def backward(self, tensor, module, *args, **kwargs):\n            return super().backward(tensor, module)"
    source = FAB006_TEST.format(body=body, precision="")
    assert _check(tmp_path, source) == [("FAB006", "warning", _backward_line(source))]  # "ddp" does not hook, MyDDP() does: which runs is a parameter


def test_mixed_precision_with_a_subclass_is_an_error(tmp_path):
    source = FAB006_TEST.format(body="pass", precision=', precision="bf16-mixed"')
    assert _check(tmp_path, source) == [("FAB006", "error", _backward_line(source))]


def test_a_subclass_given_its_own_precision_plugin_cannot_be_told(tmp_path):
    body = "def __init__(self):\n            super().__init__(precision=make_plugin())"
    source = FAB006_TEST.format(body=body, precision="")
    assert _check(tmp_path, source) == [("FAB006", "warning", _backward_line(source))]
