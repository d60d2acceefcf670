"""Shared test set-up: a derandomised hypothesis profile for CI, isolation from the user's own
store (no test may find a .ctx above its tmp dir or read $CTX_DIR), and the `corpus` fixture
that every real-data test uses (tests/corpus.py: fails under CI=true when the corpus is missing,
skips elsewhere with how to point at one)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

from tests.corpus import corpus_present, in_ci, missing_message, require_corpus

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _isolate_store(monkeypatch, tmp_path):
    monkeypatch.delenv("CTX_DIR", raising=False)
    monkeypatch.delenv("CTX_FAKE_TIME", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def renames(monkeypatch):
    """(source, target) of every os.rename while the test runs: where a file was born
    before it was renamed into place (a pack, a merged pack)."""
    calls = []
    real = os.rename
    monkeypatch.setattr(os, "rename", lambda src, dst: calls.append((src, dst)) or real(src, dst))
    return calls


@pytest.fixture
def corpus():
    """The real-session corpus directory (see tests/corpus.py); mark a module that reads it
    with `pytestmark = pytest.mark.usefixtures("corpus")`."""
    return require_corpus()


def pytest_collection_modifyitems(config, items):
    """Under CI a missing corpus stops the whole run with one line, before any test runs,
    instead of one error per real-data test (outside CI each of them skips with a how-to)."""
    if in_ci() and not corpus_present() and any("corpus" in getattr(i, "fixturenames", ())
                                                       for i in items):
        pytest.exit(missing_message(), returncode=1)
