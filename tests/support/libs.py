"""The interpreter with the pinned libraries (requirements/libs.txt: transformers, peft, timm, open_clip,
torchvision, diffusers, sentence-transformers next to torch and Lightning): the repository's `.venv-libs`
(`make libs`), or another interpreter with the same pins named by FABRIC_LSP_LIBS_PYTHON.

Tests that need it call ``require_libs_python()``: it returns the path, or skips the test with the reason,
or fails it when FABRIC_LSP_REQUIRE_LIBS=1 (as `make test` sets), so CI never passes by skipping.
"""

from __future__ import annotations

import os
from pathlib import Path

from support import pending

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBS_PYTHON_ENV = "FABRIC_LSP_LIBS_PYTHON"
REQUIRE_LIBS_ENV = "FABRIC_LSP_REQUIRE_LIBS"


def libs_python() -> str:
    """The path of the libraries' interpreter (it may not exist: see ``missing_reason``)."""
    return os.environ.get(LIBS_PYTHON_ENV) or str(REPO_ROOT / ".venv-libs" / "bin" / "python")


def missing_reason() -> str | None:
    if not os.environ.get(LIBS_PYTHON_ENV):
        pending.wait_for(pending.LIBS)  # `make test` may still be installing .venv-libs
    python = libs_python()
    if Path(python).exists():
        return None
    return f"{python} is missing: run `make libs` to test against the pinned libraries"


def require_libs_python() -> str:
    import pytest

    reason = missing_reason()
    if reason is not None:
        if os.environ.get(REQUIRE_LIBS_ENV) == "1":
            pytest.fail(f"{reason} ({REQUIRE_LIBS_ENV}=1)")
        pytest.skip(reason)
    return libs_python()
