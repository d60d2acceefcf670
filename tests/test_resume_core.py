"""The conversion core: the neutral transcript read from a session, the tool map, the import
link of a converted file, and the no-clobber publish `ctx resume` writes with."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.convert import import_link, read_transcript, target, toolmap
from ctxstore.convert.model import iso_utc, tree_order
from ctxstore.errors import InvalidInput, NotFound
from ctxstore.porcelain.resume import publish_new
from tests import resumecases as rc


@pytest.fixture
def built(tmp_path):
    return rc.built_session(tmp_path)


def test_transcript_of_the_built_session(built):
    repo, sid = built
    t = read_transcript(repo, sid)
    kinds = [e.kind for e in t.path()]
    assert kinds == ["user", "thinking", "tool_call", "tool_result", "assistant", "user",
                     "tool_call", "tool_result", "compaction", "user", "tool_call",
                     "tool_result", "assistant"]
    by_kind = {e.kind: e for e in t.path()}
    big = next(e for e in t.path() if e.kind == "tool_result" and e.call_id == "toolu_big")
    assert big.artifact and big.artifact_size > rc.BIG - 1 and len(big.text) < 10_000
    assert len(t.artifact_bytes(big.artifact)) == big.artifact_size
    text, whole = t.result_text(big, 1 << 20)
    assert not whole and f"ctx cat {big.artifact[:12]}" in text
    assert by_kind["thinking"].provider == "anthropic" and by_kind["thinking"].signature == "sig-1"
    comp = by_kind["compaction"]
    assert comp.text == "Summary: the repo was explored." and comp.replaced
    spawn = next(e for e in t.path() if e.call_id == "toolu_task")
    assert spawn.subagent == t.subagents[0].session and t.subagents[0].spawn_call == "toolu_task"
    assert t.prompts(t.subagents[0].path()) == ["Explore the repo"]
    # the tree: both branches, parents before children, the chosen leaf last
    assert t.has_branches() and len(t.entries) == len(t.path()) + 2
    order = tree_order(t)
    seen = set()
    for e in order:
        assert e.parent in seen or not e.parent
        seen.add(e.id)
    assert order[-1].id == t.leaf
    other = read_transcript(repo, sid, "rewind-u2")
    assert other.prompts(other.path())[-1] == "First attempt"
    with pytest.raises(NotFound, match="no branch 'gone'"):
        read_transcript(repo, sid, "gone")


def test_every_entry_names_its_event_and_parent(built):
    repo, sid = built
    t = read_transcript(repo, sid)
    ids = {e.id for e in t.entries}
    for e in t.entries:
        assert e.event in repo.objects and e.id.split("#")[0] == e.event
        assert not e.parent or e.parent in ids
    assert t.provenance() == f"ctxstore://{sid}/{t.leaf_event}"


@pytest.mark.parametrize(("tool", "args", "target", "want"), [
    ("Bash", {"command": "ls -la"}, "codex", ("shell", {"command": ["bash", "-lc", "ls -la"]})),
    ("shell", {"command": ["bash", "-lc", "make"]}, "claude-code", ("Bash", {"command": "make"})),
    ("exec_command", {"cmd": "pytest"}, "pi", ("bash", {"command": "pytest"})),
    ("run_shell_command", {"command": "ls"}, "claude-code", ("Bash", {"command": "ls"})),
    ("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, "gemini",
     ("replace", {"file_path": "a.py", "old_string": "x", "new_string": "y"})),
    ("edit", {"path": "a.py", "oldText": "x", "newText": "y"}, "claude-code",
     ("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"})),
    ("write_file", {"file_path": "b.txt", "content": "hi\n"}, "codex",
     ("apply_patch", "*** Begin Patch\n*** Add File: b.txt\n+hi\n*** End Patch\n")),
    ("TodoWrite", {"todos": [{"content": "t", "status": "in_progress", "activeForm": "t"}]}, "codex",
     ("update_plan", {"plan": [{"step": "t", "status": "in_progress"}]})),
])
def test_tool_map(tool, args, target, want):
    name, mapped_args, mapped = toolmap.map_call(target, tool, args)
    assert mapped and (name, mapped_args) == want


def test_unmapped_tools_stay_generic_with_their_own_arguments():
    assert toolmap.map_call("codex", "Read", {"file_path": "a"}) == ("Read", {"file_path": "a"}, False)
    assert toolmap.map_call("claude-code", "mcp__x__y", {"q": 1}) == ("mcp__x__y", {"q": 1}, False)
    assert toolmap.map_call("pi", "Bash", {"no_command": 1})[2] is False  # not its shape


@given(st.text(min_size=1))
def test_a_shell_command_survives_any_round_of_targets(command):
    """Bash -> Codex -> pi -> Gemini -> Claude Code gives the same command back."""
    tool, args = "Bash", {"command": command}
    for tgt in ("codex", "pi", "gemini", "claude-code"):
        tool, args, mapped = toolmap.map_call(tgt, tool, args)
        assert mapped
    assert (tool, args) == ("Bash", {"command": command})


def test_import_link(built):
    repo, sid = built
    t = read_transcript(repo, sid)
    link = import_link(repo, {"uri": t.provenance(), "session": sid, "event": t.leaf_event})
    assert (link["kind"], link["parent_session"], link["spawn_event"]) == ("fork", sid, t.leaf_event)
    assert import_link(repo, t.provenance())["parent_session"] == sid  # the uri form (pi, gemini)
    unknown = import_link(repo, {"session": "f" * 64, "event": "e" * 64})
    assert "kind" not in unknown and unknown["origin"]  # the link is kept, no fork of nothing
    assert import_link(repo, "not a uri") == {} and import_link(repo, None) == {}


def test_iso_utc():
    assert iso_utc("2024-08-07T13:39:50") == "2024-08-07T13:39:50.000Z"
    assert iso_utc("2025-07-01T10:00:00.123+02:00") == "2025-07-01T08:00:00.123Z"
    assert iso_utc("garbage").endswith("Z")


def test_publish_new_never_replaces(tmp_path):
    path = tmp_path / "a" / "s.jsonl"
    assert publish_new(path, b"one\n") is True
    assert publish_new(path, b"one\n") is False  # the same conversion again: left as it is
    with pytest.raises(InvalidInput, match="nothing was overwritten"):
        publish_new(path, b"two\n")
    assert path.read_bytes() == b"one\n"
    assert [p.name for p in path.parent.iterdir()] == ["s.jsonl"]  # no temporary file left


def test_unknown_target():
    with pytest.raises(InvalidInput, match="unknown harness 'vim'"):
        target("vim")


def test_writers_say_where_they_came_from(built):
    import io

    repo, sid = built
    t = read_transcript(repo, sid)
    for name in ("claude-code", "codex"):
        buf = io.BytesIO()
        target(name).write(t, buf)
        first = json.loads(buf.getvalue().split(b"\n", 1)[0])
        where = first.get("ctxstoreProvenance") or first["payload"]["ctxstoreProvenance"]
        assert where["uri"] == t.provenance() and where["session"] == sid


@given(st.lists(st.text(), min_size=1, max_size=3),
       st.dictionaries(st.text(max_size=8), st.text(max_size=20), max_size=3))
@settings(max_examples=40, deadline=None)
def test_any_text_stays_text_in_every_writer(prompts, args):
    """Whatever a prompt, an argument or a result holds, each writer gives one JSON record
    per line and the prompts, call arguments and results come out as they went in."""
    import io

    from ctxstore import ContextManager
    from ctxstore.repo import Repository

    repo = Repository.memory()
    cm = ContextManager.start(repo, "p", "")
    for i, text in enumerate(prompts):
        cm.add_user_message(text)
        cm.add_assistant_message(tool_calls=[{"id": f"c{i}", "name": "mcp__x", "args": args}])
        cm.record_tool_result(f"c{i}", text)
    t = read_transcript(repo, cm.session)
    for name in ("claude-code", "codex"):
        buf = io.BytesIO()
        target(name).write(t, buf)
        recs = [json.loads(x) for x in buf.getvalue().split(b"\n") if x]
        blob = json.dumps(recs, ensure_ascii=False)
        for text in prompts:
            assert json.dumps(text, ensure_ascii=False)[1:-1] in blob
        if name == "codex":
            got = [r["payload"]["message"] for r in recs if r["payload"].get("type") == "user_message"]
            calls = [json.loads(r["payload"]["arguments"]) for r in recs
                     if r["payload"].get("type") == "function_call"]
        else:
            got = [r["message"]["content"] for r in recs if r.get("type") == "user"
                   and isinstance(r["message"]["content"], str) and not r.get("isMeta")]
            calls = [r["message"]["content"][0]["input"] for r in recs if r.get("type") == "assistant"]
        assert got == prompts and calls == [args] * len(prompts)


def test_killed_while_writing_leaves_no_partial_session(tmp_path):
    """kill -9 in the middle of `publish_new`: the session file is absent or whole, never a
    prefix (only the temporary file beside it can be cut short)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    size = 96 << 20
    final = tmp_path / "s.jsonl"
    script = ("import sys; from pathlib import Path; from ctxstore.porcelain.resume import "
              "publish_new; publish_new(Path(sys.argv[1]), b'x' * int(sys.argv[2]))")
    proc = subprocess.Popen([sys.executable, "-c", script, str(final), str(size)])
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(tmp_path.glob(".s.jsonl.*")) \
            and proc.poll() is None:
        time.sleep(0.001)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL  # it was killed, not finished
    assert not final.exists() or final.stat().st_size == size
    if not final.exists():  # killed before the link: what is left is the temporary file only
        assert [p.name.startswith(".s.jsonl.") for p in tmp_path.iterdir()] == [True]


def test_a_read_keeps_its_line_window_in_each_target():
    """Claude Code's Read{offset, limit} and pi's read count lines from 1, Gemini CLI's
    read_file from 0: the window survives a conversion and a way back."""
    src = {"file_path": "/p/a.py", "offset": 10, "limit": 5}
    assert toolmap.map_call("pi", "Read", src)[1] == {"path": "/p/a.py", "offset": 10, "limit": 5}
    name, gem, _ = toolmap.map_call("gemini", "Read", src)
    assert (name, gem) == ("read_file", {"file_path": "/p/a.py", "limit": 5, "offset": 9})
    assert toolmap.map_call("claude-code", name, gem)[1] == src
