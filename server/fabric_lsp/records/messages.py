"""The `{...}` placeholders of a record's errorMessage (an f-string template copied from Lightning).

An occurrence fills them from a context dict with readable keys ("class", "method", ...); a message
matched by messagePattern gives the context back, because each pattern group captures one placeholder.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_PLACEHOLDER = re.compile(r"\{([^{}]+)\}")
_PARTS = re.compile(r"(?P<expression>.+?)(?:!(?P<conversion>[rsa]))?(?::[^{}]*)?")

# Expression inside a placeholder -> the context key that names its value.
PLACEHOLDER_KEYS: dict[str, str] = {
    "type(self._original_module).__name__": "class",  # FAB001, FAB004
    "name": "method",  # FAB001, FAB004
    "type(module).__name__": "class",  # FAB002
    "type(self).__name__": "class",  # FAB002 under torch FSDP (nn.Module.__getattr__'s AttributeError)
    "', '.join(uninitialized_modules)": "class",  # FAB002 under ModelParallel (the warning's module list)
    "type(method).__name__": "argument_type",  # FAB003
    "function": "function",  # FAB008: what `launch` was given
    "type(self.strategy).__name__": "spawn_strategy",  # FAB008 under a spawning strategy
    "type(self._strategy).__name__": "strategy",  # FAB007 (setup_optimizers under DeepSpeed/XLA)
}

# Known without an occurrence: under a wrapping strategy `wrapped.m` is always a plain function.
# FAB008's spawning strategies are DDPStrategy but for `xla` (XLAStrategy); a finding names its own.
DEFAULT_CONTEXT: dict[str, str] = {"argument_type": "function", "spawn_strategy": "DDPStrategy"}


@dataclass(frozen=True)
class Placeholder:
    text: str  # as written, e.g. "{name!r}"
    expression: str  # "name"
    conversion: str | None  # "r", "s", "a" or None
    key: str  # context key; the expression itself when no readable key is known


def placeholders(template: str) -> list[Placeholder]:
    found = []
    for match in _PLACEHOLDER.finditer(template):
        parts = _PARTS.fullmatch(match.group(1))
        expression = parts.group("expression").strip() if parts else match.group(1).strip()
        conversion = parts.group("conversion") if parts else None
        found.append(Placeholder(match.group(0), expression, conversion, PLACEHOLDER_KEYS.get(expression, expression)))
    return found


def _convert(value: str, conversion: str | None) -> str:
    if conversion == "r":
        return repr(value)
    if conversion == "a":
        return ascii(value)
    return value


def fill_message(template: str, context: Mapping[str, str] | None = None) -> str:
    """The message with known names filled in; unknown ones stay as readable `<key>` placeholders."""
    context = context or {}
    pieces = []
    last = 0
    for match, placeholder in zip(_PLACEHOLDER.finditer(template), placeholders(template), strict=True):
        value = context.get(placeholder.key) or DEFAULT_CONTEXT.get(placeholder.key)
        pieces.append(template[last : match.start()])
        pieces.append(_convert(value if value else f"<{placeholder.key}>", placeholder.conversion))
        last = match.end()
    pieces.append(template[last:])
    return "".join(pieces)


def sample_message(template: str) -> str:
    """The message as Lightning would print it, with every name set to `Sample`."""
    return fill_message(template, {placeholder.key: "Sample" for placeholder in placeholders(template)})


def context_from_groups(template: str, groups: Sequence[str | None]) -> dict[str, str]:
    """Context keys of the template's placeholders, paired in order with the pattern's groups.

    Empty when the counts differ: the pattern's groups cannot then be attributed to placeholders.
    """
    found = placeholders(template)
    if len(found) != len(groups):
        return {}
    context: dict[str, str] = {}
    for placeholder, group in zip(found, groups, strict=True):
        if group is None or placeholder.key in context:
            continue
        value = group
        if placeholder.conversion in ("r", "a"):
            try:
                literal = ast.literal_eval(group)
            except (ValueError, SyntaxError, MemoryError, RecursionError):
                literal = None
            value = literal if isinstance(literal, str) else group.strip("'\"")
        context[placeholder.key] = value
    return context
