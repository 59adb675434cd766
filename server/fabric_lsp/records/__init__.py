"""Knowledge base: the records that explain each rule's runtime error, their loader and renderers.

Plain data and text only: nothing here imports torch, Lightning or LSP types.
"""

from fabric_lsp.records.loader import (
    MAX_MESSAGE_CHARS,
    MessageMatch,
    Record,
    RecordPath,
    RecordSet,
    default_records,
    load_records,
    pattern_risk,
)
from fabric_lsp.records.matching import Explanation, explain_note, explain_query, looks_like_code
from fabric_lsp.records.render import render_markdown, render_text, rule_page
from fabric_lsp.records.rules_table import RULES, Rule, rule_by_code, rule_for_record

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
