"""`--since` / `--until` values: git's forms of a point in time, as `ctx log` and `ctx search`
read them (ctxstore/clock.py parses; a bad value is a usage error naming the option)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from datetime import datetime


def point_in_time(text: str | None, option: str) -> datetime | None:
    """The time TEXT given to OPTION names, None when the option was not given."""
    if text is None:
        return None
    from ctxstore.clock import parse_when

    when = parse_when(text, what=option)
    if when is None:
        raise click.BadParameter("'never' is no point in time", param_hint=option)
    return when
