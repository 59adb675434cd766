"""fabric-lsp: finds Lightning Fabric runtime errors while the code is typed.

The Python API (fabric_lsp.api, imported on first use so that `import fabric_lsp` stays cheap):

    fabric_lsp.check_paths(paths, *, select=None, ignore=None, python=None, hints=False, config=None)
    fabric_lsp.check_source(source, path="untitled.py", *, select=None, ...)

both return the findings as plain data, in the shape of `fabric-lsp check --output-format json`
(the TypedDict `fabric_lsp.Finding`).
"""

__all__ = [
    "CheckError",
    "Edit",
    "Finding",
    "Fix",
    "Location",
    "Related",
    "__version__",
    "check_paths",
    "check_source",
]
_API = frozenset(__all__) - {"__version__"}

TYPE_CHECKING = False  # not `typing.TYPE_CHECKING`: importing typing costs more than this module
if TYPE_CHECKING:  # for type checkers and IDEs; at run time these load on first use (__getattr__)
    from typing import Any

    from fabric_lsp.version import __version__
    from fabric_lsp.api import CheckError, Edit, Finding, Fix, Location, Related, check_paths, check_source


def __getattr__(name: str) -> "Any":
    if name == "__version__":  # in version.py, which every layer may import; loaded on first use here too
        from fabric_lsp.version import __version__

        globals()[name] = __version__
        return __version__
    if name in _API:
        from fabric_lsp import api

        value = getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'fabric_lsp' has no attribute {name!r}")


def __dir__() -> "list[str]":
    return sorted(set(globals()) | set(__all__))
