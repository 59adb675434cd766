"""Shared pytest configuration. Keep it small; helpers live in ``tests/support/``."""

from __future__ import annotations


def pytest_configure(config):
    # Runs fixture programs under real torch/Lightning (seconds each); deselect with -m "not ground_truth".
    config.addinivalue_line("markers", "ground_truth: runs fixtures/cases under real Lightning on the CPU")
