"""Start the fabric-lsp language server from the packages bundled in the extension.

The extension runs `python -I launch.py` (bundled) or `python launch.py` with
FABRIC_LSP_IMPORT_STRATEGY=fromEnvironment (the interpreter's own fabric-lsp, the bundled one
when it has none). Only the standard library may be imported before sys.path is set.
"""

import os
import sys

LIBS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "libs")


def _use_bundled() -> None:
    sys.path.insert(0, LIBS)


def main() -> int:
    if sys.version_info < (3, 10):
        sys.stderr.write(f"fabric-lsp needs Python 3.10 or newer; {sys.executable} is {sys.version.split()[0]}\n")
        return 3
    if os.environ.get("FABRIC_LSP_IMPORT_STRATEGY") == "fromEnvironment":
        try:
            import fabric_lsp  # noqa: F401  (only asks whether the environment has it)

            sys.stderr.write(f"fabric-lsp: using the fabric-lsp installed in {sys.executable}\n")
        except ImportError:
            sys.stderr.write(f"fabric-lsp: {sys.executable} has no fabric-lsp installed; using the bundled one\n")
            _use_bundled()
    else:
        _use_bundled()
    from fabric_lsp.cli import main as cli_main

    return cli_main(["serve"])


if __name__ == "__main__":
    sys.exit(main())
