"""The package's version (pyproject.toml's), importable from every layer without loading the API."""

__version__ = "0.1.0"
