"""Every rule's own VALID and INVALID examples (Fixit-style), run through the real engine."""

from __future__ import annotations

import re

import pytest

from fabric_lsp.config import Config
from fabric_lsp.engine import check_source
from fabric_lsp.rules import ALL_RULES

_LABEL = re.compile(r"#\s*expect:\s*(FAB\d{3})\s+(error|warning|hint)")


def _labels(text: str) -> set[tuple[int, str, str]]:
    return {
        (number, match.group(1), match.group(2))
        for number, line in enumerate(text.splitlines())
        if (match := _LABEL.search(line))
    }


def _examples(kind: str):
    for rule in ALL_RULES:
        for index, text in enumerate(getattr(rule, kind)):
            yield pytest.param(rule, text, id=f"{rule.code}-{kind}-{index}")


def _findings(tmp_path, text: str):
    path = tmp_path / "example.py"
    path.write_text(text, encoding="utf-8")
    config = Config(hints=True, root=str(tmp_path))
    return check_source(str(path), text, config)


def test_every_rule_has_examples():
    for rule in ALL_RULES:
        assert rule.valid and rule.invalid, rule.code
        assert all(_labels(text) for text in rule.invalid), rule.code


@pytest.mark.parametrize(("rule", "text"), list(_examples("valid")))
def test_valid_examples_have_no_finding(tmp_path, rule, text):
    findings = [f for f in _findings(tmp_path, text) if f.code == rule.code]
    assert findings == []


@pytest.mark.parametrize(("rule", "text"), list(_examples("invalid")))
def test_invalid_examples_report_exactly_their_labels(tmp_path, rule, text):
    found = {(f.span.start.line, f.code, f.severity.value) for f in _findings(tmp_path, text)}
    assert found == _labels(text)
