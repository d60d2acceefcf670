"""Timestamps as ctxstore writes them: ISO-8601 UTC with milliseconds and a 'Z'."""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime, timedelta

from .errors import InvalidInput


def now_iso() -> str:
    """Now, or CTX_FAKE_TIME (an ISO string) so demos and tests can be byte-reproducible."""
    fake = os.environ.get("CTX_FAKE_TIME")
    if fake:
        return fake
    t = time.time()
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{int(t * 1000) % 1000:03d}Z"


def iso_from_ms(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


_AGE = re.compile(r"(\d+)[. ]?\s*([a-z]+?)s?(?:[. ]\s*ago)?")
_UNITS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600,
          "hour": 3600, "d": 86400, "day": 86400, "w": 604800, "week": 604800,
          "month": 30 * 86400, "year": 365 * 86400}


def parse_when(text: str, now: datetime | None = None, what: str = "") -> datetime | None:
    """A point in time as `--since`, `--until`, `--prune` and `--expire` take it, as an aware
    UTC datetime; None for `never`.

    `now`; an age (`3d`, `2h`, `90 minutes ago`, `2.weeks.ago` as git writes it); or an
    ISO-8601 date or time (`2026-02-16`, `2026-02-16T18:47Z`; no offset means UTC).
    Raises InvalidInput naming the accepted forms (and `what`, the option, when given)."""
    now = now or datetime.fromtimestamp(time.time(), UTC)
    t = text.strip().lower()
    if t == "now":
        return now
    if t in ("never", "false"):
        return None
    m = _AGE.fullmatch(t)
    if m and m.group(2) in _UNITS:
        return now - timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{what + ': ' if what else ''}cannot read time {text!r}: use now, never, an age (3d, 2h, "
                           f"2.weeks.ago, '1 week ago') or an ISO date or time "
                           f"(2026-02-16, 2026-02-16T18:47Z)") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def parse_ts(ts: str) -> datetime | None:
    """An event's `ts` as an aware datetime, or None when it is not ISO-8601."""
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
