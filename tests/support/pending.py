"""Set-ups that `make test` is still installing while the tests already run (issue 36).

`make test` starts pytest as soon as the test venv is ready and installs the two slow set-ups beside it:
the pinned libraries (`.venv-libs`, torch's CUDA build: minutes) and the VS Code tools (code-server, whose
native modules are compiled: minutes). For each it names, in an environment variable, a status file that
the install writes when it ends (its exit status, `0` when it succeeded):

* ``FABRIC_LSP_PENDING_LIBS``: `make libs`
* ``FABRIC_LSP_PENDING_VSCODE``: `make vscode-tools`

A test that needs one calls ``wait_for(...)`` before it looks for the set-up: it returns at once when the
variable is unset (a plain `pytest` run, or `make test` once the install is done) and otherwise waits,
without a time limit of its own (the install has none either), until the status file exists; a failed
install fails the test with the end of the install's log. Nothing is skipped: afterwards the test checks
the set-up exactly as without `make test` (FABRIC_LSP_REQUIRE_LIBS / FABRIC_LSP_REQUIRE_VSCODE).

The other tests run meanwhile; tests/conftest.py orders the collection so that each pytest-xdist worker
reaches the waiting tests only after work that needs neither.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

LIBS = "FABRIC_LSP_PENDING_LIBS"
VSCODE = "FABRIC_LSP_PENDING_VSCODE"
POLL_S = 2.0  # a waiting worker sleeps: it takes no CPU from the install it waits for


def pending(name: str) -> Path | None:
    """The status file of set-up `name` (LIBS or VSCODE) while `make test` is still installing it, else None."""
    status = os.environ.get(name)
    if not status or Path(status).exists():
        return None
    return Path(status)


def wait_for(name: str) -> None:
    """Return once set-up `name` (LIBS or VSCODE) is installed; fail the calling test if its install failed."""
    status = os.environ.get(name)
    if not status:
        return
    path = Path(status)
    while not path.exists():
        time.sleep(POLL_S)
    code = path.read_text().strip()
    if code != "0":
        import pytest

        log = path.with_suffix(".log")
        tail = log.read_text(errors="replace")[-4000:] if log.exists() else "(no log)"
        pytest.fail(f"the install behind {name} failed (exit status {code!r}); {log}:\n{tail}", pytrace=False)
