"""Language-server tests: each test starts `python -m fabric_lsp serve` and drives it with a
pytest-lsp client whose capabilities are those of a real editor (a preset) or a variation of one."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # lspkit, also under xdist

from lspkit import PRESETS  # noqa: E402


@pytest.fixture(params=PRESETS)
def preset(request: pytest.FixtureRequest) -> str:
    return request.param
