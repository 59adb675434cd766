"""FAB006 against Lightning 2.6.6 itself: which precisions and strategies make `_FabricModule`'s backward
hook raise on `loss.backward()`, and that the analysis' tables (analysis/semantics/fabric.py) say the same.

Mixed precision runs on the CPU in the ground-truth fixtures (fixtures/cases/fab006_*). FSDP's backward
cannot run a real step here, so the wrapped module is built with Lightning's own `_FabricModule` and an
`FSDPStrategy` object (no process group is needed to run its hook); DeepSpeed cannot be imported without
the deepspeed package, so its precision plugin is checked with the same `is_overridden` test that
`_FabricModule._register_backward_hook` uses.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

from fabric_lsp.analysis.semantics import fabric as fabric_semantics  # noqa: E402
from fabric_lsp.records import default_records  # noqa: E402


def _backward_through_wrapper(strategy) -> str | None:
    from lightning.fabric.wrappers import _FabricModule

    wrapped = _FabricModule(torch.nn.Linear(3, 1), strategy)
    try:
        wrapped(torch.randn(2, 3)).sum().backward()
    except RuntimeError as error:
        return str(error)
    return None


def _record_message() -> str:
    return default_records().by_code("FAB006").error_message


def test_fsdp_hook_raises_the_records_message_whatever_the_precision():
    from lightning.fabric.plugins.precision import FSDPPrecision
    from lightning.fabric.strategies import FSDPStrategy

    assert _backward_through_wrapper(FSDPStrategy(precision=FSDPPrecision("32-true"))) == _record_message()


def test_mixed_precision_hook_raises_and_true_precisions_do_not():
    from lightning.fabric.plugins.precision import MixedPrecision, Precision
    from lightning.fabric.strategies import DDPStrategy, SingleDeviceStrategy

    cpu = torch.device("cpu")
    mixed = SingleDeviceStrategy(device=cpu, precision=MixedPrecision("bf16-mixed", "cpu"))
    assert _backward_through_wrapper(mixed) == _record_message()
    assert _backward_through_wrapper(DDPStrategy(precision=Precision())) is None


def test_deepspeed_precision_overrides_backward():
    from lightning.fabric.plugins.precision import Precision
    from lightning.fabric.plugins.precision.deepspeed import DeepSpeedPrecision
    from lightning_utilities.core.overrides import is_overridden

    plugin = DeepSpeedPrecision.__new__(DeepSpeedPrecision)  # its __init__ needs no deepspeed, but is not needed
    assert any(is_overridden(m, plugin, parent=Precision) for m in ("pre_backward", "backward", "post_backward"))


@pytest.mark.parametrize("value", sorted(fabric_semantics._HOOKING_PRECISIONS | fabric_semantics._PLAIN_PRECISIONS, key=str))
def test_precision_tables_agree_with_lightnings_connector(value):
    """Each precision value the analysis knows maps, in Lightning's connector, to a plugin that overrides
    backward exactly when the analysis says it hooks (CPU, the default strategy)."""
    from lightning.fabric.connector import _Connector
    from lightning.fabric.plugins.precision import Precision
    from lightning_utilities.core.overrides import is_overridden

    if str(value).startswith("transformer-engine"):
        pytest.skip("TransformerEnginePrecision needs transformer_engine; it defines no backward (read in its source)")
    precision = _Connector(accelerator="cpu", devices=1, precision=value).precision
    hooks = any(is_overridden(m, precision, parent=Precision) for m in ("pre_backward", "backward", "post_backward"))
    assert hooks == (value in fabric_semantics._HOOKING_PRECISIONS), (value, type(precision).__name__)


def test_transformer_engine_precision_defines_no_backward():
    import inspect

    from lightning.fabric.plugins.precision import transformer_engine

    source = inspect.getsource(transformer_engine.TransformerEnginePrecision)
    assert "def backward" not in source and "def pre_backward" not in source and "def post_backward" not in source
