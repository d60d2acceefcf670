"""A session's title cannot reach into the page head of `ctx view` (issue 35, mutant 5).

The title is data: a session titled `</title><meta http-equiv="refresh" …>` must show as that
text in the tab, not close the <title> element and redirect the page (the CSP stops scripts,
not a meta refresh)."""

from __future__ import annotations

import html
import re

from .clitools import Ctx

HOSTILE = '</title><meta http-equiv="refresh" content="0;url=https://evil.example/">'


def test_a_hostile_session_title_stays_text_in_the_page_head(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init")
    ctx("new", "--title", HOSTILE)
    sid = ctx.json("status")["session"]
    out = tmp_path / "page.html"
    ctx("view", sid[:12], "-o", str(out))
    page = out.read_text(encoding="utf-8")
    head = page[:page.index("</head>")]
    assert 'http-equiv="refresh"' not in head and "evil.example/\">" not in head
    assert len(re.findall(r"<meta\b", head)) == len(re.findall(r"<meta\b", _plain_head(ctx, tmp_path)))
    (title,) = re.findall(r"<title>(.*?)</title>", head, re.S)
    assert html.unescape(title) == f"ctx view: {HOSTILE}"


def _plain_head(ctx, tmp_path) -> str:
    """The head of a page for a session with an ordinary title: the meta tags a page has."""
    ctx("new", "--title", "plain")
    out = tmp_path / "plain.html"
    ctx("view", ctx.json("status")["session"][:12], "-o", str(out))
    page = out.read_text(encoding="utf-8")
    return page[:page.index("</head>")]
