"""Helpers shared by the test modules (see ``support.cases`` for the ground-truth harness)."""
