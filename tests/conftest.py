"""Shared pytest configuration. Keep it small; helpers live in ``tests/support/``."""

from __future__ import annotations

import os
import tempfile

import pytest


def pytest_configure(config):
    # Runs fixture programs under real torch/Lightning (seconds each); deselect with -m "not ground_truth".
    config.addinivalue_line("markers", "ground_truth: runs fixtures/cases under real Lightning on the CPU")
    # The developer's own ~/.config/fabric-lsp/config.toml must not change what the tests see; every
    # process the tests start inherits this (a test that needs a user config points it elsewhere).
    if "FABRIC_LSP_USER_CONFIG" not in os.environ:
        os.environ["FABRIC_LSP_USER_CONFIG"] = os.path.join(tempfile.mkdtemp(prefix="fabric-lsp-user-"), "config.toml")
    # Likewise the per-user cache secret (fabric_lsp.cache): the tests' caches are signed with a
    # secret of their own, never the developer's.
    if "FABRIC_LSP_CACHE_SECRET_DIR" not in os.environ:
        os.environ["FABRIC_LSP_CACHE_SECRET_DIR"] = tempfile.mkdtemp(prefix="fabric-lsp-secret-")
    # `check` colours its text output when FORCE_COLOR is set (report/terminal.py): the tests compare
    # plain text, so a developer's or a CI's FORCE_COLOR is not passed on (colour tests set it themselves).
    os.environ.pop("FORCE_COLOR", None)


@pytest.fixture(scope="session")
def precommit_hook(tmp_path_factory):
    """The hook repository made from the working tree, with one PRE_COMMIT_HOME for the session:
    pre-commit builds the hook's environment (20-30 s) once for every test that runs it."""
    from support.precommit import make_hook_repository

    return make_hook_repository(tmp_path_factory.mktemp("pre-commit"))
