"""Timestamps as ctxstore writes them: ISO-8601 UTC with milliseconds and a 'Z'."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime


def now_iso() -> str:
    """Now, or CTX_FAKE_TIME (an ISO string) so demos and tests can be byte-reproducible."""
    fake = os.environ.get("CTX_FAKE_TIME")
    if fake:
        return fake
    t = time.time()
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


def iso_from_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
