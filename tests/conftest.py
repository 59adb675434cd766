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
    _units_in_collection_order(config)


@pytest.fixture(scope="session")
def precommit_hook(tmp_path_factory):
    """The hook repository made from the working tree, with one PRE_COMMIT_HOME for the session:
    pre-commit builds the hook's environment (20-30 s) once for every test that runs it."""
    from support.precommit import make_hook_repository

    return make_hook_repository(tmp_path_factory.mktemp("pre-commit"))


# Set-ups that are built once per pytest process and cost many seconds (tests/editors/test_vscode.py's
# .vsix and its workbench sessions, one at a time behind a lock; pre-commit's hook environment; the torch
# tables' regeneration; a built wheel). Under `pytest -n 2 --dist loadgroup` (make test) the tests that use
# one of them go to one worker, so the set-up is made once instead of once per worker, and no worker waits
# on another's workbench lock. Without --dist loadgroup the mark does nothing.
SHARED_SETUPS = {
    "vsix": "vscode-workbench",
    "precommit_hook": "pre-commit-hook",
    ("test_torch_tables.py", "regenerated"): "torch-tables",
    ("test_packaging.py", "wheel"): "packaging-wheel",
    ("test_doc_commands.py", "installed"): "doc-commands-wheel",
}


# The longest work units (a group of SHARED_SETUPS, or one test), longest first: pytest-xdist hands the units
# out in collection order (pytest_configure turns off its reordering by size), so these start at once, each on
# a worker of its own, instead of one of them starting last and running alone at the end. A prefix of a test
# id names every test it starts (the parameters of a test). The VS Code group is first although `make test`
# may still be installing its tools (support/pending.py): its worker waits for them, the others work.
LONGEST_FIRST = [
    "vscode-workbench",
    "tests/test_library_tables.py::test_committed_tables_equal_a_regeneration_which_is_deterministic",
    "tests/test_fork_server.py::test_fork_server_runs_ddp_spawn_like_a_cold_run",
    "tests/robustness/test_robust_mutations.py::test_mutated_fixtures_never_raise_stay_in_budget_and_leave_no_trace",
    "tests/test_incremental.py::test_incremental_trees_equal_whole_file_parses",
    "torch-tables",
]


def _units_in_collection_order(config):
    """Called from pytest_configure: under --dist loadgroup, units go out in the collection order (below)."""
    if getattr(config.option, "dist", "no") == "loadgroup" and hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def _rank(item) -> int:
    marker = item.get_closest_marker("xdist_group")
    group = marker.args[0] if marker and marker.args else marker.kwargs.get("name") if marker else None
    for rank, key in enumerate(LONGEST_FIRST):
        if key == group or item.nodeid.startswith(key):
            return rank
    return len(LONGEST_FIRST)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's hook, which reads the marks into the test ids
def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        for key, group in SHARED_SETUPS.items():
            name = key if isinstance(key, str) else key[1]
            if name in names and (isinstance(key, str) or item.path.name == key[0]):
                item.add_marker(pytest.mark.xdist_group(group))
                break
    items.sort(key=_rank)  # stable: the rest keep their order
