"""Async Claude Code hooks: concurrent firings as real processes on one growing transcript
(subagent files arriving before their spawning call) give exactly what `ctx import` gives;
a call with nothing new is answered from a stat without loading the store; SessionStart
catches up the project's history folder; a half-written last line waits for its newline."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ctxstore.cli.main import cli
from ctxstore.importers import import_paths
from ctxstore.integrations.claude_code import hook, seen
from ctxstore.refs import branch_ref
from ctxstore.repo import Repository
from tests.corpus import require_corpus

SESSION = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
HOOK = [sys.executable, "-m", "ctxstore.cli", "hook", "claude-code"]


def _branches(repo: Repository) -> dict:
    return {sid: repo.branches(sid) for sid in repo.session_ids()}


def _imported(folder: Path, tmp: Path) -> dict:
    """Branches after `ctx import` of the whole folder into a new store."""
    repo = Repository.init(tmp)
    import_paths(repo, [folder], format="claude-code")
    out = _branches(repo)
    repo.close()
    return out


def _captured(ctx_dir: Path) -> dict:
    repo = Repository.open(ctx_dir)
    out = _branches(repo)
    repo.close()
    return out


def _fire(data: dict, cwd: Path, wait: bool = False):
    p = subprocess.Popen(HOOK, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=cwd, text=True)
    p.stdin.write(json.dumps(data))
    p.stdin.close()
    if wait:
        assert p.wait(timeout=300) == 0, p.stderr.read()
    return p


def _history(tmp: Path) -> tuple[Path, Path, Path]:
    """A Claude Code history folder (`projects/<project>/`) and the project, with a store."""
    proj = tmp / "proj"
    proj.mkdir()
    Repository.init(proj).close()
    folder = tmp / "claude" / "projects" / "-proj"
    folder.mkdir(parents=True)
    return proj, folder, proj / ".ctx"


def test_concurrent_async_hooks_give_what_import_gives(tmp_path):
    """Hook processes started without waiting (Claude Code's async hooks: no order, no
    de-duplication) while the transcript grows; every subagent file is complete and its
    SubagentStop fired before the main transcript holds any spawning call. Once all exit,
    the store holds what `ctx import` of the folder gives: same sessions, same tips."""
    src = require_corpus() / "claude-code" / "ccl_worktrees-agent-team_subagents-dir_v2.1.114"
    proj, folder, ctx_dir = _history(tmp_path)
    main = folder / f"{SESSION}.jsonl"
    lines = (src / f"{SESSION}.jsonl").read_bytes().splitlines(keepends=True)
    main.write_bytes(b"")
    shutil.copytree(src / SESSION, folder / SESSION)
    agents = sorted((folder / SESSION / "subagents").glob("agent-*.jsonl"))
    assert len(agents) == 6
    base = {"session_id": SESSION, "transcript_path": str(main), "cwd": str(proj)}
    subagent_stops = [_fire({**base, "hook_event_name": "SubagentStop",
                             "agent_transcript_path": str(a)}, proj) for a in agents]
    for p in subagent_stops:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    assert _captured(ctx_dir) == {}  # each waits for its spawning call
    rng = random.Random(7)
    full = b"".join(lines)
    cuts = sorted(rng.sample(range(1, len(full)), 11)) + [len(full)]  # mid-line most of them
    at, procs = 0, []
    for cut in cuts:
        with open(main, "ab") as fh:
            fh.write(full[at:cut])
        at = cut
        for event in rng.sample(["PostToolUse", "Stop", "UserPromptSubmit"], 2):
            procs.append(_fire({**base, "hook_event_name": event, "tool_name": "Read"}, proj))
        for p in procs[:-4]:  # the transcript grows while about four firings run
            assert p.wait(timeout=600) == 0, p.stderr.read()
    for p in procs:
        assert p.wait(timeout=600) == 0, p.stderr.read()
    _fire({**base, "hook_event_name": "SessionEnd"}, proj, wait=True)
    want = _imported(folder, tmp_path / "ref")
    assert len(want) == 7  # the session and its six subagents
    assert _captured(ctx_dir) == want
    log = (ctx_dir / "hooks.log").read_text()  # the file's own warnings, as `ctx import` gives
    assert " error: " not in log and log.count("dangling parent") == 1, log
    repo = Repository.open(ctx_dir)  # no firing undid another's work: tips only move forward
    for sid in repo.session_ids():
        log = repo.refs.reflog(branch_ref(sid, "main"))
        assert log
        for e in log:
            assert e.old is None or repo.graph.is_ancestor(e.old, e.new), e
    repo.close()


def test_a_subagent_waits_for_its_spawning_call(tmp_path):
    """In process: a subagent captured before the parent holds its call is not imported (it
    would have no spawn link); the parent's capture that brings the call brings it."""
    src = require_corpus() / "claude-code" / "ccl_worktrees-agent-team_subagents-dir_v2.1.114"
    proj, folder, ctx_dir = _history(tmp_path)
    main = folder / f"{SESSION}.jsonl"
    main.write_bytes(b"")
    shutil.copytree(src / SESSION, folder / SESSION)
    agent = sorted((folder / SESSION / "subagents").glob("agent-*.jsonl"))[0]
    data = {"transcript_path": str(main), "agent_transcript_path": str(agent),
            "cwd": str(proj), "hook_event_name": "SubagentStop"}
    out = hook.run_hook(json.dumps(data))
    assert out["captured"][1]["deferred"] is True
    assert _captured(ctx_dir) == {}
    main.write_bytes((src / f"{SESSION}.jsonl").read_bytes())
    out = hook.run_hook(json.dumps({**data, "hook_event_name": "Stop",
                                    "agent_transcript_path": None}))
    assert [c["transcript"] for c in out["captured"][0]["subagents"]] == [str(agent.resolve())]
    repo = Repository.open(ctx_dir)
    kids = [s for s in repo.session_ids() if repo.session(s).kind == "subagent"]
    assert len(kids) == 1 and repo.session(kids[0]).spawn_event
    repo.close()


def test_nothing_new_is_a_stat(tmp_path):
    """As a process: the call with nothing new loads neither the store nor the importer (its
    -X importtime lists no ctxstore.repo) and changes nothing in the store; a new line, a
    lost state file or SessionStart go the full way."""
    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    proj, folder, ctx_dir = _history(tmp_path)
    t = folder / "s.jsonl"
    t.write_bytes(b"".join(lines[:20]))
    data = {"transcript_path": str(t), "cwd": str(proj), "hook_event_name": "Stop"}
    _fire(data, proj, wait=True)
    before = _captured(ctx_dir)
    assert before and seen.unchanged(str(ctx_dir), str(t.resolve()))
    stamp = os.stat(ctx_dir / "live.sqlite").st_mtime_ns

    def imports(event: str) -> str:
        r = subprocess.run([sys.executable, "-X", "importtime", *HOOK[1:]], cwd=proj, text=True,
                           input=json.dumps({**data, "hook_event_name": event}),
                           capture_output=True, timeout=300)
        assert r.returncode == 0, r.stderr
        return r.stderr

    assert "ctxstore.repo" not in imports("PostToolUse")
    assert "ctxstore.repo" not in imports("Stop")
    assert os.stat(ctx_dir / "live.sqlite").st_mtime_ns == stamp
    assert _captured(ctx_dir) == before
    with open(t, "ab") as fh:
        fh.write(lines[20])
    assert "ctxstore.importers.live" in imports("PostToolUse")
    assert _captured(ctx_dir) == _imported(folder, tmp_path / "ref1")
    os.unlink(seen.state_file(str(ctx_dir), str(t.resolve())))
    assert "ctxstore.repo" in imports("Stop")  # no state file: the full path, which writes it
    assert "ctxstore.repo" not in imports("Stop")
    assert "ctxstore.repo" in imports("SessionStart")


def test_session_start_catches_up_the_history_folder(tmp_path):
    """Transcripts of the project no hook saw are imported at SessionStart (new lines only
    for one captured before); a budget that runs out says so and the next SessionStart
    goes on; a folder outside `projects/` is not swept."""
    root = require_corpus() / "claude-code"
    proj, folder, ctx_dir = _history(tmp_path)
    names = ["ccl_sample_many-summary-records_v1.0.24.jsonl",
             "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl",
             "FIXTURE_claude-code-log_dag-rewind-branch-compact-boundary.jsonl"]
    for n in names:
        shutil.copy(root / n, folder / n)
    current = folder / "current.jsonl"
    current.write_bytes(b"".join((root / names[0]).read_bytes().splitlines(keepends=True)[:3]))
    data = {"transcript_path": str(current), "cwd": str(proj), "hook_event_name": "SessionStart"}
    repo = Repository.open(ctx_dir)
    live = hook.LiveImporter(repo)
    try:
        done, note = hook.catch_up(live, folder, ctx_dir, budget=0)
    finally:
        live.close()
        repo.close()
    assert len(done) == 1 and "stopped after 0 s" in note and "3 of 4 files left" in note
    out = hook.run_hook(json.dumps(data))
    assert len(out["caught_up"]) == 2  # the current transcript, captured first, is unchanged
    assert _captured(ctx_dir) == _imported(folder, tmp_path / "ref")
    out = hook.run_hook(json.dumps(data))
    assert out["caught_up"] == []  # every file is as the hook last saw it
    elsewhere = tmp_path / "notes"
    elsewhere.mkdir()
    shutil.copy(root / names[1], elsewhere / "x.jsonl")
    repo = Repository.open(ctx_dir)
    live = hook.LiveImporter(repo)
    try:
        assert hook.catch_up(live, elsewhere, ctx_dir) == ([], "")
    finally:
        live.close()
        repo.close()


def test_a_half_written_line_waits_for_its_newline(tmp_path):
    """The cut is at the last newline: a call that sees half a line imports the complete
    lines before it and leaves the half for the next call, which imports the whole line as
    `ctx import` does (a cut at the end of the data instead would import the second half
    as a malformed line and skip the first)."""
    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    store = tmp_path / "store"
    Repository.init(store).close()
    t = tmp_path / "t.jsonl"
    t.write_bytes(b"".join(lines[:5]) + lines[5][:40])

    def call() -> dict:
        r = CliRunner().invoke(cli, ["--store", str(store), "hook", "claude-code", "--json"],
                               input=json.dumps({"transcript_path": str(t), "cwd": str(tmp_path),
                                                 "hook_event_name": "Stop"}))
        assert r.exit_code == 0, r.output
        return json.loads(r.output)["captured"][0]

    assert call()["lines"] == 5
    with open(t, "ab") as fh:
        fh.write(lines[5][40:] + lines[6][:10])
    assert call()["lines"] == 1
    with open(t, "ab") as fh:
        fh.write(lines[6][10:])
    assert call()["lines"] == 1
    assert not (store / ".ctx" / "hooks.log").exists()  # no malformed line was seen
    ref = tmp_path / "ref"
    ref.mkdir()
    (ref / "t.jsonl").write_bytes(b"".join(lines[:7]))
    assert _captured(store / ".ctx") == _imported(ref / "t.jsonl", tmp_path / "refstore")


def test_firings_take_turns_under_the_capture_lock(tmp_path):
    """A hook fired while another capture holds .ctx/live.lock waits for it, then reads
    from the offset that capture reached (so no two firings read the same lines)."""
    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    proj, folder, ctx_dir = _history(tmp_path)
    t = folder / "s.jsonl"
    t.write_bytes(src.read_bytes())
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\n"
         "from ctxstore.repo import Repository\n"
         "from ctxstore.importers.live import capture_lock\n"
         "repo = Repository.open(sys.argv[1])\n"
         "with capture_lock(repo):\n"
         "    print('held', flush=True)\n"
         "    time.sleep(1.5)\n"
         "    open(sys.argv[2], 'w').close()\n", str(ctx_dir), str(tmp_path / "released")],
        stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    r = subprocess.run([*HOOK, "--json"], cwd=proj, capture_output=True, text=True, timeout=300,
                       input=json.dumps({"transcript_path": str(t), "cwd": str(proj),
                                         "hook_event_name": "Stop"}))
    assert r.returncode == 0 and (tmp_path / "released").exists()  # it waited
    assert holder.wait(timeout=60) == 0
    assert json.loads(r.stdout)["captured"][0]["lines"] == len(src.read_bytes().splitlines())


def test_a_lagging_answer_is_kept_then_reconciled(tmp_path):
    """Stop reports an answer the transcript does not hold yet: it is kept on the session's
    live-pending branch (main stays what `ctx import` gives; a repeated Stop, answered by
    the full path because the text is not in the file, keeps it once). When the line
    arrives and is captured, live-pending goes and the store is exactly the import's."""
    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    answer = next(b["text"] for b in json.loads(lines[54])["message"]["content"]
                  if b.get("type") == "text")
    proj, folder, ctx_dir = _history(tmp_path)
    t = folder / "s.jsonl"
    t.write_bytes(b"".join(lines[:54]))
    stop = {"transcript_path": str(t), "cwd": str(proj), "hook_event_name": "Stop",
            "last_assistant_message": answer}
    _fire(stop, proj, wait=True)
    _fire(stop, proj, wait=True)
    got = _captured(ctx_dir)
    [sid] = got
    pending = got[sid].pop("live-pending")
    assert got == _imported(folder, tmp_path / "ref1")
    repo = Repository.open(ctx_dir)
    ev = repo.graph.event(pending)
    assert ev.type == "claude-code:provisional-assistant" and ev.payload["text"] == answer
    assert repo.graph.event(ev.parents[0]).type != ev.type  # kept once
    repo.close()
    with open(t, "ab") as fh:
        fh.write(b"".join(lines[54:]))
    _fire({**stop, "hook_event_name": "PostToolUse", "last_assistant_message": None}, proj,
          wait=True)
    assert _captured(ctx_dir) == _imported(folder, tmp_path / "ref2")
    _fire(stop, proj, wait=True)  # the same Stop once the line is there: nothing kept
    assert _captured(ctx_dir) == _imported(folder, tmp_path / "ref3")


def test_a_lagging_compact_summary_is_kept_then_reconciled(tmp_path):
    src = require_corpus() / "claude-code" / \
        "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    lines = src.read_bytes().splitlines(keepends=True)
    last = json.loads(lines[-1])
    summary = "The user compared dev-docs/ and work/; five weak points were listed."
    boundary = {"type": "user", "isCompactSummary": True, "uuid": "c0ffee00-0000-4000-8000-1",
                "parentUuid": last["uuid"], "sessionId": last["sessionId"],
                "timestamp": last["timestamp"], "cwd": last.get("cwd", ""),
                "message": {"role": "user", "content": "This session is being continued from "
                            f"a previous conversation.\n\nSummary:\n{summary}"}}
    proj, folder, ctx_dir = _history(tmp_path)
    t = folder / "s.jsonl"
    t.write_bytes(b"".join(lines))
    data = {"transcript_path": str(t), "cwd": str(proj), "hook_event_name": "PostCompact",
            "compact_summary": summary}
    [eid] = hook.run_hook(json.dumps(data))["provisional"]
    got = _captured(ctx_dir)
    [sid] = got
    assert got[sid]["live-pending"] == eid
    with open(t, "ab") as fh:
        fh.write((json.dumps(boundary) + "\n").encode())
    assert hook.run_hook(json.dumps(data))["provisional"] == []
    assert _captured(ctx_dir) == _imported(folder, tmp_path / "ref")


def test_catch_up_imports_a_missed_session_with_its_subagents(tmp_path):
    """A session no hook saw, with its subagents/ folder: the catch-up captures the session
    before its subagents and links them as `ctx import` of the folder does."""
    src = require_corpus() / "claude-code" / "ccl_worktrees-agent-team_subagents-dir_v2.1.114"
    proj, folder, ctx_dir = _history(tmp_path)
    shutil.copytree(src, folder, dirs_exist_ok=True)
    current = folder / "current.jsonl"  # the new session: nothing written yet
    current.write_bytes(b"")
    out = hook.run_hook(json.dumps({"transcript_path": str(current), "cwd": str(proj),
                                    "hook_event_name": "SessionStart"}))
    assert len(out["caught_up"]) == 7 and out["catch_up_note"] == ""
    current.unlink()
    want = _imported(folder, tmp_path / "ref")
    assert len(want) == 7 and _captured(ctx_dir) == want


def test_catch_up_never_follows_a_link_out_of_the_history_folder(tmp_path):
    """The swept folder comes from the hook's payload: a transcript that is a link, or a
    session folder whose subagents/ is a link, to files elsewhere is not read."""
    src = require_corpus() / "claude-code" / "FIXTURE_claude-code-log_dag-rewind-branch-compact-boundary.jsonl"
    proj, folder, ctx_dir = _history(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "subagents").mkdir(parents=True)
    shutil.copy(src, elsewhere / "private.jsonl")
    shutil.copy(src, elsewhere / "subagents" / "agent-x.jsonl")
    (folder / "linked.jsonl").symlink_to(elsewhere / "private.jsonl")
    (folder / "sess").symlink_to(elsewhere)
    current = folder / "current.jsonl"
    current.write_bytes(b"")
    hook.run_hook(json.dumps({"transcript_path": str(current), "cwd": str(proj),
                              "hook_event_name": "SessionStart"}))
    assert _captured(ctx_dir) == {}  # (without the check: the linked session and its subagent)
