"""`ctx hooks install` writes async capture hooks, a project file with no path of this
machine, this interpreter only into settings.local.json / user settings; `ctx hooks doctor`
runs the command each file names and fails, with the fix, when it does not run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from click.testing import CliRunner

from ctxstore.cli.main import cli
from ctxstore.integrations.claude_code import settings


def _install(*args: str, code: int = 0, env: dict | None = None):
    r = CliRunner().invoke(cli, ["hooks", "install", "claude-code", *args], env=env)
    assert r.exit_code == code, r.output
    return r


def _ours(path: Path) -> dict[str, dict]:
    found = settings.installed(path)
    assert all(len(v) == 1 for v in found.values())
    return {event: hooks[0] for event, hooks in found.items()}


def _doctor(proj: Path, code: int, env: dict | None = None) -> dict:
    r = CliRunner().invoke(cli, ["hooks", "doctor", "--dir", str(proj), "--json"],
                           env={"CLAUDE_CONFIG_DIR": str(proj / "no-user-settings"), **(env or {})})
    assert r.exit_code == code, r.output
    return json.loads(r.stdout)


def test_capture_hooks_are_async_and_session_end_is_not(tmp_path):
    _install("--local", "--dir", str(tmp_path))
    hooks = _ours(tmp_path / ".claude" / "settings.local.json")
    assert set(hooks) == set(settings.EVENTS)
    assert {e for e, h in hooks.items() if h.get("async") is True} == \
        set(settings.EVENTS) - {"SessionEnd"}
    assert "async" not in hooks["SessionEnd"]


def test_an_older_synchronous_entry_is_replaced(tmp_path):
    path = tmp_path / ".claude" / "settings.local.json"
    command, _ = settings.hook_command(scope="local")
    path.parent.mkdir()
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": [
        {"type": "command", "command": command, "timeout": 30}]}]}}))
    r = _install("--local", "--dir", str(tmp_path), "--json")
    assert "Stop" in json.loads(r.output)["added"]
    assert _ours(path)["Stop"]["async"] is True
    assert "already installed" in _install("--local", "--dir", str(tmp_path)).output


def test_project_settings_name_no_path_of_this_machine(tmp_path):
    """The file a team commits runs `ctx` from PATH; with no ctx on PATH, `python3 -m
    ctxstore.cli` and a note; never this interpreter or this store."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "ctx").write_text("#!/bin/sh\n")
    (bindir / "ctx").chmod(0o755)
    proj = tmp_path / "proj"
    r = _install("--dir", str(proj), "--json", env={"PATH": str(bindir)})
    assert json.loads(r.output)["note"] == ""
    text = (proj / ".claude" / "settings.json").read_text()
    assert sys.executable not in text and str(tmp_path) not in text
    assert {h["command"] for h in _ours(proj / ".claude" / "settings.json").values()} == \
        {"ctx hook claude-code"}
    r = _install("--dir", str(proj), env={"PATH": str(tmp_path / "empty")})
    assert "Note: `ctx` is not on this PATH" in r.output and "--local" in r.output
    assert {h["command"] for h in _ours(proj / ".claude" / "settings.json").values()} == \
        {"python3 -m ctxstore.cli hook claude-code"}
    r = _install("--dir", str(proj), "--pin-store", code=10)
    assert "--pin-store is for --local and --user" in r.output
    _install("--local", "--dir", str(proj))
    local = {h["command"] for h in _ours(proj / ".claude" / "settings.local.json").values()}
    assert local == {f"{sys.executable} -m ctxstore.cli hook claude-code"}


def test_doctor_runs_the_installed_commands(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    report = _doctor(proj, 0)
    assert report == {**report, "ok": True, "installed": False, "files": []}
    _install("--local", "--dir", str(proj))
    report = _doctor(proj, 0)
    [f] = report["files"]
    assert f["scope"] == "local" and f["missing_events"] == [] and \
        f["synchronous_events"] == []
    assert [c["runs"] for c in f["commands"]] == [True]
    assert f["commands"][0]["detail"].startswith("ctx, version")


def test_doctor_fails_with_the_fix_when_a_command_does_not_run(tmp_path):
    """A moved interpreter in the user file and a `ctx` missing from PATH in the project
    file: exit 1, each named with its fix; the project file's path of this machine is
    reported too. Text output says the same."""
    proj = tmp_path / "proj"
    user = tmp_path / "user"
    gone = f"{tmp_path}/gone-venv/bin/python -m ctxstore.cli hook claude-code"
    settings.install(user / "settings.json", gone)
    settings.install(proj / ".claude" / "settings.json", "ctx hook claude-code")
    env = {"CLAUDE_CONFIG_DIR": str(user), "PATH": f"{tmp_path / 'empty'}:/usr/bin:/bin"}
    report = _doctor(proj, 1, env)
    assert not report["ok"]
    by_scope = {f["scope"]: f for f in report["files"]}
    [u] = by_scope["user"]["commands"]
    assert not u["runs"] and "install again" in u["fix"] and "--user" in u["fix"]
    [p] = by_scope["project"]["commands"]
    assert not p["runs"] and "PATH" in p["fix"] and "--local" in p["fix"]
    assert by_scope["project"]["machine_paths"] == []
    settings.install(proj / ".claude" / "settings.json", gone)
    report = _doctor(proj, 1, env)
    assert [f["machine_paths"] for f in report["files"] if f["scope"] == "project"] == [[gone]]
    r = CliRunner().invoke(cli, ["hooks", "doctor", "--dir", str(proj)], env=env)
    assert r.exit_code == 1
    assert "FAIL" in r.stdout and "fix:" in r.stdout and "path of this machine" in r.stdout
    assert r.stderr.startswith("ctx: error: 1 hook command(s)") or \
        r.stderr.startswith("ctx: error: 2 hook command(s)")
    assert os.path.exists(proj / ".claude" / "settings.json")
