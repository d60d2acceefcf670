"""links.references / links.reachable, plus the sample repository the transfer, gc and fsck
tests share (build_repo)."""

from __future__ import annotations

import pytest

from ctxstore.errors import ObjectNotFound
from ctxstore.objects import Artifact, Compaction, Message, ToolCallBlock, ToolResultBlock, links
from ctxstore.repo import Repository


def build_repo(path, *, events: int = 6, title: str = "s", big: bytes | None = None):
    """A session on disk (events >= 1): prompt, tool call + result with an artifact, response, a compaction,
    and a fork branch. Returns (repo, info dict of ids)."""
    repo = Repository.init(path)
    sid, root = repo.new_session(title=title, goal="fix the tests", ts="2026-01-01T00:00:00.000Z",
                                 nonce=title)
    st = repo.objects
    info = {"session": sid, "root": root}
    with repo.transaction() as tx:
        user = st.put_object(Message("user", ({"type": "text", "text": "please fix"},)))
        info["prompt"] = tx.append("UserPromptSubmitted", "user", {"text": "please fix"},
                                   {"message_id": user}, ts="2026-01-01T00:00:01.000Z")
        call = st.put_object(Message("assistant", (ToolCallBlock("toolu_1", "bash", {"cmd": "ls"}),)))
        info["call"] = tx.append("ToolCallRequested", "model",
                                 {"tool_call_id": "toolu_1", "name": "bash", "args": {}},
                                 {"tool_call_id": "toolu_1", "message_id": call},
                                 ts="2026-01-01T00:00:02.000Z")
        blob = st.put_blob(big if big is not None else b"x" * 5000)
        art = st.put_object(Artifact("tool_output", blob, 5000))
        info["blob"], info["artifact"] = blob, art
        result = st.put_object(Message("tool", (ToolResultBlock("toolu_1", preview="xx",
                                                                output_ref=art),)))
        info["result"] = tx.append("ToolCallFinished", "tool",
                                   {"tool_call_id": "toolu_1", "preview": "xx", "size": 5000},
                                   {"tool_call_id": "toolu_1", "message_id": result,
                                    "artifact_id": art}, ts="2026-01-01T00:00:03.000Z")
        for i in range(events):
            tx.append("MessageAdded", "agent", {"role": "custom", "text": f"note {i}"},
                             ts=f"2026-01-01T00:01:{i % 60:02d}.000Z")
        comp = st.put_object(Compaction(session=sid, first_event=info["prompt"],
                                        last_event=info["result"],
                                        first_kept=_child_of(tx, info["result"]),
                                        source_event_ids=(info["prompt"], info["call"],
                                                          info["result"]),
                                        summary="ran ls",
                                        tool_results=({"tool_call_id": "toolu_1",
                                                       "summary": "listing", "artifact_ref": art},)))
        info["compaction"] = comp
        info["compacted"] = tx.append("CompactionCompleted", "system", {},
                                      {"compaction_id": comp}, ts="2026-01-01T00:02:00.000Z")
    info["main"] = repo.refs.read(f"refs/sessions/{sid}/main")
    repo.refs.set_if_equals(f"refs/sessions/{sid}/alt", None, info["prompt"], message="branch")
    return repo, info


def _child_of(tx, parent: str) -> str:
    for eid in tx.appended:
        if tx.repo.graph.event(eid).parents[:1] == (parent,):
            return eid
    raise AssertionError("no child")


def test_references_of_each_type():
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    ev = {"parents": [a], "causality": {"message_id": b, "tool_call_id": c, "record_id": "x"},
          "payload": {"session": c, "text": a}}
    assert links.references("event", ev) == [a, b, c]
    msg = {"blocks": [{"type": "tool_result", "output_ref": a}, {"type": "image", "artifact_ref": b}]}
    assert links.references("message", msg) == [a, b]
    assert links.references("artifact", {"content": a}) == [a]
    assert links.references("chunks", {"chunks": [[a, 1], [b, 2], [a, 1]]}) == [a, b]
    comp = {"first_event": a, "last_event": b, "first_kept": c, "source_event_ids": [a, b],
            "previous": "", "tool_results": [{"artifact_ref": c}]}
    assert links.references("compaction", comp) == [a, b, c]
    assert links.references("snapshot", {"event": a}) == [a]
    assert links.references("bundle", {"anything": a}) == []
    assert links.references("blob", b"") == []


def test_reachable_covers_messages_artifacts_and_compactions(tmp_path):
    repo, info = build_repo(tmp_path)
    live = links.reachable(repo.objects, [info["main"]])
    for key in ("session", "root", "prompt", "call", "result", "blob", "artifact", "compaction"):
        assert info[key] in live, key
    # everything reachable is in the store, and the walk is closed under references
    for obj_id in live:
        t, body = repo.objects.get_raw(obj_id)
        assert set(links.object_references(t, body)) <= live


def test_reachable_reports_missing_objects(tmp_path):
    repo, info = build_repo(tmp_path)
    ghost = "f" * 64
    with pytest.raises(ObjectNotFound):
        links.reachable(repo.objects, [ghost])
    missing: dict[str, str] = {}
    live = links.reachable(repo.objects, [info["main"], ghost], missing=missing)
    assert missing == {ghost: ""} and ghost not in live


def test_reachable_stop_excludes_boundary(tmp_path):
    repo, info = build_repo(tmp_path)
    before = links.reachable(repo.objects, [info["prompt"]])
    after = links.reachable(repo.objects, [info["main"]], stop=before.__contains__)
    assert not after & before and info["result"] in after
