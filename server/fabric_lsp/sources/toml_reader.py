"""The TOML reader of settings files (`pyproject.toml`, the user config) and of `requires-python`:
`tomllib` on Python 3.11+, else `tomli` if installed, else None (then settings files are skipped
with a notice). One place, below the settings and the analysis that both read TOML."""

from __future__ import annotations

try:  # Python 3.11+
    import tomllib as toml
except ModuleNotFoundError:  # Python 3.10: tomli if the user has it, else no pyproject settings
    try:
        import tomli as toml  # type: ignore[no-redef]
    except ModuleNotFoundError:
        toml = None  # type: ignore[assignment]
