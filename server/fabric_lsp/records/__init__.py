"""Knowledge base: the records that explain each rule's runtime error, their loader and renderers.

Plain data and text only: nothing here imports torch, Lightning or LSP types.
"""

# The names below load on first use (PEP 562): `fabric_lsp.records.rules_table` is imported by the
# configuration and the language server's start, which must not pay for the loader, the matcher and
# the renderers (issue 29: `initialize` answered before any of them is imported).
_WHERE = {
    "MAX_MESSAGE_CHARS": "loader",
    "MessageMatch": "loader",
    "Record": "loader",
    "RecordPath": "loader",
    "RecordSet": "loader",
    "default_records": "loader",
    "load_records": "loader",
    "pattern_risk": "loader",
    "Explanation": "matching",
    "explain_note": "matching",
    "explain_query": "matching",
    "looks_like_code": "matching",
    "render_markdown": "render",
    "render_text": "render",
    "rule_page": "render",
    "RULES": "rules_table",
    "Rule": "rules_table",
    "rule_by_code": "rules_table",
    "rule_for_record": "rules_table",
}

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fabric_lsp.records.loader import (MAX_MESSAGE_CHARS, MessageMatch, Record, RecordPath, RecordSet,
                                           default_records, load_records, pattern_risk)
    from fabric_lsp.records.matching import Explanation, explain_note, explain_query, looks_like_code
    from fabric_lsp.records.render import render_markdown, render_text, rule_page
    from fabric_lsp.records.rules_table import RULES, Rule, rule_by_code, rule_for_record


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'fabric_lsp.records' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"fabric_lsp.records.{module}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "MAX_MESSAGE_CHARS",
    "Explanation",
    "RULES",
    "MessageMatch",
    "Record",
    "RecordPath",
    "RecordSet",
    "Rule",
    "default_records",
    "explain_note",
    "explain_query",
    "load_records",
    "looks_like_code",
    "pattern_risk",
    "render_markdown",
    "render_text",
    "rule_by_code",
    "rule_for_record",
    "rule_page",
]
