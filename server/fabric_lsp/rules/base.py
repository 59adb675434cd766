"""What every rule shares: severity from a strategy, the Finding constructor, the rule protocol.

Rules turn analysis facts into findings. They hold no LSP types and never talk to jedi.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from fabric_lsp.analysis import FileFacts
from fabric_lsp.analysis.fabric import SINGLE, UNKNOWN, WRAPPING, Strategy
from fabric_lsp.findings import Finding, Severity
from fabric_lsp.records.rules_table import rule_by_code


def severity_for(strategy: Strategy, *, compiled: bool = False, certain: bool = True) -> Severity:
    """Error: certain for the stated strategy; Warning: depends on what the code does not show;
    Hint: the stated strategy cannot raise but the code is not portable."""
    if compiled or strategy.kind == WRAPPING:
        return Severity.ERROR if certain else Severity.WARNING
    if strategy.kind == UNKNOWN:
        return Severity.WARNING
    assert strategy.kind == SINGLE
    return Severity.HINT


def strategy_phrase(strategy: Strategy, compiled: bool = False) -> str:
    if compiled and strategy.kind != WRAPPING:
        return "because the model was torch.compile'd before setup"
    if strategy.kind == WRAPPING:
        return f"under {strategy.description}"
    if strategy.kind == UNKNOWN:
        return f"under a wrapping strategy (this depends on {strategy.description})"
    return (
        f"if the strategy becomes DDP/FSDP (`{strategy.description}` is single-device today, "
        "but `fabric run --strategy` or LT_STRATEGY can change it)"
    )


def record_id(code: str) -> str:
    rule = rule_by_code(code)
    assert rule is not None, code
    return rule.record_id


@dataclass(frozen=True)
class RuleModule:
    code: str
    name: str
    check: Callable[[FileFacts], list[Finding]]
    valid: tuple[str, ...]
    invalid: tuple[str, ...]
