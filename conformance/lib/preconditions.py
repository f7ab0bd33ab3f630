"""Preconditions of the pytest-based conformance suites.

A suite's pytest.ini puts this folder on sys.path (`pythonpath = ../lib`).
A test whose precondition is missing skips on a developer's machine but
fails under CI=true, so that a CI run never passes by skipping what it was
meant to run (the Go tests do the same: internal/testenv).
"""
import os

import pytest


def ci() -> bool:
    """Whether the tests run in CI (CI=true or CI=1, as CI services set it)."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1")


def missing(reason: str) -> None:
    """Stop the current test for a missing precondition: fail under CI, else skip."""
    if ci():
        pytest.fail(f"precondition missing (CI=true, so this fails instead of skipping): {reason}")
    pytest.skip(f"precondition missing: {reason}")
