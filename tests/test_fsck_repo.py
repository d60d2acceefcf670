"""Repository fsck finds each injected fault and names the object it is about."""

from __future__ import annotations

import os

from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.objects import Compaction, Event, Message, ToolResultBlock
from ctxstore.repo import Repository
from ctxstore.store.pack import PACK_SUFFIX, Pack
from tests.test_links import build_repo

GHOST = "9" * 64


def _kinds(problems):
    return {p.kind for p in problems}


def _point(repo, info, eid, name="bad"):
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/{name}", None, eid)


def test_healthy_repo_has_no_problems(tmp_path):
    repo, _ = build_repo(tmp_path)
    seen = []
    report = fsck_repo.check(repo, full=True, progress=lambda *a: seen.append(a))
    assert report.problems == [] and report.objects == len(list(repo.objects))
    assert {s[0] for s in seen} == {"records", "connectivity"}


def test_missing_object_is_named_with_its_referrer(tmp_path):
    repo, info = build_repo(tmp_path)
    msg = repo.objects.put_object(Message("tool", (ToolResultBlock("t", output_ref=GHOST),)))
    ev = repo.objects.put_object(Event("MessageAdded", "agent", {}, (info["main"],),
                                     repo.graph.generation(info["main"]) + 1, "",
                                     {"message_id": msg}))
    _point(repo, info, ev)
    problems = fsck_repo.check(repo, full=True).problems
    assert [(p.kind, p.id) for p in problems] == [("missing", GHOST)]
    assert msg in problems[0].message


def test_wrong_generation(tmp_path):
    repo, info = build_repo(tmp_path)
    ev = repo.objects.put_object(Event("MessageAdded", "agent", {}, (info["main"],), 99, ""))
    _point(repo, info, ev)
    problems = fsck_repo.check(repo, full=True).problems
    assert [(p.kind, p.id) for p in problems] == [("generation", ev)]
    assert "expected" in problems[0].message


def test_split_tool_pair(tmp_path):
    repo, info = build_repo(tmp_path)
    gen = repo.graph.generation(info["main"]) + 1
    ev = repo.objects.put_object(Event("ToolCallFinished", "tool", {"tool_call_id": "toolu_zz"},
                                     (info["main"],), gen, "", {"tool_call_id": "toolu_zz"}))
    _point(repo, info, ev)
    problems = fsck_repo.check(repo, full=True).problems
    assert [(p.kind, p.id) for p in problems] == [("tool-pair", ev)]


def test_invalid_compaction_range(tmp_path):
    repo, info = build_repo(tmp_path)
    comp = repo.objects.put_object(Compaction(session=info["session"], first_event=info["result"],
                                            last_event=info["prompt"], first_kept=info["root"],
                                            source_event_ids=(GHOST,)))
    gen = repo.graph.generation(info["main"]) + 1
    ev = repo.objects.put_object(Event("CompactionCompleted", "system", {}, (info["main"],), gen,
                                     "", {"compaction_id": comp}))
    _point(repo, info, ev)
    problems = fsck_repo.check(repo, full=True).problems
    assert {p.kind for p in problems} == {"compaction", "missing"}
    assert all(p.id in (comp, GHOST) for p in problems)
    assert len([p for p in problems if p.kind == "compaction"]) == 1  # missing source: stop there


def test_compaction_range_not_on_first_parent_line(tmp_path):
    repo, info = build_repo(tmp_path)
    comp = repo.objects.put_object(Compaction(session=info["session"], first_event=info["result"],
                                            last_event=info["prompt"], first_kept=info["call"]))
    gen = repo.graph.generation(info["main"]) + 1
    ev = repo.objects.put_object(Event("CompactionCompleted", "system", {}, (info["main"],), gen,
                                     "", {"compaction_id": comp}))
    _point(repo, info, ev)
    problems = fsck_repo.check(repo, full=True).problems
    assert [p.kind for p in problems] == ["compaction"] and "first_event" in problems[0].message


def test_ref_to_missing_and_to_non_event(tmp_path):
    repo, info = build_repo(tmp_path)
    repo.refs.set_if_equals("refs/sessions/x/ghost", None, GHOST)
    repo.refs.set_if_equals("refs/sessions/x/blob", None, info["blob"])
    problems = fsck_repo.check(repo, full=True).problems
    kinds = {(p.kind, p.id) for p in problems}
    assert ("ref", GHOST) in kinds and ("ref", info["blob"]) in kinds
    assert ("reflog", GHOST) in kinds


def test_damaged_record(tmp_path):
    repo, info = build_repo(tmp_path)
    repo.objects.seal_active()
    repo.close()
    packs = tmp_path / ".ctx" / "objects" / "packs"
    (pack,) = [p for p in os.listdir(packs) if p.endswith(PACK_SUFFIX)]
    data = bytearray((packs / pack).read_bytes())
    p = Pack(str(packs / pack), sealed=True)
    off = p.index.find(bytes.fromhex(info["prompt"]))
    p.close()
    data[off + 60] ^= 0xFF  # a payload byte of the prompt event
    (packs / pack).write_bytes(bytes(data))
    repo = Repository.open(tmp_path)
    quick = fsck_repo.check(repo).problems  # the store-level pass names the damaged record
    assert ("checksum", info["prompt"]) in {(p.kind, p.id) for p in quick}
    full = fsck_repo.check(repo, full=True).problems  # the graph walk cannot read it either
    assert ("damaged", info["prompt"]) in {(p.kind, p.id) for p in full}
