"""Repository fsck (`ctxstore.maintenance.fsck.check`): what the quick pass and the graph walk
each report, the exact problem each injected fault gives (kind, object, message), how events
with odd fields are read, and the progress and report a caller sees. Complements
tests/test_fsck_repo.py, whose faults are each checked by kind and id."""

from __future__ import annotations

import os

import pytest

from ctxstore.maintenance import fsck as fsck_repo
from ctxstore.objects import Artifact, Compaction, Event
from ctxstore.objects.memory import Memory
from ctxstore.repo import Repository
from ctxstore.store.pack import PACK_SUFFIX, Pack
from tests.test_links import build_repo

GHOST = "9" * 64


def _ref(repo, info, eid, name="bad"):
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/{name}", None, eid)


def _event(repo, info, type_, payload=None, causality=None, generation=None, raw=None):
    """An event on top of the session's main tip, stored as given (`raw` edits its stored
    form, for fields the Event type would not take), under its own ref."""
    gen = repo.graph.generation(info["main"]) + 1 if generation is None else generation
    value = Event(type_, "tool", payload or {}, (info["main"],), gen, "",
                  causality or {}).to_dict()
    value.update(raw or {})
    eid = repo.objects.put("event", value)
    _ref(repo, info, eid, name=f"e{eid[:8]}")
    return eid


def _problems(repo):
    return [(p.kind, p.id, p.message) for p in fsck_repo.check(repo, full=True).problems]


def test_the_quick_pass_does_not_walk_the_graph(tmp_path):
    repo, info = build_repo(tmp_path)
    ev = _event(repo, info, "MessageAdded", generation=99)
    quick = fsck_repo.check(repo)
    assert quick.problems == [] and quick.full is False and quick.to_dict()["full"] is False
    full = fsck_repo.check(repo, full=True)
    expected = repo.graph.generation(info["main"]) + 1
    assert full.full is True
    assert [(p.kind, p.id, p.message) for p in full.problems] == [
        ("generation", ev, f"event {ev} has generation 99, expected {expected}")]


def test_progress_counts_records_and_the_walk(tmp_path):
    repo, _ = build_repo(tmp_path)
    seen = []
    report = fsck_repo.check(repo, full=True, progress=lambda *a: seen.append(a))
    records = [a for a in seen if a[0] == "records"]
    walk = [a for a in seen if a[0] == "connectivity"]
    total = len(list(repo.objects))
    assert records[-1] == ("records", total, total) and report.objects == total
    assert all(type(n) is int and 0 <= n <= t == total for _, n, t in records)
    assert walk and all(type(n) is int and n > 0 and t == 0 for _, n, t in walk)
    assert report.notes and report.notes[0].startswith("retrieval index: ")
    assert report.to_dict()["notes"] == report.notes


def _damaged(tmp_path, repo, obj_id):
    """Seal the repository's pack and flip a payload byte of `obj_id`'s record; returns the
    reopened repository, the pack's name and the record's offset."""
    repo.objects.seal_active()
    repo.close()
    packs = tmp_path / ".ctx" / "objects" / "packs"
    (name,) = [p for p in os.listdir(packs) if p.endswith(PACK_SUFFIX)]
    pack = Pack(str(packs / name), sealed=True)
    off = pack.index.find(bytes.fromhex(obj_id))
    pack.close()
    data = bytearray((packs / name).read_bytes())
    data[off + 60] ^= 0xFF
    (packs / name).write_bytes(bytes(data))
    return Repository.open(tmp_path), name[:-5], off


def test_a_damaged_object_is_damaged_not_also_missing(tmp_path):
    repo, info = build_repo(tmp_path)
    art = info["artifact"]
    repo, name, off = _damaged(tmp_path, repo, art)
    graph = [(kind, oid, msg) for kind, oid, msg in _problems(repo) if kind != "checksum"]
    assert [(kind, oid) for kind, oid, _ in graph] == [("damaged", art)]
    assert graph[0][2] == f"object {art} cannot be read: object {art} in pack {name} at " \
                          f"offset {off}: checksum mismatch in object {art} at offset {off}"



def test_refs_naming_nothing_or_no_event(tmp_path):
    repo, info = build_repo(tmp_path)
    repo.refs.set_if_equals("refs/sessions/x/ghost", None, GHOST)
    repo.refs.set_if_equals("refs/sessions/x/blob", None, info["blob"])
    problems = _problems(repo)
    assert ("missing", GHOST, f"missing or unreadable object {GHOST} named by a ref or reflog") \
        in problems
    assert ("ref", info["blob"], f"ref refs/sessions/x/blob names {info['blob']}, a blob, "
                                 f"not an event") in problems


def test_tool_call_ids_from_causality_or_payload(tmp_path):
    """A pair is matched by the id in causality, or in the payload when causality has none; a
    result whose id is not a string names no call."""
    repo, info = build_repo(tmp_path)
    a = _event(repo, info, "ToolCallRequested", causality={"tool_call_id": "only_causal"})
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/main", info["main"], a)
    info["main"] = a
    b = _event(repo, info, "ToolCallRequested", payload={"tool_call_id": "only_payload"})
    info["main"] = b
    _event(repo, info, "ToolCallFinished", causality={"tool_call_id": "only_causal"},
           raw={"parents": [b]})
    _event(repo, info, "ToolCallFinished", payload={"tool_call_id": "only_payload"},
           raw={"parents": [b]})
    assert _problems(repo) == []
    odd = _event(repo, info, "ToolCallFinished", payload={"tool_call_id": 7})
    assert _problems(repo) == [("tool-pair", odd, f"tool result {odd} names no tool_call_id")]


def test_events_with_fields_of_the_wrong_type(tmp_path):
    """A payload or causality that is not a map reads as empty, a generation that is not an
    int as -1: each event is checked, none stops the walk."""
    repo, info = build_repo(tmp_path)
    expected = repo.graph.generation(info["main"]) + 1
    listy = _event(repo, info, "ToolCallFinished", raw={"payload": ["x"], "causality": ["y"]})
    texty = _event(repo, info, "MessageAdded", raw={"generation": "3"})
    assert sorted(_problems(repo)) == sorted([
        ("tool-pair", listy, f"tool result {listy} names no tool_call_id"),
        ("generation", texty, f"event {texty} has generation -1, expected {expected}")])


def test_artifact_content_must_be_a_blob_or_chunks(tmp_path):
    repo, info = build_repo(tmp_path)
    art = repo.objects.put_object(Artifact("tool_output", info["prompt"], 10))
    _event(repo, info, "ArtifactCreated", causality={"artifact_id": art})
    assert _problems(repo) == [
        ("type", art, f"artifact {art} content {info['prompt']} is a event, not a blob or "
                      f"chunks manifest")]


def test_chunks_manifests_are_checked(tmp_path):
    repo, info = build_repo(tmp_path)
    blob = repo.objects.put_blob(b"abc")
    bad = repo.objects.put("chunks", {"size": 4, "id_of_whole": GHOST, "chunks": [[blob, 3]]})
    odd = repo.objects.put("chunks", {"size": 3, "id_of_whole": GHOST,
                                    "chunks": [[info["prompt"], 3]]})
    for manifest in (bad, odd):
        art = repo.objects.put_object(Artifact("tool_output", manifest, 3))
        _event(repo, info, "ArtifactCreated", causality={"artifact_id": art})
    problems = [p for p in _problems(repo) if p[0] == "chunks"]
    assert sorted(problems) == sorted([
        ("chunks", bad, f"chunks manifest {bad} is malformed"),
        ("chunks", odd, f"chunks manifest {odd} names {info['prompt']}, a event")])


def test_a_memory_breaking_the_rules_is_named(tmp_path):
    repo, info = build_repo(tmp_path)
    bad = repo.objects.put_object(Memory("project", "/x", "fact", "no sources", ()))
    _event(repo, info, "MemoryWritten", payload={"memory_id": bad, "scope": "project",
                                                 "scope_key": "/x"})
    problems = _problems(repo)
    assert problems and all(kind == "memory" and oid == bad and msg.startswith(f"memory {bad}: ")
                            for kind, oid, msg in problems)
    assert f"memory {bad}: no source refs (invariant 10: a memory names the events, messages " \
           f"or artifacts it came from)" in [msg for *_, msg in problems]


def test_a_memory_that_is_no_memory_is_named(tmp_path):
    repo, info = build_repo(tmp_path)
    junk = repo.objects.put("memory", {"scope": "global"})  # fields missing: not a Memory
    _event(repo, info, "MemoryWritten", payload={"memory_id": junk})
    ((kind, oid, msg),) = _problems(repo)
    assert (kind, oid) == ("memory", junk) and msg.startswith(f"memory {junk}: ")
    assert len(msg) > len(f"memory {junk}: None")


def test_a_pending_call_summarized_away_is_named(tmp_path):
    """Invariant 2: a call with no result at the tip must not be among the events a compaction
    on that branch replaced (the open-call rule reads the events' payload and causality)."""
    repo, info = build_repo(tmp_path)
    call, comp, _ = _pending_setup(repo, info)
    problems = [p for p in _problems(repo) if p[0] == "tool-pair"]
    assert [(kind, oid) for kind, oid, _ in problems] == [("tool-pair", call)]
    assert problems[0][2] == f"refs/sessions/{info['session']}/main: pending tool call c_open " \
                             f"({call[:12]}) was summarized away by compaction {comp[:12]}"


def _pending_setup(repo, info, kind="CompactionCompleted"):
    """The session's main tip: a compaction (event `kind`) over a call still pending there."""
    call = _event(repo, info, "ToolCallRequested", payload={"tool_call_id": "c_open"},
                  causality={"tool_call_id": "c_open"})
    comp = repo.objects.put_object(Compaction(session=info["session"], first_event=call,
                                            last_event=call, first_kept="",
                                            source_event_ids=(call,)))
    tip = repo.objects.put("event", Event(kind, "system", {}, (call,),
                                        repo.graph.generation(call) + 1, "",
                                        {"compaction_id": comp}).to_dict())
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/main", info["main"], tip)
    return call, comp, tip


def test_a_pending_call_is_checked_once_per_tip_whatever_other_refs_exist(tmp_path):
    """Refs outside refs/sessions/ (sorted before it) do not stop the check, and two branches
    at the same tip give one problem, not two."""
    repo, info = build_repo(tmp_path)
    call, _, tip = _pending_setup(repo, info)
    repo.refs.set_if_equals("refs/archive/old", None, info["main"])
    repo.refs.set_if_equals(f"refs/sessions/{info['session']}/same", None, tip)
    assert [(k, oid) for k, oid, _ in _problems(repo) if k == "tool-pair"] == \
           [("tool-pair", call)]


def test_only_a_completed_compaction_replaces_events(tmp_path):
    repo, info = build_repo(tmp_path)
    _pending_setup(repo, info, "CompactionProposed")
    assert [p for p in _problems(repo) if p[0] == "tool-pair"] == []


def test_a_compaction_over_a_line_with_a_missing_event(tmp_path):
    """The first-parent walk of a compaction range stops at an event the store lacks: the
    missing event and the range are reported, nothing crashes."""
    repo, info = build_repo(tmp_path)
    gen = repo.graph.generation(info["main"]) + 5
    orphan = repo.objects.put("event", Event("MessageAdded", "agent", {}, (GHOST,), gen,
                                           "").to_dict())
    comp = repo.objects.put_object(Compaction(session=info["session"], first_event=info["prompt"],
                                            last_event=orphan, first_kept="",
                                            source_event_ids=(orphan,)))
    _event(repo, info, "CompactionCompleted", causality={"compaction_id": comp},
           raw={"parents": [orphan], "generation": gen + 1})
    kinds = {(kind, oid) for kind, oid, _ in _problems(repo)}
    assert ("missing", GHOST) in kinds and ("compaction", comp) in kinds


@pytest.mark.parametrize("full", [False, True])
def test_report_says_which_pass_ran(tmp_path, full):
    repo, _ = build_repo(tmp_path)
    report = fsck_repo.check(repo, full=full)
    assert report.ok and report.full is full and report.to_dict()["ok"] is True


def test_a_damaged_ref_file_is_one_problem_naming_it(tmp_path):
    repo, info = build_repo(tmp_path)
    path = repo.refs.root / "refs" / "sessions" / info["session"] / "alt"
    path.write_text("not an id\n")
    problems = fsck_repo.check(repo).problems
    assert [(p.kind, p.id) for p in problems] == [("ref", None)]
    assert str(path) in problems[0].message and "not an object id" in problems[0].message


def test_a_file_under_refs_that_is_no_ref_is_named(tmp_path):
    repo, info = build_repo(tmp_path)
    stray = repo.refs.root / "refs" / "sessions" / info["session"] / "main~"
    stray.write_text(info["main"] + "\n")
    (repo.refs.root / "refs" / "sessions" / info["session"] / "alt.lock").write_text("x")
    problems = [(p.kind, p.message) for p in fsck_repo.check(repo).problems]
    assert problems == [("ref", f"ref file refs/sessions/{info['session']}/main~ is not a valid "
                                f"ref (bad name or content)")]


def test_a_damaged_reflog_line_is_named(tmp_path):
    repo, info = build_repo(tmp_path)
    name = f"refs/sessions/{info['session']}/alt"
    log = repo.refs.root / "logs" / name
    with open(log, "a") as f:
        f.write("garbage line\n")
    problems = fsck_repo.check(repo).problems
    assert [(p.kind, p.id) for p in problems] == [("reflog", None)]
    assert str(log) in problems[0].message and "garbage line" in problems[0].message


def test_head_is_a_root_and_a_damaged_head_is_named(tmp_path):
    repo, info = build_repo(tmp_path)
    (repo.refs.root / "HEAD").write_text(GHOST + "\n")  # detached at an object that is gone
    problems = [(p.kind, p.id, p.message) for p in fsck_repo.check(repo).problems]
    assert problems == [("ref", GHOST, f"HEAD names missing object {GHOST}")]
    (repo.refs.root / "HEAD").write_text("nonsense\n")
    problems = [(p.kind, p.id) for p in fsck_repo.check(repo).problems]
    messages = [p.message for p in fsck_repo.check(repo).problems]
    assert problems == [("ref", None)] and messages[0].startswith("HEAD: ")


def test_a_store_without_packs_is_rehashed(tmp_path):
    """A repository over another store (here in memory) has each object re-hashed: a body
    that does not hash to its id is named, and every object is counted."""
    repo = Repository.memory()
    ids = [repo.objects.put("value", {"n": i}) for i in range(3)]
    report = fsck_repo.check(repo)
    assert report.ok and report.objects == 3
    repo.objects._objects[ids[1]] = ("value", b"\x01")
    report = fsck_repo.check(repo)
    assert report.objects == 3
    assert [(p.kind, p.id, p.message) for p in report.problems] == [
        ("hash", ids[1], f"object {ids[1]} does not hash to its id")]


def test_store_problems_keep_their_messages(tmp_path):
    repo, info = build_repo(tmp_path)
    blob = info["blob"]
    repo, name, off = _damaged(tmp_path, repo, blob)
    problems = fsck_repo.check(repo).problems
    assert [(p.kind, p.id, p.message) for p in problems] == [
        ("checksum", blob, f"object {blob} in pack {name} at offset {off}: checksum mismatch in "
                           f"object {blob} at offset {off}")]


def test_report_as_json_names_its_fields(tmp_path):
    repo, info = build_repo(tmp_path)
    ev = _event(repo, info, "MessageAdded", generation=99)
    out = fsck_repo.check(repo, full=True).to_dict()
    assert out["ok"] is False and out["objects"] == len(list(repo.objects))
    assert [p["id"] for p in out["problems"]] == [ev] and out["problems"][0]["kind"] == \
        "generation"


def test_an_event_whose_parent_is_no_event(tmp_path):
    repo, info = build_repo(tmp_path)
    ev = _event(repo, info, "MessageAdded", raw={"parents": [info["blob"]], "generation": 1})
    assert _problems(repo) == [
        ("type", ev, f"event {ev} has parent {info['blob']}, a blob, not an event")]


def test_a_result_without_a_request_is_named(tmp_path):
    """Only a ToolCallRequested opens a call: an earlier event of another type with the same
    tool_call_id does not."""
    repo, info = build_repo(tmp_path)
    asked = _event(repo, info, "PermissionRequested", causality={"tool_call_id": "c_x"})
    info["main"] = asked
    res = _event(repo, info, "ToolCallFinished", causality={"tool_call_id": "c_x"})
    assert _problems(repo) == [
        ("tool-pair", res, f"tool result {res} (c_x) has no earlier ToolCallRequested")]


def test_a_compaction_that_replaced_nothing_may_have_no_range(tmp_path):
    """No range and no sources: a compaction the source recorded without replacing anything.
    Sources with no range, or half a range, are problems."""
    repo, info = build_repo(tmp_path)
    empty = repo.objects.put_object(Compaction(session=info["session"], first_event="",
                                             last_event="", first_kept=""))
    _event(repo, info, "CompactionCompleted", causality={"compaction_id": empty})
    assert _problems(repo) == []
    sourced = repo.objects.put_object(Compaction(session=info["session"], first_event="",
                                               last_event="", first_kept="",
                                               source_event_ids=(info["prompt"],)))
    half = repo.objects.put_object(Compaction(session=info["session"], first_event="",
                                            last_event=info["prompt"], first_kept=""))
    for comp in (sourced, half):
        _event(repo, info, "CompactionCompleted", causality={"compaction_id": comp})
    assert sorted(_problems(repo)) == sorted([
        ("compaction", sourced, f"compaction {sourced}: first_event '' is not a stored event"),
        ("compaction", sourced, f"compaction {sourced}: last_event '' is not a stored event"),
        ("compaction", half, f"compaction {half}: first_event '' is not a stored event")])


def _compaction_event(repo, info, **fields):
    comp = repo.objects.put_object(Compaction(session=info["session"], **fields))
    _event(repo, info, "CompactionCompleted", causality={"compaction_id": comp})
    return comp


def test_compaction_ranges_each_fault_in_words(tmp_path):
    """Every compaction is checked (a bad one does not stop the others), each fault with the
    words that say what is wrong."""
    repo, info = build_repo(tmp_path)
    long = "x" * 80
    absent = _compaction_event(repo, info, first_event=long, last_event=info["prompt"],
                               first_kept="", source_event_ids=(GHOST,))
    apart = _compaction_event(repo, info, first_event=info["result"], last_event=info["prompt"],
                              first_kept="")
    kept_off = _compaction_event(repo, info, first_event=info["prompt"],
                                 last_event=info["result"], first_kept=info["call"])
    kept_last = _compaction_event(repo, info, first_event=info["prompt"],
                                  last_event=info["result"], first_kept=info["result"])
    p, r = info["prompt"], info["result"]
    kept = info["call"]
    expected = [
        ("compaction", absent, f"compaction {absent}: first_event {'x' * 64!r} is not a stored "
                               f"event"),
        ("compaction", absent, f"compaction {absent}: source event {GHOST} is not a stored "
                               f"event"),
        ("compaction", apart, f"compaction {apart}: first_event {r[:12]} is not on last_event "
                              f"{p[:12]}'s first-parent line"),
        ("compaction", kept_off, f"compaction {kept_off}: first_kept {kept[:12]}'s first-parent "
                                 f"chain does not reach last_event {r[:12]}"),
        ("compaction", kept_last, f"compaction {kept_last}: first_kept {r[:12]}'s first-parent "
                                  f"chain does not reach last_event {r[:12]}")]
    problems = [x for x in _problems(repo) if x[0] == "compaction"]
    assert sorted(problems) == sorted(expected)


def test_a_chunked_artifact_with_blob_chunks_is_clean(tmp_path):
    repo, info = build_repo(tmp_path)
    a, b = repo.objects.put_blob(b"abc"), repo.objects.put_blob(b"de")
    manifest = repo.objects.put("chunks", {"size": 5, "id_of_whole": GHOST,
                                         "chunks": [[a, 3], [b, 2]]})
    art = repo.objects.put_object(Artifact("tool_output", manifest, 5))
    _event(repo, info, "ArtifactCreated", causality={"artifact_id": art})
    assert _problems(repo) == []
