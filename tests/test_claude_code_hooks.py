"""Claude Code hooks: settings.json merged and unmerged exactly; `ctx hook claude-code` driven
by recorded hook JSON against a transcript that grows line by line (a half-written last line
included) gives what `ctx import` gives, also after the transcript is rewritten; a hook never
fails the agent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from ctxstore.cli.main import cli
from ctxstore.importers import import_paths
from ctxstore.integrations.claude_code import settings
from ctxstore.repo import Repository
from tests.corpus import require_corpus

EVENTS = ["SessionStart", "UserPromptSubmit", "PostToolUse", "PostToolUse", "Stop"]


def _branches(repo: Repository) -> dict:
    return {sid: repo.branches(sid) for sid in repo.session_ids()}


def test_install_merges_and_uninstall_removes_exactly_ours(tmp_path):
    proj = tmp_path / "proj"
    theirs = {"model": "opus", "hooks": {
        "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}],
        "Notification": [{"hooks": [{"type": "command", "command": "say hi"}]}]}}
    path = proj / ".claude" / "settings.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(theirs))
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--dir", str(proj), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(path.read_text())
    assert got["model"] == "opus"
    for event in settings.EVENTS:
        cmds = [h["command"] for g in got["hooks"][event] for h in g["hooks"]]
        assert sum(settings.is_ours({"command": c}) for c in cmds) == 1, event
    assert got["hooks"]["PostToolUse"][0] == theirs["hooks"]["PostToolUse"][0]
    assert got["hooks"]["Notification"] == theirs["hooks"]["Notification"]
    before = path.read_bytes()
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--dir", str(proj)])
    assert r.exit_code == 0 and "already installed" in r.output
    assert path.read_bytes() == before
    r = CliRunner().invoke(cli, ["hooks", "uninstall", "claude-code", "--dir", str(proj)])
    assert r.exit_code == 0, r.output
    assert json.loads(path.read_text()) == theirs
    r = CliRunner().invoke(cli, ["hooks", "uninstall", "claude-code", "--dir", str(proj)])
    assert r.exit_code == 0 and "No claude-code hook" in r.output


def test_install_user_scope_honours_claude_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cfg"))
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--user"])
    assert r.exit_code == 0, r.output
    assert set(json.loads((tmp_path / "cfg" / "settings.json").read_text())["hooks"]) == \
        set(settings.EVENTS)


def test_bad_settings_file_is_refused_and_left_alone(tmp_path):
    path = tmp_path / ".claude" / "settings.json"
    path.parent.mkdir()
    path.write_text("{not json")
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--dir", str(tmp_path)])
    assert r.exit_code == 10 and "settings.json:1" in r.output
    assert path.read_text() == "{not json"


def _hook(store: Path, data: dict) -> dict:
    r = CliRunner().invoke(cli, ["--store", str(store), "hook", "claude-code", "--json"],
                           input=json.dumps(data))
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def _reference(tmp: Path, files: list[tuple[str, bytes]]) -> dict:
    """Branches after `ctx import` of each version of the transcript in turn."""
    if tmp.exists():
        shutil.rmtree(tmp)
    repo = Repository.init(tmp)
    for name, data in files:
        (tmp / name).write_bytes(data)
        import_paths(repo, [tmp / name], format="claude-code")
    out = _branches(repo)
    repo.close()
    return out


def test_hook_follows_a_growing_transcript_line_by_line(tmp_path):
    root = require_corpus()
    src = root / "claude-code" / "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    store = tmp_path / "store"
    Repository.init(store).close()
    work = tmp_path / "proj"
    work.mkdir()
    transcript = work / src.name
    transcript.write_bytes(b"")
    data = {"session_id": "s", "transcript_path": str(transcript), "cwd": str(work)}
    for i, line in enumerate(lines):
        with open(transcript, "ab") as fh:
            fh.write(line[: len(line) // 2])  # Claude Code is half-way through a line
        if i % 7 == 3:
            assert _hook(store / ".ctx", {**data, "hook_event_name": "PostToolUse"})
        with open(transcript, "ab") as fh:
            fh.write(line[len(line) // 2:])
        out = _hook(store / ".ctx", {**data, "hook_event_name": EVENTS[i % len(EVENTS)]})
        assert out["captured"][0]["lines"] == 1
        if i % 10 == 9 or i == len(lines) - 1:
            repo = Repository.open(store / ".ctx")
            want = _reference(tmp_path / "ref", [(src.name, b"".join(lines[:i + 1]))])
            assert _branches(repo) == want, f"after line {i + 1}"
            repo.close()
    # nothing new: nothing done
    assert _hook(store / ".ctx", {**data, "hook_event_name": "Stop"})["captured"][0]["lines"] == 0


def test_hook_handles_a_rewritten_transcript(tmp_path):
    root = require_corpus()
    src = root / "claude-code" / "ccl_sample_many-summary-records_v1.0.24.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    store = tmp_path / "store"
    Repository.init(store).close()
    transcript = tmp_path / src.name
    first = b"".join(lines[:80])
    transcript.write_bytes(first)
    data = {"transcript_path": str(transcript), "cwd": str(tmp_path), "hook_event_name": "Stop"}
    _hook(store / ".ctx", data)
    # rewritten in place: a line in the middle changed, then more lines (not a prefix)
    edited = list(lines)
    rec = json.loads(edited[40])
    rec["rewritten"] = True
    edited[40] = (json.dumps(rec) + "\n").encode()
    second = b"".join(edited)
    transcript.write_bytes(second)
    out = _hook(store / ".ctx", data)
    assert out["captured"][0]["rewritten"] is True
    repo = Repository.open(store / ".ctx")
    assert _branches(repo) == _reference(tmp_path / "ref", [(src.name, first), (src.name, second)])
    repo.close()
    # shorter than what was imported: also a rewrite
    transcript.write_bytes(b"".join(lines[:10]))
    assert _hook(store / ".ctx", data)["captured"][0]["rewritten"] is True


def test_a_hook_never_fails_the_agent(tmp_path):
    store = tmp_path / "store"
    Repository.init(store).close()
    r = CliRunner().invoke(cli, ["--store", str(store / ".ctx"), "hook", "claude-code"],
                           input="{this is not json")
    assert r.exit_code == 0 and r.output == ""
    log = (store / ".ctx" / "hooks.log").read_text()
    assert "error: JSONDecodeError" in log
    bad = tmp_path / "t.jsonl"
    bad.write_text('{"type": "user", "uuid": "u1"\n{"type": "x"}\n')
    out = _hook(store / ".ctx", {"transcript_path": str(bad), "cwd": str(tmp_path)})
    assert out["captured"][0]["lines"] == 2
    assert "malformed JSON" in (store / ".ctx" / "hooks.log").read_text()
    # no store anywhere: still exit 0, one line on stderr
    r = CliRunner().invoke(cli, ["hook", "claude-code"],
                           input=json.dumps({"transcript_path": str(bad), "cwd": "/"}),
                           env={"CTX_DIR": ""})
    assert r.exit_code == 0


def test_hook_snapshots_the_project_onto_the_workspace_branch(tmp_path, monkeypatch):
    """With hook_snapshots asked for, a PostToolUse of a file-writing tool snapshots the cwd
    onto the session's `workspace` branch, main stays exactly what `ctx import` gives, an
    unchanged tree records nothing, and `ctx restore` brings an earlier version back."""
    root = require_corpus()
    src = root / "claude-code" / "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    store = tmp_path / "store"
    Repository.init(store).close()
    monkeypatch.setenv("CTX_HOOK_SNAPSHOTS", "1")
    work = tmp_path / "proj"
    work.mkdir()
    transcript = tmp_path / src.name
    transcript.write_bytes(b"".join(lines[:10]))
    data = {"transcript_path": str(transcript), "cwd": str(work),
            "hook_event_name": "PostToolUse"}
    (work / "parser.py").write_text("v1\n")
    out = _hook(store / ".ctx", {**data, "tool_name": "Read"})
    assert "snapshot" not in out or not out["snapshot"]  # a read writes nothing
    out = _hook(store / ".ctx", {**data, "tool_name": "Write"})
    assert "on workspace" in out["snapshot"]
    first = out["snapshot"].split()[1]
    sid = out["captured"][0]["session"]
    repo = Repository.open(store / ".ctx")
    assert set(repo.branches(sid)) >= {"main", "workspace"}
    main1 = repo.branches(sid)["main"]
    ev = repo.graph.event(repo.branches(sid)["workspace"])
    assert ev.type == "WorkspaceSnapshot" and list(ev.parents) == [main1]
    repo.close()
    # unchanged files: nothing recorded
    assert not _hook(store / ".ctx", {**data, "tool_name": "Bash"}).get("snapshot")
    # the transcript grows, a file changes: the next snapshot follows the first
    transcript.write_bytes(b"".join(lines[:20]))
    (work / "parser.py").write_text("v2\n")
    out = _hook(store / ".ctx", {**data, "tool_name": "Edit"})
    assert out["captured"][0]["lines"] == 10 and "~1" in out["snapshot"]
    repo = Repository.open(store / ".ctx")
    tips = repo.branches(sid)
    ev = repo.graph.event(tips["workspace"])
    assert ev.parents[0].startswith(first) and ev.parents[1] == tips["main"] != main1
    want = _reference(tmp_path / "ref", [(src.name, b"".join(lines[:20]))])
    assert {s: {b: t for b, t in br.items() if b != "workspace"}
            for s, br in _branches(repo).items()} == want
    repo.close()
    # the first version comes back
    r = CliRunner().invoke(cli, ["--store", str(store / ".ctx"), "restore", first,
                                 "--root", str(work)])
    assert r.exit_code == 0, r.output
    assert (work / "parser.py").read_text() == "v1\n"
    # the restore recorded its before/after snapshots on workspace, not on the transcript's main
    repo = Repository.open(store / ".ctx")
    after = repo.branches(sid)
    assert after["main"] == tips["main"] and after["workspace"] != tips["workspace"]
    assert repo.graph.event(after["workspace"]).type == "WorkspaceSnapshot"
    repo.close()
    transcript.write_bytes(b"".join(lines[:25]))
    out = _hook(store / ".ctx", {**data, "tool_name": "Read"})
    assert out["captured"][0]["lines"] == 5 and not out["captured"][0]["replayed"]


def test_install_with_snapshots_makes_the_installed_command_snapshot(tmp_path):
    """`--snapshots` puts CTX_HOOK_SNAPSHOTS=1 into the command; run as Claude Code runs it
    (through the shell, hook JSON on stdin), it snapshots the project; installing again
    without the flag replaces ctx's entries instead of adding a second set."""
    import subprocess

    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    proj = tmp_path / "proj"
    proj.mkdir()
    Repository.init(proj).close()
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--local", "--dir", str(proj),
                                 "--snapshots"])
    assert r.exit_code == 0, r.output
    path = proj / ".claude" / "settings.local.json"  # this machine's interpreter: --local
    post = json.loads(path.read_text())["hooks"]["PostToolUse"]
    command = post[-1]["hooks"][0]["command"]
    assert command.startswith("CTX_HOOK_SNAPSHOTS=1 ") and settings.is_ours({"command": command})
    assert "async" not in post[-1]["hooks"][0]  # the snapshot is of the files that tool left
    transcript = tmp_path / src.name
    transcript.write_bytes(b"".join(src.read_bytes().splitlines(keepends=True)[:10]))
    (proj / "a.py").write_text("x = 1\n")
    data = {"hook_event_name": "PostToolUse", "tool_name": "Write", "cwd": str(proj),
            "transcript_path": str(transcript)}
    out = subprocess.run(["sh", "-c", command], input=json.dumps(data), text=True,
                         capture_output=True, cwd=proj, timeout=120)
    assert out.returncode == 0, out.stderr
    log = (proj / ".ctx" / "hooks.log").read_text()
    assert "on workspace: +2" in log  # a.py and .claude/settings.local.json
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", "--local", "--dir", str(proj)])
    assert r.exit_code == 0, r.output
    post = json.loads(path.read_text())["hooks"]["PostToolUse"]
    ours = [h for g in post for h in g["hooks"] if settings.is_ours(h)]
    assert len(ours) == 1 and not ours[0]["command"].startswith("CTX_HOOK_SNAPSHOTS")
    assert ours[0]["async"] is True
