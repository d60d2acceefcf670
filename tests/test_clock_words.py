"""`--since`/`--until`/`--expire` take git's common forms (issue 30, item 9)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ctxstore.clock import parse_when
from ctxstore.errors import InvalidInput

NOW = datetime(2026, 12, 5, 10, 30, tzinfo=UTC)  # a Saturday


@pytest.mark.parametrize("text, want", [
    ("yesterday", datetime(2026, 12, 4, tzinfo=UTC)),
    ("today", datetime(2026, 12, 5, tzinfo=UTC)),
    ("2 days ago", datetime(2026, 12, 3, 10, 30, tzinfo=UTC)),
    ("2.days.ago", datetime(2026, 12, 3, 10, 30, tzinfo=UTC)),
    ("last week", datetime(2026, 11, 28, 10, 30, tzinfo=UTC)),
    ("an hour ago", datetime(2026, 12, 5, 9, 30, tzinfo=UTC)),
    ("last monday", datetime(2026, 11, 30, tzinfo=UTC)),
    ("friday", datetime(2026, 12, 4, tzinfo=UTC)),
    ("saturday", datetime(2026, 11, 28, tzinfo=UTC)),  # the latest before today
    ("noon", datetime(2026, 12, 4, 12, tzinfo=UTC)),
    ("3d", datetime(2026, 12, 2, 10, 30, tzinfo=UTC)),
    ("2026-02-16", datetime(2026, 2, 16, tzinfo=UTC)),
    ("2026-02-16 18:47", datetime(2026, 2, 16, 18, 47, tzinfo=UTC)),
])
def test_git_forms(text, want):
    assert parse_when(text, NOW) == want


def test_unknown_words_name_the_forms():
    with pytest.raises(InvalidInput, match="yesterday, today, last week"):
        parse_when("the day after tomorrow", NOW, what="--since")


def test_cli_since_yesterday(tmp_path):
    from .clitools import Ctx

    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    ctx("new", "--title", "t")
    assert ctx.json("log", "--since", "yesterday")  # the new session's events are today's
    assert ctx.json("log", "--until", "2 days ago") == []
