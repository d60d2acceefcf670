"""Shared test set-up: a derandomised hypothesis profile for CI, and isolation from the user's
own store (no test may find a .ctx above its tmp dir or read $CTX_DIR)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture(autouse=True)
def _isolate_store(monkeypatch, tmp_path):
    monkeypatch.delenv("CTX_DIR", raising=False)
    monkeypatch.delenv("CTX_FAKE_TIME", raising=False)
    monkeypatch.chdir(tmp_path)
