"""What every rule shares: severity over the paths that reach a line, the rule protocol.

Rules turn analysis facts into findings. They hold no LSP types and never talk to jedi.
"""

from __future__ import annotations

import dataclasses

from dataclasses import dataclass
from typing import Callable, Iterable

from fabric_lsp.analysis import ProgramFacts, WrappedPath
from fabric_lsp.analysis.values import SINGLE, UNKNOWN_STRATEGY, WRAPPING, Strategy
from fabric_lsp.findings import Finding, Position, Severity
from fabric_lsp.sources.notebook import is_notebook_path, layout_of
from fabric_lsp.records.rules_table import rule_by_code


def path_severity(strategy: Strategy, *, compiled: bool = False) -> Severity:
    """Error: certain for the stated strategy; Warning: depends on what the code does not show;
    Hint: the stated strategy cannot raise but the code is not portable."""
    if compiled or strategy.kind == WRAPPING:
        return Severity.ERROR
    if strategy.kind == UNKNOWN_STRATEGY:
        return Severity.WARNING
    assert strategy.kind == SINGLE
    return Severity.HINT


def compiled_when(path: WrappedPath) -> str:
    """The run-time choice a path's model was compiled under, when only the compile makes it raise (a
    single-device or unknown strategy): "when run with `--compile`"; "" otherwise."""
    compiled = path.compiled
    return compiled if isinstance(compiled, str) and path.strategy.kind != WRAPPING else ""


def under_choice(severity: Severity, when: str | None) -> Severity:
    """A site reached only under a run-time choice (a flag, an environment variable, a config-file value:
    `when` names it) is a warning at most: a choice made at run time is never an error (DESIGN.md, Severity)."""
    return Severity.WARNING if when and severity == Severity.ERROR else severity


def under_choice_finding(finding, when: str | None):
    """The finding as reached only under a run-time choice: a warning at most, with a note naming the choice."""
    if not when or finding is None:
        return finding
    return dataclasses.replace(finding, severity=under_choice(finding.severity, when),
                               notes=tuple(finding.notes) + (f"this runs only {when}",))


def combined_severity(raising: Iterable[Severity], safe_paths: int) -> Severity | None:
    """The severity that holds over every known path reaching a line: all of them raise for certain:
    error; some raise (other classes of a registry, another caller's Fabric) or it depends: warning;
    only single-device paths raise: hint. Paths whose class could not be seen are not counted."""
    raising = list(raising)
    if not raising:
        return None
    if safe_paths == 0 and all(s == Severity.ERROR for s in raising):
        return Severity.ERROR
    if any(s in (Severity.ERROR, Severity.WARNING) for s in raising):
        return Severity.WARNING
    return Severity.HINT


def strategy_phrase(strategy: Strategy, compiled: bool = False) -> str:
    if compiled and strategy.kind != WRAPPING:
        return "because the model was torch.compile'd before setup"
    when = f" {strategy.when}" if strategy.when else ""
    if strategy.kind == WRAPPING:
        return f"under {strategy.description}{when}"
    if strategy.kind == UNKNOWN_STRATEGY:
        return f"under a wrapping strategy (this depends on {strategy.description}{when})"
    return (
        f"if the strategy becomes DDP/FSDP (`{strategy.description}` is single-device today, "
        "but `fabric run --strategy` or LT_STRATEGY can change it)"
    )


def strongest_path(paths: list[WrappedPath]) -> WrappedPath:
    """The path a message describes: the most certain one, then the first in the program."""
    return min(paths, key=lambda p: -path_severity(p.strategy, compiled=p.compiled).rank)


def where(facts: ProgramFacts, path: str, node) -> str:
    """`train.py:41` for a message (relative to the program's root); `nb.ipynb:cell 2:4` in a notebook."""
    import os

    relative = os.path.relpath(path, facts.program.root) if path.startswith(facts.program.root) else path
    line = getattr(node, "lineno", 0)
    if is_notebook_path(path):  # its text is the joined cells: name the cell, as reports do
        source = facts.program.sources.get(path)
        layout = layout_of(source.text) if source is not None else None
        found = layout.to_cell(Position(line - 1, 0)) if layout is not None and line else None
        if found is not None:
            return f"{relative}:cell {found[0].number}:{found[1].line + 1}"
    return f"{relative}:{line}"


def record_id(code: str) -> str:
    rule = rule_by_code(code)
    assert rule is not None, code
    return rule.record_id


@dataclass(frozen=True)
class AlternativeCase:
    """A Fixit-style example of a finding's in-file alternative (fabric_lsp.fixes.confinement): a project
    (`files`: (name, text) pairs), the one file checked (every other file is out of bounds), and what
    that file becomes with its fixes applied, unsafe ones included (None: no fix is offered)."""

    files: tuple[tuple[str, str], ...]
    checked: str
    expected: str | None


@dataclass(frozen=True)
class RuleModule:
    code: str
    name: str
    check: Callable[[ProgramFacts], list[Finding]]
    valid: tuple[str, ...]
    invalid: tuple[str, ...]
    alternatives: tuple[AlternativeCase, ...] = ()
