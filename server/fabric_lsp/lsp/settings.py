"""Editor settings: `initializationOptions` and the `fabric-lsp` section of `workspace/configuration`.

Both are flat objects with the keys of `[tool.fabric-lsp]` plus two of the server's own (`enable`,
`logLevel`). Keys are accepted in the file's spelling (`extend-records`), snake case or camel case
(`extendRecords`); `showHints` is another name for `hints`. A null or missing value means "not set"
and never overrides a value set elsewhere.

Layers, lowest first: defaults <- `[tool.fabric-lsp]` of the nearest pyproject.toml <-
`initializationOptions` <- `workspace/configuration` (per workspace folder). Each editor layer is
validated on its own, so a bad value in one layer leaves the layers below in force; every bad value
is reported (the server shows one warning per distinct problem) and ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from fabric_lsp.settings.config import parse_settings

LOG_LEVELS = ("error", "warning", "info", "debug")
DEFAULT_LOG_LEVEL = "info"

# Keys an editor puts into the section for itself (VS Code's languageclient: "trace.server").
_EDITOR_KEYS = frozenset({"trace"})
_ALIASES = {"show-hints": "hints"}


def normalize_key(key: str) -> str:
    """`extendRecords`, `extend_records`, `extend-records` -> `extend-records`."""
    kebab = re.sub(r"(?<=[a-z0-9])([A-Z])", r"-\1", str(key)).replace("_", "-").lower()
    return _ALIASES.get(kebab, kebab)


@dataclass(frozen=True)
class EditorSettings:
    """One scope's settings from the editor (a workspace folder, or the global scope)."""

    enable: bool = True
    log_level: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict)  # Config fields, validated
    problems: tuple[str, ...] = ()


def _expand(value: Any, folder: str | None) -> Any:
    """`${workspaceFolder}` (VS Code's spelling, often copied into other editors) -> the folder."""
    if isinstance(value, str) and folder:
        return value.replace("${workspaceFolder}", folder)
    if isinstance(value, list):
        return [_expand(item, folder) for item in value]
    return value


def _parse_layer(raw: Any, folder: str | None, source: str) -> tuple[dict[str, Any], list[str]]:
    """One layer -> (normalized key -> value for the server's keys and Config fields, problems)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"fabric-lsp: config: {source}: expected an object of settings, got {type(raw).__name__}; ignored"]
    server_values: dict[str, Any] = {}
    config_table: dict[str, Any] = {}
    problems: list[str] = []
    for raw_key, value in raw.items():
        key = normalize_key(raw_key)
        if key in _EDITOR_KEYS or value is None:
            continue
        if key == "enable":
            if isinstance(value, bool):
                server_values["enable"] = value
            else:
                problems.append(
                    f"fabric-lsp: config: {source}: enable: expected true or false, got {value!r}; not overriding"
                )
        elif key == "log-level":
            if isinstance(value, str) and value.lower() in LOG_LEVELS:
                server_values["log-level"] = value.lower()
            else:
                problems.append(
                    f"fabric-lsp: config: {source}: logLevel: expected one of {', '.join(LOG_LEVELS)}, "
                    f"got {value!r}; not overriding"
                )
        else:
            config_table[key] = _expand(value, folder)
    base = Path(folder) if folder else Path(os.getcwd())
    fields, config_problems = parse_settings(config_table, base, source, "not overriding")
    if "python" in fields:
        # As `check --python`: one that cannot tell its sys.path is said once and not used.
        from fabric_lsp.analysis.workspace import interpreter_problem

        problem = interpreter_problem(fields["python"])
        if problem is not None:
            config_problems.append(
                f"fabric-lsp: config: {source}: python: {fields.pop('python')}: {problem}; not overriding")
    server_values.update({f"field:{name}": value for name, value in fields.items()})
    return server_values, problems + config_problems


def editor_settings(
    initialization_options: Any, configuration: Any, folder: str | None, folder_label: str | None = None
) -> EditorSettings:
    """The settings of one scope. Relative paths are relative to `folder` (else the current directory)."""
    scope = f" ({folder_label})" if folder_label else ""
    merged: dict[str, Any] = {}
    problems: list[str] = []
    for raw, source in (
        (initialization_options, "initializationOptions"),
        (configuration, f"workspace/configuration{scope}"),
    ):
        values, layer_problems = _parse_layer(raw, folder, source)
        merged.update(values)
        problems.extend(layer_problems)
    fields = {key[len("field:") :]: value for key, value in merged.items() if key.startswith("field:")}
    return EditorSettings(
        enable=merged.get("enable", True),
        log_level=merged.get("log-level"),
        fields=fields,
        problems=tuple(problems),
    )
