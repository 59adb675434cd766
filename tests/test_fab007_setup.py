"""FAB007 against Lightning 2.6.6: the DeepSpeed case cannot run here (no deepspeed package, no GPU), so
Lightning's own `Fabric._validate_setup_optimizers` is called on a Fabric whose strategy is a
`DeepSpeedStrategy` object (built without its __init__, which imports deepspeed); its message must be
what the finding and the record say. The other cases run in fixtures/cases/fab007_*."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("lightning")

from fabric_lsp.records import default_records  # noqa: E402


@pytest.mark.parametrize("strategy_class", ["DeepSpeedStrategy"])
def test_setup_optimizers_under_deepspeed_is_refused_by_lightnings_validation(strategy_class):
    from lightning.fabric import Fabric
    from lightning.fabric import strategies

    fabric = Fabric(accelerator="cpu", devices=1)
    cls = getattr(strategies, strategy_class)
    fabric._strategy = cls.__new__(cls)
    fabric._launched = True
    optimizer = torch.optim.SGD(torch.nn.Linear(2, 1).parameters(), lr=0.1)
    with pytest.raises(RuntimeError) as raised:
        fabric._validate_setup_optimizers([optimizer])
    message = str(raised.value)
    assert message == (
        f"The `{strategy_class}` requires the model and optimizer(s) to be set up jointly through "
        "`.setup(model, optimizer, ...)`."
    )
    match = default_records().match_message(message)
    assert match is not None and match.record.id == default_records().by_code("FAB007").id
