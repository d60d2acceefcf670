"""Colour and pager rules (cli/output.py), as git applies them: colour only on a terminal unless
--color says otherwise, NO_COLOR honoured; a pager only when stdout is a terminal and
--no-pager was not given, chosen from CTX_PAGER, PAGER, else less with LESS=FRX."""

from __future__ import annotations

import pytest

from ctxstore.cli import output

from .clitools import Ctx

ANSI = "\x1b["


@pytest.fixture
def ctx(tmp_path):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("new", "--title", "colours")
    c("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "hello"}')
    return c


def test_no_colour_when_not_a_terminal(ctx):
    assert ANSI not in ctx("log", "--oneline").stdout


def test_color_always_colours_even_into_a_pipe(ctx, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")  # an explicit --color always wins over NO_COLOR
    out = ctx("--color", "always", "log", "--oneline").stdout
    assert ANSI in out and "UserPromptSubmitted" in out


def test_no_color_env_and_never_on_a_terminal(ctx, monkeypatch):
    monkeypatch.setattr(output, "stdout_isatty", lambda: True)
    monkeypatch.setenv("CTX_PAGER", "")  # no pager: this test is about colour
    assert ANSI in ctx("log", "--oneline").stdout  # a terminal: colour by default
    monkeypatch.setenv("NO_COLOR", "1")
    assert ANSI not in ctx("log", "--oneline").stdout
    monkeypatch.delenv("NO_COLOR")
    assert ANSI not in ctx("--color", "never", "log", "--oneline").stdout


def test_color_rule_table():
    assert output.color_wanted("auto", True, {}) is True
    assert output.color_wanted("auto", False, {}) is False
    assert output.color_wanted("auto", True, {"NO_COLOR": "1"}) is False
    assert output.color_wanted("auto", True, {"NO_COLOR": ""}) is True  # empty = unset (spec)
    assert output.color_wanted("always", False, {"NO_COLOR": "1"}) is True
    assert output.color_wanted("never", True, {}) is False


def test_pager_choice():
    assert output.pager_command({"CTX_PAGER": "most", "PAGER": "more"}) == "most"
    assert output.pager_command({"PAGER": "more"}) == "more"
    assert output.pager_command({"PAGER": "cat"}) is None
    assert output.pager_command({"CTX_PAGER": "", "PAGER": "more"}) is None
    assert output.pager_command({}) in ("less", None)  # less when installed


def test_no_pager_when_not_a_terminal(ctx, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    monkeypatch.setenv("CTX_PAGER", f"cat > {paged}")
    out = ctx("log").stdout
    assert "UserPromptSubmitted" in out and not paged.exists()


def test_pager_on_a_terminal_gets_the_output_in_colour(ctx, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    monkeypatch.setattr(output, "stdout_isatty", lambda: True)
    monkeypatch.setenv("CTX_PAGER", f"cat > {paged}; echo LESS=$LESS >> {paged}")
    monkeypatch.delenv("LESS", raising=False)
    res = ctx("log", "--oneline")
    assert "UserPromptSubmitted" not in res.stdout  # it went to the pager
    text = paged.read_text()
    assert "UserPromptSubmitted" in text and ANSI in text and "LESS=FRX" in text


def test_no_pager_option(ctx, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    monkeypatch.setattr(output, "stdout_isatty", lambda: True)
    monkeypatch.setenv("CTX_PAGER", f"cat > {paged}")
    out = ctx("--no-pager", "show").stdout
    assert "UserPromptSubmitted" in out and not paged.exists()


def test_pager_quitting_early_is_not_an_error(ctx, tmp_path, monkeypatch):
    monkeypatch.setattr(output, "stdout_isatty", lambda: True)
    monkeypatch.setenv("CTX_PAGER", "head -c 1 >/dev/null")  # reads one byte, then exits
    for _ in range(300):
        ctx("append", "UserPromptSubmitted", "--actor", "user", "--payload", '{"text": "x"}')
    res = ctx("log")
    assert res.exit_code == 0 and "Traceback" not in res.stderr


def test_json_is_never_paged(ctx, tmp_path, monkeypatch):
    paged = tmp_path / "paged.txt"
    monkeypatch.setattr(output, "stdout_isatty", lambda: True)
    monkeypatch.setenv("CTX_PAGER", f"cat > {paged}")
    assert ctx.json("log")[0]["type"] == "UserPromptSubmitted"
    assert not paged.exists()
