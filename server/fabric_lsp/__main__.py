import os
import sys

# `python -m fabric_lsp` puts the current directory first on sys.path: in an unvetted repository a
# file named like a module imported later (argparse.py, jedi.py, tomllib.py...) would run. Drop it,
# as `python -P` does; the package itself is already imported.
if not sys.flags.safe_path and sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from fabric_lsp.cli import run  # noqa: E402

run()
