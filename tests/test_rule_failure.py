"""A rule that fails on a program (a bug of ours) is said on every run, cached or not: the first run
must not leave "All checks passed!" in the findings cache for the next one."""
import dataclasses

from fabric_lsp import cli, engine
from fabric_lsp.rules import ALL_RULES

SCRIPT = """import torch
import lightning as L

fabric = L.Fabric(accelerator="cpu", devices=1)
model = fabric.setup(torch.nn.Linear(2, 2))
model.mark_forward_method("genrate")
"""


def test_a_failed_rule_is_said_on_the_cached_run_too(tmp_path, monkeypatch, capsys):
    (tmp_path / "train.py").write_text(SCRIPT)
    index = next(i for i, rule in enumerate(ALL_RULES) if rule.code == "FAB004")

    def broken(facts):
        raise RuntimeError("a bug in the rule")

    rules = list(ALL_RULES)
    rules[index] = dataclasses.replace(rules[index], check=broken)
    monkeypatch.setattr(engine, "ALL_RULES", tuple(rules))
    monkeypatch.chdir(tmp_path)
    outputs = []
    for _ in range(2):
        engine._programs.clear()  # the second run answers from the findings cache on disk, as a new process would
        status = cli.main(["check", "--cache-dir", str(tmp_path / "cache"), "train.py"])
        captured = capsys.readouterr()
        outputs.append((status, captured.out, captured.err))
    for status, out, err in outputs:
        assert "rule FAB004 failed" in err, err
        assert status in (0, 1, 2)
