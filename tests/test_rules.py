"""Every rule's own VALID and INVALID examples (Fixit-style), run through the real engine."""

from __future__ import annotations

import re

import pytest

from fabric_lsp.settings.config import Config
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


def _alternative_cases():
    for rule in ALL_RULES:
        for index, case in enumerate(rule.alternatives):
            yield pytest.param(rule, case, id=f"{rule.code}-alternative-{index}")


@pytest.mark.parametrize(("rule", "case"), list(_alternative_cases()))
def test_alternative_examples_fix_only_the_checked_file(tmp_path, rule, case):
    """The checked file alone is in bounds: its finding's main fix (in another file) is refused and
    the in-file alternative, applied, gives the expected text (or no fix is offered)."""
    from fabric_lsp.fixes.confinement import FixBounds, confine
    from fabric_lsp.fixes.edits import apply_fixes

    for name, text in case.files:
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / case.checked
    text = path.read_text(encoding="utf-8")
    found = [f for f in _findings_of(tmp_path, path, text) if f.code == rule.code]
    assert {(f.span.start.line, f.code, f.severity.value) for f in found} == _labels(text)
    assert all(f.fix is not None and any(e.path != str(path) for e in f.fix.edits) for f in found), \
        "the main fix edits another file"
    kept, refused = confine(found, FixBounds([str(path)]))
    assert len(refused) == len(found)
    fixes = [f.fix for f in kept if f.fix is not None]
    if case.expected is None:
        assert fixes == []
        return
    assert fixes and all(e.path == str(path) for fix in fixes for e in fix.edits)
    result = apply_fixes(fixes, {str(path): text})
    assert result.texts[str(path)] == case.expected


def _findings_of(root, path, text):
    config = Config(hints=True, root=str(root))
    return check_source(str(path), text, config)
