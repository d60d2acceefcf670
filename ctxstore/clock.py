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

    `now`; an age (`3d`, `2h`, `90 minutes ago`, `2.weeks.ago` as git writes it); git's
    common words (`yesterday`, `today`, `last week`, `an hour ago`, `last monday`); or an
    ISO-8601 date or time (`2026-02-16`, `2026-02-16T18:47Z`; no offset means UTC).
    Raises InvalidInput naming the accepted forms (and `what`, the option, when given)."""
    now = now or datetime.fromtimestamp(time.time(), UTC)
    t = " ".join(text.strip().lower().replace(".", " ").split())
    if t == "now":
        return now
    if t in ("never", "false"):
        return None
    m = _AGE.fullmatch(t)
    if m and m.group(2) in _UNITS:
        return now - timedelta(seconds=int(m.group(1)) * _UNITS[m.group(2)])
    named = _named_time(t, now)
    if named is not None:
        return named
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise InvalidInput(f"{what + ': ' if what else ''}cannot read time {text!r}: use now, never, an age (3d, 2h, "
                           f"2.weeks.ago, '1 week ago'), yesterday, today, last week, a "
                           f"weekday, or an ISO date or time (2026-02-16, 2026-02-16T18:47Z)"
                           ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _named_time(t: str, now: datetime) -> datetime | None:
    """git's common words for a time (its approxidate), in UTC: `today`/`midnight` (this
    day's start), `yesterday`, `noon`, `last week|month|year`, `a|an UNIT ago`, a weekday
    (`monday`, `last monday`: the start of the latest such day before today)."""
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if t in ("today", "midnight"):
        return day
    if t == "yesterday":
        return day - timedelta(days=1)
    if t == "noon":
        return day + timedelta(hours=12) if now.hour >= 12 else day - timedelta(hours=12)
    words = t.split()
    if len(words) == 2 and words[0] == "last" and words[1] in _UNITS:
        return now - timedelta(seconds=_UNITS[words[1]])
    if len(words) == 3 and words[0] in ("a", "an") and words[2] == "ago":
        unit = words[1][:-1] if words[1].endswith("s") else words[1]
        if unit in _UNITS:
            return now - timedelta(seconds=_UNITS[unit])
    name = words[-1] if words and (len(words) == 1 or words[:-1] == ["last"]) else ""
    if name in _WEEKDAYS:
        back = (now.weekday() - _WEEKDAYS.index(name)) % 7 or 7
        return day - timedelta(days=back)
    return None


def parse_ts(ts: str) -> datetime | None:
    """An event's `ts` as an aware datetime, or None when it is not ISO-8601."""
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)
