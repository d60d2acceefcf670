"""`ctx resume` and `ctx export --format HARNESS` through the CLI: where files go, exit codes,
never overwriting, the installed-version check, and export's two behaviours (original lines
for a session from that harness, a conversion otherwise)."""

from __future__ import annotations

import json
import os
import re
import stat

import pytest

from tests.corpus import corpus_root

from .clitools import Ctx

CORPUS = corpus_root()
CLAUDE = CORPUS / "claude-code" / "FIXTURE_claude-code-log_dag-rewind-branch-compact-boundary.jsonl"
CODEX = CORPUS / "codex" / "rollout-genuine-redacted_v0.135.0_exec-smoke_019e9625.jsonl"

pytestmark = pytest.mark.usefixtures("corpus")


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("import", str(CLAUDE))
    c("import", str(CODEX))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no harness binary unless a test adds one
    (tmp_path / "bin").mkdir()
    (tmp_path / "work").mkdir()
    return c


def sid(ctx, fmt: str) -> str:
    return next(s["id"] for s in ctx.json("sessions") if s.get("format") == fmt)


def test_resume_in_codex_writes_under_codex_home_and_prints_the_command(ctx, tmp_path):
    claude_session = sid(ctx, "claude-code")
    res = ctx.json("resume", claude_session[:12], "--in", "codex")
    path = res["path"]
    assert path.startswith(str(tmp_path / "codex" / "sessions")) and os.path.isfile(path)
    assert os.path.basename(path).endswith(f"-{res['report']['session_id']}.jsonl")
    assert res["command"] == f"codex resume {res['report']['session_id']}"
    assert res["written"] and res["report"]["prompts"] == 4  # the main branch's prompts
    assert res["report"]["branches_flattened"] == 1 and res["report"]["compactions"] == 1
    text = ctx("resume", claude_session[:12], "--in", "codex").stdout
    assert text.startswith("already there: ") and "continue with: codex resume " in text


def test_resume_in_claude_code_respects_config_dir_and_cwd(ctx, tmp_path):
    work = str(tmp_path / "work")
    out = ctx("resume", sid(ctx, "codex")[:12], "--in", "claude-code", "--cwd", work).stdout
    project = re.sub(r"[^a-zA-Z0-9]", "-", work)  # Claude Code's project directory name
    assert out.startswith("wrote " + str(tmp_path / "claude" / "projects" / project) + "/")
    assert f"continue with: cd {work} && claude --resume " in out


def test_dry_run_writes_nothing(ctx, tmp_path):
    res = ctx.json("resume", sid(ctx, "claude-code")[:12], "--in", "codex", "--dry-run")
    assert res["dry_run"] and not res["written"] and not os.path.exists(res["path"])
    assert not (tmp_path / "codex").exists()


def test_never_overwrites_a_different_file(ctx, tmp_path):
    res = ctx.json("resume", sid(ctx, "claude-code")[:12], "--in", "codex", "--dry-run")
    os.makedirs(os.path.dirname(res["path"]))
    with open(res["path"], "w") as f:
        f.write("someone else's session\n")
    err = ctx.fails(10, "resume", sid(ctx, "claude-code")[:12], "--in", "codex")
    assert "already exists" in err and "nothing was overwritten" in err
    assert open(res["path"]).read() == "someone else's session\n"


def fake_binary(tmp_path, name: str, version: str) -> None:
    path = tmp_path / "bin" / name
    path.write_text(f"#!/bin/sh\necho '{version}'\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_a_newer_installed_harness_is_refused_unless_forced(ctx, tmp_path):
    fake_binary(tmp_path, "codex", "codex-cli 99.0.0")
    err = ctx.fails(10, "resume", sid(ctx, "claude-code")[:12], "--in", "codex")
    assert "codex 99.0.0 is installed" in err and "0.171.0" in err and "--force" in err
    assert not (tmp_path / "codex").exists()
    res = ctx.json("resume", sid(ctx, "claude-code")[:12], "--in", "codex", "--force")
    assert res["written"] and res["version"] == {"installed": "99.0.0", "verified": "0.171.0",
                                                  "newer": True}


def test_a_verified_installed_version_passes(ctx, tmp_path):
    fake_binary(tmp_path, "claude", "2.1.332 (Claude Code)")
    res = ctx.json("resume", sid(ctx, "codex")[:12], "--in", "claude-code", "--dry-run")
    assert res["version"]["installed"] == "2.1.332" and not res["version"]["newer"]


def test_branch_choice_and_unknown_branch(ctx):
    claude_session = sid(ctx, "claude-code")[:12]
    res = ctx.json("resume", claude_session, "--in", "codex", "--branch", "rewind-b1u", "--dry-run")
    assert res["branch"] == "rewind-b1u" and res["report"]["prompts"] == 2
    err = ctx.fails(3, "resume", claude_session, "--in", "codex", "--branch", "nope")
    assert "no branch 'nope'" in err


def test_bad_harness_and_help(ctx):
    res = ctx("resume", "x", "--in", "vim", code=2)
    assert "Invalid value for '--in'" in res.stderr
    helptext = ctx("resume", "--help").stdout
    assert "Examples:" in helptext and "ctx resume 5cedc1c4 --in codex" in helptext


def test_export_converts_a_foreign_session_and_keeps_source_lines_for_its_own(ctx, tmp_path):
    claude_session = sid(ctx, "claude-code")[:12]
    own = ctx("export", claude_session, "--format", "claude-code").stdout.splitlines()
    original = CLAUDE.read_text().splitlines()
    assert [json.loads(x) for x in own] == [json.loads(x) for x in original]
    out = tmp_path / "as-codex.jsonl"
    ctx("export", claude_session, "--format", "codex", "-o", str(out))
    recs = [json.loads(x) for x in out.read_text().split("\n") if x]
    assert recs[0]["type"] == "session_meta"
    assert recs[0]["payload"]["ctxstoreProvenance"]["session"].startswith(claude_session)
    prompts = [r["payload"]["message"] for r in recs if r["payload"].get("type") == "user_message"]
    assert prompts == ["Start", "Second attempt", "Keep going", "After compaction"]


def test_a_session_made_with_ctx_converts_too(tmp_path, monkeypatch):
    """A native session (ctx demo: events written through ContextManager, no source lines)."""
    c = Ctx(tmp_path)
    c("init", str(tmp_path))
    c("demo")
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex"))
    monkeypatch.setenv("PATH", "/nonexistent")
    res = c.json("resume", "HEAD", "--in", "codex")
    rep = res["report"]
    assert (rep["prompts"], rep["compactions"]) == (1, 1) and rep["tool_calls"] >= 4
    assert rep["tool_calls_mapped"] >= 3 and rep["tool_results"] == rep["tool_calls"]
    recs = [json.loads(x) for x in open(res["path"], encoding="utf-8").read().split("\n") if x]
    assert recs[0]["payload"]["ctxstoreProvenance"]["source_format"] == "ctxstore"


@pytest.mark.parametrize("harness", ["claude-code", "codex", "pi", "gemini"])
def test_resume_into_every_target_through_the_cli(ctx, tmp_path, monkeypatch, harness):
    """Each target the --in choice offers writes its file and prints its command (the Gemini
    target once failed here with a TypeError its own tests did not reach)."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "pi"))
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "gem"))
    res = ctx.json("resume", sid(ctx, "codex")[:12], "--in", harness, "--cwd", str(tmp_path / "work"))
    assert res["written"] and os.path.isfile(res["path"])
    assert str(tmp_path) in res["path"] and res["command"]
    assert res["report"]["prompts"] > 0
