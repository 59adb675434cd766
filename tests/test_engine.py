"""The engine's own behaviour: configuration, `# noqa`, positions, and bad input."""

from __future__ import annotations

from fabric_lsp.settings.config import Config
from fabric_lsp.engine import check_source, is_suppressed
from fabric_lsp.findings import Severity

PROGRAM = '''import torch.nn as nn
from lightning.fabric import Fabric

class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 4)
    def generate(self, x):
        return self.head(x)

fabric = Fabric(strategy="ddp"); fabric.launch()
model = fabric.setup(LM())
{call}
'''


def check(tmp_path, text, **config):
    path = tmp_path / "train.py"
    path.write_text(text, encoding="utf-8")
    return check_source(str(path), text, Config(root=str(tmp_path), **config))


def test_finding_points_at_the_method_name(tmp_path):
    [finding] = check(tmp_path, PROGRAM.format(call="out = model.generate(None)"))
    assert (finding.code, finding.severity) == ("FAB001", Severity.ERROR)
    assert (finding.span.start.line, finding.span.start.character, finding.span.end.character) == (12, 12, 20)
    assert "LM.generate()" in finding.message and 'strategy="ddp"' in finding.full_message  # the headline, a note
    assert finding.context == {"class": "LM", "method": "generate"}


def test_columns_count_characters_not_bytes(tmp_path):
    [finding] = check(tmp_path, PROGRAM.format(call='résumé = "ü"; out = model.generate(None)'))
    line = PROGRAM.format(call='résumé = "ü"; out = model.generate(None)').splitlines()[12]
    assert line[finding.span.start.character : finding.span.end.character] == "generate"


def test_noqa_forms(tmp_path):
    assert check(tmp_path, PROGRAM.format(call="model.generate(None)  # noqa"))== []
    assert check(tmp_path, PROGRAM.format(call="model.generate(None)  # noqa: FAB001")) == []
    assert check(tmp_path, PROGRAM.format(call="model.generate(None)  # noqa: E501 FAB001")) == []
    # As ruff: a lower-case word ends the list of codes (the rest is a comment), so only E501 is named.
    assert len(check(tmp_path, PROGRAM.format(call="model.generate(None)  # noqa: E501, fab001"))) == 1
    assert len(check(tmp_path, PROGRAM.format(call="model.generate(None)  # noqa: FAB002"))) == 1
    assert is_suppressed("x  # NOQA:FAB003", "FAB003")
    assert not is_suppressed("x  # noqa: FAB0011", "FAB001")


def test_select_ignore_and_severity_override(tmp_path):
    text = PROGRAM.format(call="model.generate(None)")
    assert check(tmp_path, text, ignore=frozenset({"FAB001"})) == []
    assert check(tmp_path, text, select=frozenset({"FAB002"})) == []
    [finding] = check(tmp_path, text, severity={"FAB001": Severity.WARNING})
    assert finding.severity == Severity.WARNING


def test_hints_are_off_unless_asked(tmp_path):
    text = PROGRAM.format(call="model.generate(None)").replace('strategy="ddp"', 'accelerator="cpu", devices=1')
    assert check(tmp_path, text) == []
    [finding] = check(tmp_path, text, hints=True)
    assert finding.severity == Severity.HINT


def test_bad_input_gives_no_finding_and_no_exception(tmp_path):
    assert check(tmp_path, "model = fabric.setup(\n") == []  # half-typed
    assert check(tmp_path, "setup\x00\x00meta") == []  # NUL bytes
    assert check(tmp_path, "x = " + "(" * 300 + "setup" + ")" * 300) == []  # too deep for the parser
    assert check(tmp_path, "") == []


def test_file_without_trigger_words_is_not_parsed(tmp_path, monkeypatch):
    import fabric_lsp.engine as engine

    def fail(*args, **kwargs):
        raise AssertionError("parsed")

    monkeypatch.setattr(engine.SourceFile, "parse", fail)
    assert check(tmp_path, "import torch\nprint(torch.ones(3))\n") == []


def test_a_spent_analysis_bound_leaves_the_flow_findings_out_and_says_so(caplog, monkeypatch):
    """The value-flow analysis is bounded by counting its steps, never by time: past the bound the
    tables are not a fixed point, so nothing resting on them is reported, and one notice says why.
    The same bound on the same input stops at the same step, whatever the machine's load."""
    import logging
    from pathlib import Path

    import fabric_lsp.analysis.flow as flow
    import fabric_lsp.engine as engine

    case = Path(__file__).resolve().parents[1] / "fixtures" / "cases" / "fab001_model_in_other_file" / "main.py"
    text = case.read_text(encoding="utf-8")
    config = Config(root=str(case.parent))
    [normal] = check_source(str(case), text, config)
    assert normal.severity == Severity.ERROR

    engine._programs.clear()  # solve again, under a bound this program exceeds
    monkeypatch.setattr(flow, "STEPS_PER_SCOPE", 0)
    monkeypatch.setattr(flow, "MIN_STEPS", 3)
    with caplog.at_level(logging.INFO, logger="fabric_lsp.engine"):
        bounded = check_source(str(case), text, config)
        engine._programs.clear()
        again = check_source(str(case), text, config)
    engine._programs.clear()
    assert bounded == again == []
    assert "stopped after 3 steps (counted, not timed)" in caplog.text
