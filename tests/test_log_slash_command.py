"""`ctx log` shows a Claude Code slash command as the user typed it ("/review src"), not the
`<command-name>` markup the harness wraps it in (issue 30 item 8: views rendered the markup;
the viewer and `ctx log` share state/prompts.slash_command)."""

from __future__ import annotations

import json

from tests.clitools import Ctx

MARKUP = ("<command-message>review is running…</command-message>\n"
          "<command-name>/review</command-name>\n<command-args>src  tests</command-args>")


def test_log_shows_the_slash_command_not_its_markup(tmp_path):
    ctx = Ctx(tmp_path)
    ctx("init", str(tmp_path))
    ctx("new", "--title", "t")
    ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", json.dumps({"text": MARKUP}))
    ctx("append", "UserPromptSubmitted", "--actor", "user",
        "--payload", json.dumps({"text": "a <b>plain</b> prompt"}))
    out = ctx("log", "--oneline").stdout
    assert "/review src tests" in out
    assert "<command-" not in out
    assert "a <b>plain</b> prompt" in out  # other text is left as it is
