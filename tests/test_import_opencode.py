"""OpenCode: the corpus (an `opencode export` document, two storage trees), databases built here
from OpenCode's documented schema (locked, half-written, growing), hostile trees and records.

Expectations are read off the files by hand (or from the oracle, tests/oracles/opencode.py,
which shares nothing with the importer)."""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest

from ctxstore.importers import detect_format, harnesses
from ctxstore.importers import opencode as oc
from ctxstore.state.tools import DENIED, ERROR, OK, call_effects, tool_spec
from tests.clitools import Ctx
from tests.corpus import corpus_root, require_corpus
from tests.oracles import opencode as oracle

CORPUS = corpus_root() / "opencode"
EXPORT = CORPUS / "toolpath_opencode_export-v1.14.29_ses_20649cb7.json"
V2 = CORPUS / "agentsessions_opencode_storage_v2_synthetic"
LEGACY = CORPUS / "agentsessions_opencode_storage_legacy_synthetic"


def _ctx(tmp_path, name="store") -> Ctx:
    c = Ctx(tmp_path / name)
    c("init", str(tmp_path / name))
    return c


def _import(c: Ctx, path, *more: str, code: int = 0) -> dict:
    res = c("import", str(path), *more, "--json", code=code)
    return json.loads(res.stdout) if code == 0 else {}


def _export(c: Ctx, sid: str) -> dict:
    return json.loads(c("export", sid, "--format", "opencode").stdout)


def _by_title(c: Ctx) -> dict[str, dict]:
    return {s["title"]: s for s in c.json("sessions")}


# ---------------------------------------------------------------------------------------------
# The corpus


def test_corpus_export_document(tmp_path):
    require_corpus()
    c = _ctx(tmp_path)
    rep = _import(c, EXPORT)
    assert rep["sessions"] == 1 and rep["warnings"] == 0
    st = rep["session_stats"][0]
    assert st["records"] == 12 and st["tool_pairs"] == 9  # the head + 11 messages; 9 tool parts
    sid = st["session"]
    [s] = c.json("sessions")
    assert s["title"] == "Executing a directory task sequence planning notes"
    assert _export(c, sid) == json.loads(EXPORT.read_text(encoding="utf-8"))
    stats = c.json("stats", sid)["token_usage"]
    # 10 step-finish parts: input 11,496 + cache read 108,864; output 994 (reasoning 0)
    assert (stats["input_tokens"], stats["output_tokens"], stats["cache_read_tokens"]) == \
        (120360, 994, 108864)
    state = c.json("state", sid)
    cwd = "/private/var/folders/jk/4rycn96j1rdbj2mz275yv11m0000gn/T/toolpath-elicit.vcAozc/opencode"
    assert sorted(f["path"] for f in state["files"]["modified"]) == [f"{cwd}/count.sh", f"{cwd}/notes.md"]
    assert [f["path"] for f in state["files"]["read"]] == [f"{cwd}/notes.md"]
    assert state["tool_calls"]["failed"] == 1 and not state["tool_calls"]["pending"]
    again = _import(c, EXPORT)
    assert again["new_events"] == 0 and again["events"] == rep["events"]


def test_corpus_export_tokens_match_the_oracle():
    require_corpus()
    t = oracle.analyze(EXPORT)
    assert (t.input_tokens, t.output_tokens, t.usage_records) == (120360, 994, 10)
    assert t.cache_read_tokens == 108864
    assert t.first_prompt.startswith('"You\'re going to walk through')


def _storage_document(root: Path, sid: str) -> dict:
    """The `opencode export` document of one storage-tree session, assembled from the files."""
    info = next(json.loads(p.read_text()) for p in (root / "session").glob("*/*.json")
                if json.loads(p.read_text()).get("id") == sid)
    messages = []
    for mf in sorted((root / "message" / sid).glob("*.json")):
        m = json.loads(mf.read_text())
        pdir = root / "part" / m["id"]
        parts = [json.loads(p.read_text()) for p in sorted(pdir.glob("*.json"))] if pdir.is_dir() else []
        parts += [json.loads(p.read_text()) for p in sorted((root / "part").glob("*.json"))
                  if json.loads(p.read_text()).get("messageID") == m["id"]]
        messages.append({"info": m, "parts": parts})
    return {"info": info, "messages": messages}


def test_corpus_storage_v2(tmp_path):
    require_corpus()
    c = _ctx(tmp_path)
    rep = _import(c, V2)
    assert rep["sessions"] == 2 and rep["warnings"] == 0
    by = _by_title(c)
    assert set(by) == {"OpenCode Large", "OpenCode Small"}
    large, small = by["OpenCode Large"]["id"], by["OpenCode Small"]["id"]
    assert _export(c, large) == _storage_document(V2, "s_stage0_large")
    assert _export(c, small) == _storage_document(V2, "s_stage0_small")
    # counted once: the step-finish part, not the message's copy of the same tokens
    tu = c.json("stats", large)["token_usage"]
    assert (tu["input_tokens"], tu["output_tokens"]) == (120, 16)
    log = c.json("log", large, "--bookkeeping")
    types = [e["type"] for e in log]
    assert types.count("UserPromptSubmitted") == 2
    assert {"opencode:compaction", "opencode:patch", "opencode:file", "opencode:step-start"} <= set(types)
    assert _import(c, V2)["new_events"] == 0


def test_corpus_storage_legacy_flat_parts(tmp_path):
    require_corpus()
    c = _ctx(tmp_path)
    rep = _import(c, LEGACY)
    assert rep["sessions"] == 1
    # the synthetic fixture's tool status "success" is not one OpenCode writes: warned, and its
    # output taken as the result
    assert [(w["file"], w["message"].split(":")[0]) for w in rep["warning_list"]] == \
        [(f"{LEGACY.name}/part/prt_0001.json", "tool part 'prt_tool_1'")]
    [s] = c.json("sessions")
    assert s["title"] == "OpenCode Drift"
    assert _export(c, s["id"]) == _storage_document(LEGACY, "s_stage0_drift")
    assert c.json("state", s["id"])["tool_calls"]["completed"] == 1


def test_detection_and_units():
    root = require_corpus()
    assert oc.session_units(root) == sorted([EXPORT, V2, LEGACY]) == oracle.units(root)
    for unit in (EXPORT, V2, LEGACY):
        assert detect_format(unit) == "opencode" and oracle.detect(unit)
    others = [p for p in root.rglob("*") if "opencode" not in p.relative_to(root).parts]
    assert others
    assert [p for p in others if oc.sniff(p) or oracle.detect(p)] == []
    # and no other harness takes ours
    for m in harnesses.added():
        if m.FMT != "opencode":
            assert not any(m.sniff(u) for u in (EXPORT, V2, LEGACY)), m.FMT


def test_default_dirs_follow_xdg():
    home = Path("/home/u")
    assert oc.default_dirs({}, home) == [home / ".local/share/opencode"]
    assert oc.default_dirs({"XDG_DATA_HOME": "/xdg"}, home) == [Path("/xdg/opencode")]


# ---------------------------------------------------------------------------------------------
# Databases, built from OpenCode's schema (packages/opencode/migration/*/migration.sql and
# src/session/session.sql.ts): `data` holds the message info / part without its ids.

SCHEMA = """
CREATE TABLE `project` (`id` text PRIMARY KEY, `worktree` text NOT NULL, `vcs` text, `name` text,
  `icon_url` text, `icon_color` text, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, `time_initialized` integer, `sandboxes` text NOT NULL);
CREATE TABLE `session` (`id` text PRIMARY KEY, `project_id` text NOT NULL, `parent_id` text,
  `slug` text NOT NULL, `directory` text NOT NULL, `title` text NOT NULL, `version` text NOT NULL,
  `share_url` text, `summary_additions` integer, `summary_deletions` integer,
  `summary_files` integer, `summary_diffs` text, `revert` text, `permission` text,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `time_compacting` integer,
  `time_archived` integer, `workspace_id` text, `path` text);
CREATE TABLE `message` (`id` text PRIMARY KEY, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `part` (`id` text PRIMARY KEY, `message_id` text NOT NULL, `session_id` text NOT NULL,
  `time_created` integer NOT NULL, `time_updated` integer NOT NULL, `data` text NOT NULL);
CREATE TABLE `todo` (`session_id` text NOT NULL, `content` text NOT NULL, `status` text NOT NULL,
  `priority` text NOT NULL, `position` integer NOT NULL, `time_created` integer NOT NULL,
  `time_updated` integer NOT NULL, PRIMARY KEY(`session_id`, `position`));
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
"""

T0 = 1_780_000_000_000
PARENT, CHILD = "ses_parent0001", "ses_child00001"
W = "/w/proj"


def _tokens(inp, out, reasoning=0, read=0, write=0):
    return {"total": inp + out + reasoning + read + write, "input": inp, "output": out,
            "reasoning": reasoning, "cache": {"read": read, "write": write}}


def _user(mid, t, *parts):
    return ({"role": "user", "time": {"created": t}, "agent": "build",
             "model": {"providerID": "anthropic", "modelID": "claude-x"}}, mid, list(parts))


def _assistant(mid, t, parent, *parts, **kw):
    info = {"role": "assistant", "parentID": parent, "time": {"created": t, "completed": t + 50},
            "modelID": "claude-x", "providerID": "anthropic", "mode": "build", "agent": "build",
            "path": {"cwd": W, "root": W}, "cost": 0.01, "tokens": _tokens(0, 0), **kw}
    return info, mid, list(parts)


def _tool(pid, tool, inp, status="completed", output="ok", **state):
    st = {"status": status, "input": inp, **state}
    if status == "completed":
        st.update(output=output, title=tool, time={"start": T0, "end": T0 + 1})
        st.setdefault("metadata", {})
    elif status == "error":
        st.update(error=output, time={"start": T0, "end": T0 + 1})
    elif status == "running":
        st.update(time={"start": T0})
    else:
        st.update(raw="")
    return pid, {"type": "tool", "callID": f"call_{pid}", "tool": tool, "state": st}


def _text(pid, text, **kw):
    return pid, {"type": "text", "text": text, **kw}


def _finish(pid, tokens, cost=0.001):
    return pid, {"type": "step-finish", "reason": "stop", "tokens": tokens, "cost": cost}


PATCH = "*** Begin Patch\n*** Add File: new.py\n+print(1)\n*** Update File: old.py\n@@\n-a\n+b\n*** End Patch"
TODOS = [{"content": "write tests", "status": "in_progress", "priority": "high", "id": "1"},
         {"content": "ship", "status": "pending", "priority": "low", "id": "2"}]

PARENT_MESSAGES = [
    _user("msg_001", T0 + 10, _text("prt_001", "Fix the parser please"),
          ("prt_002", {"type": "file", "mime": "text/plain", "filename": "secret.txt",
                       "url": "file:///etc/passwd"})),
    _assistant("msg_002", T0 + 20, "msg_001",
               ("prt_010", {"type": "step-start", "snapshot": "abc"}),
               ("prt_011", {"type": "reasoning", "text": "Let me look.", "time": {"start": T0}}),
               _text("prt_012", "Reading the file."),
               _tool("prt_013", "read", {"filePath": f"{W}/parser.py"}, output="<content>"),
               _tool("prt_014", "edit", {"filePath": f"{W}/parser.py", "oldString": "a",
                                         "newString": "b"}),
               _tool("prt_015", "apply_patch", {"patchText": PATCH}, output="Success."),
               _tool("prt_016", "write", {"filePath": f"{W}/denied.py", "content": "x"},
                     status="error", output="The user rejected permission to use this specific "
                                            "tool call."),
               _tool("prt_017", "todowrite", {"todos": TODOS}, output=json.dumps(TODOS)),
               _tool("prt_018", "task", {"description": "look around", "prompt": "Look around",
                                         "subagent_type": "explore"},
                     output=f"task_id: {CHILD}", metadata={"sessionId": CHILD}),
               _finish("prt_019", _tokens(100, 20, 5, 1000, 10)),
               ("prt_020", {"type": "patch", "hash": "f00", "files": [f"{W}/parser.py"]}),
               ("prt_021", {"type": "hologram", "x": 1}),
               tokens=_tokens(100, 20, 5, 1000, 10)),
    _user("msg_003", T0 + 30, ("prt_030", {"type": "compaction", "auto": True})),
    _assistant("msg_004", T0 + 40, "msg_003", _text("prt_040", "Summary: parser fixed."),
               _finish("prt_041", _tokens(50, 10)), summary=True, finish="stop"),
    _user("msg_005", T0 + 50, _text("prt_050", "Now run it")),
    _assistant("msg_006", T0 + 60, "msg_005",
               _tool("prt_060", "bash", {"command": "python parser.py"}, status="running"),
               error={"name": "MessageAbortedError", "data": {"message": "aborted"}},
               tokens=_tokens(7, 3)),
]
CHILD_MESSAGES = [
    _user("msg_101", T0 + 21, _text("prt_101", "Look around")),
    _assistant("msg_102", T0 + 22, "msg_101",
               _tool("prt_102", "glob", {"pattern": "*.py"}),
               _finish("prt_103", _tokens(40, 4, 0, 400))),
]


def _session_row(sid, title, parent=None, t=T0):
    return {"id": sid, "project_id": "proj1", "parent_id": parent, "slug": sid[-6:],
            "directory": W, "title": title, "version": "1.14.29", "share_url": None,
            "summary_additions": 1, "summary_deletions": 0, "summary_files": 1,
            "summary_diffs": None, "revert": None,
            "permission": json.dumps([{"permission": "task", "pattern": "*", "action": "deny"}]),
            "time_created": t, "time_updated": t + 100, "time_compacting": None,
            "time_archived": None, "workspace_id": None, "path": "w/proj"}


def _insert(con, table, row):
    con.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                tuple(row.values()))


def _add_session(con, row, messages):
    _insert(con, "session", row)
    for info, mid, parts in messages:
        t = info["time"]["created"]
        _insert(con, "message", {"id": mid, "session_id": row["id"], "time_created": t,
                                 "time_updated": t, "data": json.dumps(info)})
        for pid, part in parts:
            _insert(con, "part", {"id": pid, "message_id": mid, "session_id": row["id"],
                                  "time_created": t, "time_updated": t, "data": json.dumps(part)})


def _db(path: Path, wal: bool = True, child: bool = True) -> Path:
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    if wal:
        con.execute("PRAGMA journal_mode = WAL")
    _add_session(con, _session_row(PARENT, "Fixing the parser"), PARENT_MESSAGES)
    if child:
        _add_session(con, _session_row(CHILD, "look around (@explore subagent)", PARENT, T0 + 21),
                     CHILD_MESSAGES)
    con.commit()
    con.close()
    return path


def _expected_document(sid, title, parent, messages, t):
    row = _session_row(sid, title, parent, t)
    info = {"id": sid, "slug": row["slug"], "projectID": "proj1", "directory": W, "path": "w/proj",
            **({"parentID": parent} if parent else {}), "title": title, "version": "1.14.29",
            "summary": {"additions": 1, "deletions": 0, "files": 1},
            "permission": json.loads(row["permission"]),
            "time": {"created": t, "updated": t + 100}}
    return {"info": info, "messages": [
        {"info": {**m, "id": mid, "sessionID": sid},
         "parts": [{**p, "id": pid, "sessionID": sid, "messageID": mid} for pid, p in parts]}
        for m, mid, parts in messages]}


def test_database(tmp_path):
    db = _db(tmp_path / "opencode.db")
    assert oc.sniff(db) and oracle.detect(db) and detect_format(db) == "opencode"
    c = _ctx(tmp_path)
    before = db.read_bytes()
    rep = _import(c, db)
    assert db.read_bytes() == before  # read-only: the file is as it was
    assert rep["sessions"] == 2
    assert [w["message"].split(";")[0] for w in rep["warning_list"]] == \
        ["unknown record type 'hologram' (part 'prt_021')"]
    by = {s["title"]: s for s in c.json("sessions")}
    parent, child = by["Fixing the parser"], by["look around (@explore subagent)"]
    assert child["kind"] == "subagent" and parent["kind"] == "main"
    stats = {s["session"]: s for s in rep["session_stats"]}
    assert stats[child["id"]]["parent_session"] == parent["id"]
    assert stats[child["id"]]["spawn_event"]  # the task call that started it
    assert stats[parent["id"]]["compactions"] == 1
    assert stats[parent["id"]]["tool_pairs"] == 6  # the running bash has no result yet

    state = c.json("state", parent["id"])
    modified = sorted(f["path"] for f in state["files"]["modified"])
    assert modified == [f"{W}/parser.py", "new.py", "old.py"]  # not the denied write
    assert [f["path"] for f in state["files"]["read"]] == [f"{W}/parser.py"]
    assert [s["text"] for s in state["plan"]["steps"]] == ["write tests", "ship"]
    # the bash call of the aborted message is abandoned, not pending
    assert not state["tool_calls"]["pending"] and "call_prt_060" in state["tool_calls"]["abandoned"]

    tu = c.json("stats", parent["id"])["token_usage"]
    # steps: (100+1000+10, 20+5), (50, 10); msg_006 has no step-finish: its own (7, 3)
    assert (tu["input_tokens"], tu["output_tokens"], tu["cache_read_tokens"]) == (1167, 38, 1000)
    t = oracle.analyze(db)
    assert (t.input_tokens, t.output_tokens) == (1167 + 440, 38 + 4)

    assert _export(c, parent["id"]) == _expected_document(PARENT, "Fixing the parser", None,
                                                          PARENT_MESSAGES, T0)
    assert _export(c, child["id"]) == _expected_document(
        CHILD, "look around (@explore subagent)", PARENT, CHILD_MESSAGES, T0 + 21)
    assert _import(c, db)["new_events"] == 0


def test_database_grows_and_a_rename_keeps_the_session(tmp_path):
    db = _db(tmp_path / "opencode.db", child=False)
    c = _ctx(tmp_path)
    first = _import(c, db)
    [s] = c.json("sessions")
    con = sqlite3.connect(db)
    con.execute("UPDATE session SET title = 'Renamed' WHERE id = ?", (PARENT,))
    info, mid, parts = _user("msg_007", T0 + 70, _text("prt_070", "And the docs"))
    _insert(con, "message", {"id": mid, "session_id": PARENT, "time_created": T0 + 70,
                             "time_updated": T0 + 70, "data": json.dumps(info)})
    _insert(con, "part", {"id": "prt_070", "message_id": mid, "session_id": PARENT,
                          "time_created": T0 + 70, "time_updated": T0 + 70,
                          "data": json.dumps(parts[0][1])})
    con.commit()
    con.close()
    again = _import(c, db)
    assert [x["id"] for x in c.json("sessions")] == [s["id"]]
    assert again["new_events"] == 3  # the row's record event changed; the message and its part
    assert again["events"] == first["events"] + 2


def test_default_title_falls_back_to_the_first_prompt(tmp_path):
    db = tmp_path / "opencode.db"
    con = sqlite3.connect(db)
    con.executescript(SCHEMA)
    _add_session(con, _session_row(PARENT, "New session - 2026-05-05T10:00:00.000Z"),
                 PARENT_MESSAGES[:1])
    con.commit()
    con.close()
    c = _ctx(tmp_path)
    _import(c, db)
    assert c.json("sessions")[0]["title"] == "Fix the parser please"


def test_locked_database_is_reported_not_waited_for(tmp_path):
    db = _db(tmp_path / "opencode.db", wal=False)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")  # OpenCode in the middle of a write (rollback journal)
    try:
        c = _ctx(tmp_path)
        start = time.monotonic()
        res = c("import", "opencode", str(db), code=7)
        assert time.monotonic() - start < 5
        assert str(db) in res.stderr and "locked" in res.stderr
        assert c.json("sessions") == []
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_wal_database_is_read_while_opencode_writes(tmp_path):
    db = _db(tmp_path / "opencode.db", wal=True)
    writer = sqlite3.connect(db, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # a write transaction under way: WAL readers go on
    writer.execute("UPDATE session SET title = 'uncommitted' WHERE id = ?", (PARENT,))
    try:
        c = _ctx(tmp_path)
        assert _import(c, db)["sessions"] == 2
        assert "uncommitted" not in {s["title"] for s in c.json("sessions")}
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_half_written_database_is_a_clear_error(tmp_path):
    db = _db(tmp_path / "opencode.db", wal=False)
    data = db.read_bytes()
    db.write_bytes(data[: len(data) // 2])  # cut off mid-write
    c = _ctx(tmp_path)
    res = c("import", str(db), code=10)
    assert str(db) in res.stderr and "half-written" in res.stderr
    assert c.json("sessions") == []


def test_database_row_with_broken_data_is_kept(tmp_path):
    db = _db(tmp_path / "opencode.db", child=False)
    con = sqlite3.connect(db)
    con.execute("UPDATE part SET data = '{\"type\": \"text\", \"te' WHERE id = 'prt_012'")
    _insert(con, "message", {"id": "msg_stray", "session_id": "ses_gone", "time_created": T0,
                             "time_updated": T0, "data": "{}"})
    _insert(con, "part", {"id": "prt_stray", "message_id": "msg_gone", "session_id": PARENT,
                          "time_created": T0, "time_updated": T0, "data": "{}"})
    con.commit()
    con.close()
    c = _ctx(tmp_path)
    rep = _import(c, db)
    assert sorted(w["message"].split(" (")[0].split(";")[0] for w in rep["warning_list"]
                  if w["file"] == "opencode.db") == [
        "1 message row(s) of no listed session", f"1 part(s) of message 'msg_gone', which "
        f"session '{PARENT}' does not hold", "part 'prt_012': data is not JSON",
        "unknown record type 'hologram'"]
    [s] = c.json("sessions")
    doc = _export(c, s["id"])
    assert "prt_012" not in json.dumps(doc)  # not a part any more; the row stays in the store
    assert len(doc["messages"][1]["parts"]) == len(PARENT_MESSAGES[1][2]) - 1


# ---------------------------------------------------------------------------------------------
# Storage trees: symlinks, paths from the data, broken files

_OPENED: list[str] | None = None


def _audit(event, args):
    if _OPENED is not None and event in ("open", "sqlite3.connect") and args:
        _OPENED.append(str(args[0]))


sys.addaudithook(_audit)


def _tree(root: Path, outside: Path) -> Path:
    sid, mid = "ses_t1", "msg_t1"
    (root / "session" / "proj").mkdir(parents=True)
    (root / "message" / sid).mkdir(parents=True)
    (root / "part" / mid).mkdir(parents=True)
    (root / "session" / "proj" / f"{sid}.json").write_text(json.dumps(
        {"id": sid, "projectID": "proj", "directory": str(outside), "title": "Tree",
         "version": "0.9", "time": {"created": T0, "updated": T0}}))
    (root / "message" / sid / f"{mid}.json").write_text(json.dumps(
        {"id": mid, "sessionID": sid, "role": "user", "time": {"created": T0}}))
    (root / "part" / mid / "prt_1.json").write_text(json.dumps(
        {"id": "prt_1", "messageID": mid, "sessionID": sid, "type": "text", "text": "hello"}))
    (root / "part" / mid / "prt_2.json").write_text(json.dumps(
        {"id": "prt_2", "messageID": mid, "sessionID": sid, "type": "file", "mime": "text/plain",
         "url": f"file://{outside}/secret.txt", "filename": "../../secret.txt"}))
    (root / "part" / mid / "prt_3.json").write_text('{"id": "prt_3", "type": "te')
    return root


def test_storage_tree_never_leaves_its_folder(tmp_path):
    global _OPENED
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("TOP-SECRET-MARKER")
    (outside / "evil.json").write_text(json.dumps({"id": "msg_evil", "role": "user",
                                                   "text": "TOP-SECRET-MARKER"}))
    (outside / "msg_x").mkdir()
    (outside / "msg_x" / "p.json").write_text(json.dumps({"type": "text", "text": "TOP-SECRET-MARKER"}))
    root = _tree(tmp_path / "storage", outside)
    os.symlink(outside / "evil.json", root / "message" / "ses_t1" / "msg_zz.json")
    os.symlink(outside / "msg_x", root / "part" / "msg_x")
    os.symlink(outside, root / "message" / "ses_ghost")
    assert oc.session_units(tmp_path) == [root] == oracle.units(tmp_path)
    c = _ctx(tmp_path)
    _OPENED = []
    try:
        rep = _import(c, root)
    finally:
        opened, _OPENED = _OPENED, None
    assert not [p for p in opened if str(outside) in p]
    warnings = {(w["file"], w["message"].split(";")[0]) for w in rep["warning_list"]}
    assert ("storage/message/ses_t1/msg_zz.json", "a symlink in the storage tree") in warnings
    assert ("storage/part/msg_x", "a symlink in the storage tree") in warnings
    assert ("storage/message/ses_ghost", "a symlink in the storage tree") in warnings
    assert any(w["file"] == "storage/part/msg_t1/prt_3.json" and w["line"] == 1
               and "malformed JSON" in w["message"] for w in rep["warning_list"])
    [s] = c.json("sessions")
    text = c("export", s["id"], "--format", "opencode").stdout + c("log", s["id"], "--json").stdout
    assert "TOP-SECRET-MARKER" not in text
    doc = json.loads(c("export", s["id"], "--format", "opencode").stdout)
    assert [p["id"] for p in doc["messages"][0]["parts"]] == ["prt_1", "prt_2"]  # prt_3 kept raw
    assert _import(c, root)["new_events"] == 0


def test_malformed_export_document_names_the_file(tmp_path):
    bad = tmp_path / "export.json"
    bad.write_text('{"info": {"id": "ses_x", "projectID": "p"}, "messages": [')
    c = _ctx(tmp_path)
    res = c("import", "opencode", str(bad), code=10)
    assert str(bad) in res.stderr


def test_export_document_with_odd_messages(tmp_path):
    doc = {"info": {"id": "ses_odd", "projectID": "p", "directory": "/w", "title": "Odd",
                    "version": "1", "time": {"created": T0, "updated": T0}},
           "messages": [{"info": {"id": "m1", "sessionID": "ses_odd", "role": "user",
                                  "time": {"created": T0}},
                         "parts": [{"id": "p1", "type": "text", "text": "hi"},
                                   {"id": "p2", "type": "text", "text": "ctx", "synthetic": True}]},
                        "not a message"]}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps(doc))
    c = _ctx(tmp_path)
    rep = _import(c, path)
    assert [w["line"] for w in rep["warning_list"]] == [2]  # the string (warned once)
    [s] = c.json("sessions")
    assert _export(c, s["id"]) == doc
    log = c.json("log", s["id"])
    assert [e["type"] for e in log].count("UserPromptSubmitted") == 1  # not the synthetic part


# ---------------------------------------------------------------------------------------------
# Tools


def test_tool_descriptions():
    eff = lambda name, args: [e.to_dict() for e in call_effects(name, args, "opencode")]  # noqa: E731
    assert eff("write", {"filePath": "/a.py", "content": "x\ny"})[0]["path"] == "/a.py"
    assert eff("edit", {"filePath": "/a.py", "oldString": "a", "newString": "b"})[0]["op"] == "update"
    assert eff("multiedit", {"filePath": "/a.py", "edits": [{"oldString": "a", "newString": "b"}] * 2}
               )[0]["summary"].startswith("2 edits")
    assert [e["path"] for e in eff("apply_patch", {"patchText": PATCH})] == ["new.py", "old.py"]
    assert [e["path"] for e in eff("patch", {"patchText": PATCH})] == ["new.py", "old.py"]
    assert eff("read", {"filePath": "/a.py"}) == [{"kind": "read", "path": "/a.py"}]
    assert [s["text"] for s in eff("todowrite", {"todos": TODOS})[0]["steps"]] == ["write tests", "ship"]
    assert eff("task", {"description": "d", "prompt": "p", "subagent_type": "x"})[0]["kind"] == "spawn"
    assert eff("todoread", {}) == []
    assert eff("bash", {"command": "ls"})[0]["kind"] == "exec"
    spec = tool_spec("write", "opencode")
    assert spec.outcome("The user rejected permission to use this specific tool call.", True) == DENIED
    assert spec.outcome("File not found", True) == ERROR and spec.outcome("ok", False) == OK


@pytest.mark.parametrize("ms, want", [(T0, "2026-05-28T20:26:40.000Z"), (1778010961035.0,
                                                                         "2026-05-05T19:56:01.035Z"),
                                      (None, ""), (True, ""), (-5, "")])
def test_iso(ms, want):
    assert oc.iso(ms) == want


def test_follow_sees_what_opencode_writes_to_the_write_ahead_log(tmp_path):
    from ctxstore.importers.follow import Follower
    from ctxstore.repo import Repository

    db = _db(tmp_path / "opencode.db", child=False)
    writer = sqlite3.connect(db, isolation_level=None)  # OpenCode keeps its connection open
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    repo = Repository.init(tmp_path / "store")
    f = Follower(repo, db, "opencode")
    try:
        assert f.poll()["lines"] > 0
        assert f.poll()["new_events"] == 0  # nothing changed (at most a -wal file appeared)
        info, mid, parts = _user("msg_007", T0 + 70, _text("prt_070", "And the docs"))
        _insert(writer, "message", {"id": mid, "session_id": PARENT, "time_created": T0 + 70,
                                    "time_updated": T0 + 70, "data": json.dumps(info)})
        res = f.poll()  # the new row is in opencode.db-wal only
        assert res["new_events"] >= 2
    finally:
        f.close()
        writer.close()
        repo.close()


def test_default_folder_with_database_and_migrated_storage(tmp_path, monkeypatch):
    data = tmp_path / "xdg" / "opencode"
    data.mkdir(parents=True)
    _db(data / "opencode.db", child=False)
    storage = _tree(data / "storage", tmp_path)
    dup = storage / "session" / "proj" / f"{PARENT}.json"  # also in the database (migrated)
    dup.write_text(json.dumps({"id": PARENT, "projectID": "proj", "directory": W, "title": "Old",
                               "version": "0.9", "time": {"created": T0, "updated": T0}}))
    (data / "snapshot" / "proj" / "objects").mkdir(parents=True)  # OpenCode's git snapshots
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    c = _ctx(tmp_path)
    res = c("import", "opencode")
    assert str(data) in res.stderr
    assert "1 session(s) skipped, imported from OpenCode's database" in res.stderr
    assert sorted(s["title"] for s in c.json("sessions")) == ["Fixing the parser", "Tree"]


def test_storage_messages_without_a_session_file(tmp_path):
    root = _tree(tmp_path / "storage", tmp_path)
    (root / "message" / "ses_lost").mkdir()
    (root / "message" / "ses_lost" / "msg_l.json").write_text(json.dumps(
        {"id": "msg_l", "sessionID": "ses_lost", "role": "user", "time": {"created": T0}}))
    (root / "part" / "msg_l").mkdir()
    (root / "part" / "msg_l" / "p.json").write_text(json.dumps({"type": "text", "text": "orphan"}))
    (root / "part" / "msg_nobody").mkdir()
    c = _ctx(tmp_path)
    rep = _import(c, root)
    assert {(w["file"], w["message"].split(";")[0]) for w in rep["warning_list"]} >= {
        ("storage/message/ses_lost", "messages of a session without a session file"),
        ("storage/part/msg_nobody", "parts of a message no session lists")}
    assert sorted(s["title"] for s in c.json("sessions")) == ["Tree", "orphan"]
