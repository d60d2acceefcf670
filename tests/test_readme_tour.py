"""The README tour, run exactly as written: every `ctx` line through the CLI (in-process), every
other step (the heredoc that writes events.jsonl) through bash, in an empty directory, and each
step checked against what its comment says it does."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path

from click.testing import CliRunner

from ctxstore.cli.main import cli

from .remotetools import Machine, bare, needs_git
from .test_remote import clone

README = Path(__file__).resolve().parent.parent / "README.md"

#: A Claude Code transcript in the default folder, for the tour's `ctx import`.
CLAUDE_LINES = [
    {"type": "user", "sessionId": "tour-1", "uuid": "u1", "parentUuid": None,
     "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/work",
     "message": {"role": "user", "content": "hello"}},
    {"type": "assistant", "sessionId": "tour-1", "uuid": "a1", "parentUuid": "u1",
     "timestamp": "2026-01-01T00:00:01.000Z",
     "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}},
]


def tour_steps() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## A tour of `ctx`"):]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    steps: list[str] = []
    lines = iter(block.splitlines())
    for line in lines:
        if not line.strip():
            continue
        m = re.search(r"<<'?(\w+)'?", line)
        if m:  # a heredoc: the step runs until its terminator line
            body = [line]
            for more in lines:
                body.append(more)
                if more.strip() == m.group(1):
                    break
            steps.append("\n".join(body))
        else:
            steps.append(line)
    return steps


def test_tour_reads_correctly_step_by_step(tmp_path, monkeypatch):
    home = tmp_path / "home"
    proj = home / ".claude" / "projects" / "-work"
    proj.mkdir(parents=True)
    (proj / "tour-1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in CLAUDE_LINES))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for var in ("CTX_DIR", "CLAUDE_CONFIG_DIR", "CODEX_HOME", "PI_CODING_AGENT_DIR"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(home))
    runner = CliRunner()

    def ctx(*args: str) -> str:
        res = runner.invoke(cli, list(args))
        assert res.exit_code == 0, (args, res.output, res.stderr, res.exception)
        return res.stdout

    def status() -> dict:
        return json.loads(ctx("status", "--json"))

    def tip(branch: str) -> str:
        return json.loads(ctx("branch", "--json"))["branches"][branch]

    steps = tour_steps()
    assert len(steps) >= 20, steps
    seen: dict[str, str] = {}
    for step in steps:
        if not step.startswith("ctx "):
            subprocess.run(["bash", "-c", step], check=True, cwd=work)
            continue
        command = " ".join(shlex.split(step, comments=True))
        before = {"main": tip("main")} if command.startswith("ctx reset") else {}
        res = runner.invoke(cli, shlex.split(step, comments=True)[1:])
        assert res.exit_code == 0, (step, res.stdout, res.stderr, res.exception)
        out = res.stdout
        seen[command] = out
        # what the comment promises
        if command == "ctx log --oneline":
            assert "bash: pytest -x" in out and out.splitlines()[0].split()[1] == "(HEAD"
        elif command == "ctx show HEAD~1":
            assert "ToolCallFinished" in out and "FAILED tests/test_parser.py" in out
            assert "source" not in out.lower()
        elif command.startswith("ctx fork try-b"):
            st = status()
            assert st["branch"] == "try-b"
            assert st["head"] == json.loads(ctx("show", "main~2", "--json"))["id"]
        elif command.startswith("ctx append StateUpdated"):
            assert status()["branch"] == "try-b" and tip("main") != status()["head"]
        elif command == "ctx checkout main":
            assert status()["branch"] == "main"
        elif command == "ctx reset HEAD~1":
            assert status()["branch"] == "main"
            parent = json.loads(ctx("show", f"{before['main']}~1", "--json"))["id"]
            assert tip("main") == parent
            seen["main before reset"] = before["main"]
        elif command == "ctx reset main@{1}":
            assert tip("main") == seen["main before reset"], "main@{1} must undo the reset"
        elif command == "ctx diff main try-b":
            assert "only in try-b (1 event)" in out and "only in main (2 events)" in out
            assert "facts: + the tokenizer splits on spaces" in out
        elif command == "ctx merge try-b":
            assert json.loads(ctx("show", "--json"))["content"]["type"] == "BranchMerged"
        elif command == "ctx grep pytest":
            assert "ToolCallRequested" in out and "pytest -x" in out
        elif command == "ctx import":
            assert out.startswith("Imported 1 file(s)") and "1 session(s)" in out
        elif command.startswith("ctx resume"):  # written where Codex looks: $CODEX_HOME
            assert list((home / ".codex" / "sessions").rglob("rollout-*.jsonl")), out
        elif command == "ctx status":
            assert out.startswith("On branch main of session")
        elif command.startswith("ctx pack"):
            assert (work / "sessions.ctxpack").stat().st_size > 0
        elif command.startswith("ctx fsck"):
            assert "no problems" in out
    assert {"ctx reset HEAD~1", "ctx reset main@{1}", "ctx merge try-b", "ctx import"} <= set(seen)


@needs_git
def test_merge_after_a_diverged_pull_as_pull_advises(tmp_path):
    """Issue 30 item 3: the advice a diverged `ctx pull` prints (`ctx merge
    REMOTE/SESSION/BRANCH`), filled in with the names the same message gives, merges; the
    merge keeps both sides, so the next push is a fast-forward. Failed before: `ctx merge
    origin/<sid>/main` said "no branch ... in this session" (exit 5)."""
    remote = bare(tmp_path / "r.git")
    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", str(remote))
    a("push")
    b = clone(tmp_path, remote)
    a.say(2, "from-a")
    b.say(3, "from-b")
    a("push")
    a_tip, b_tip = a.tip(), b.tip()
    err = b("pull", code=6).stderr
    advice = re.search(r"`ctx (merge) REMOTE/SESSION/BRANCH`", err)
    names = re.search(r"and (origin/[0-9a-f]{12}/main) have diverged", err)
    assert advice and names, err
    # branch, fork --at and reset take the same revision (as log and diff do)
    assert b.json("branch", "theirs", names.group(1))["tip"] == a_tip
    assert b.json("fork", "mine", "--at", "main")["tip"] == b_tip
    assert b.json("reset", names.group(1))["new"] == a_tip
    b("reset", "main")  # back on `mine` ...
    b("checkout", "main")  # ... and on main, still diverged
    out = b(advice.group(1), names.group(1)).stdout
    assert out.startswith("Merge "), out
    merged = b.json("show")
    assert merged["content"]["type"] == "BranchMerged"
    assert merged["content"]["parents"] == [b_tip, a_tip]  # both sides kept
    assert "Fast-forward" not in b("pull").stdout  # nothing diverges any more
    b("push")
    assert a("pull").stdout.count("Fast-forward") == 1 and a.tip() == b.tip()
