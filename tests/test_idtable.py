"""The importers' flat id tables (importers/idtable.py): what a dict keyed by the id string gave,
with hash collisions forced, UUID and non-UUID ids, and the Claude Code tables built on them."""

from __future__ import annotations

import json
import uuid as uuidlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.importers import import_paths
from ctxstore.importers.claude_code import _Entry, _Index, chain_of
from ctxstore.importers.idtable import CallTable, IdCounts, IdTable, id_of, key_of
from ctxstore.repo import Repository

U1 = "0b5e8c2a-1f3d-4e5a-9b7c-6d8e9f0a1b2c"
ASCII_UUID = "30313233-3435-3637-3839-616263646566"  # its 16 raw bytes are "0123456789abcdef"
EV1, EV2 = "a" * 64, "b" * 64


def _collide(_key: bytes) -> int:
    return 7  # every id hashes alike: only the stored key bytes tell them apart


def test_keys_read_back_exactly():
    for s in (U1, ASCII_UUID, U1.upper(), U1 + "-3", "toolu_01ABC", "msg_01-26", "", "é\ud800x",
              "0123456789abcdef", "0b5e8c2a 1f3d 4e5a 9b7c 6d8e9f0a1b2c", "g" * 8 + U1[8:]):
        assert id_of(key_of(s)) == s
    table = IdTable()
    assert [table.add(s) for s in ("é\ud800x", "é\ud801x", "")] == [0, 1, 2]
    assert list(table) == ["é\ud800x", "é\ud801x", ""]


def test_colliding_hashes_never_take_one_id_for_another():
    table = IdTable(hash=_collide)
    ids = [U1, ASCII_UUID, "0123456789abcdef", U1.upper()] + [f"id-{i}" for i in range(100)]
    rows = [table.add(s) for s in ids]
    assert rows == list(range(len(ids)))  # every id its own row, through growth
    fresh = [s.encode("utf-8").decode("utf-8") for s in ids]  # new objects: no memo by identity
    assert [table.find(s) for s in fresh] == rows
    assert [table.add(s) for s in fresh] == rows and len(table) == len(ids)
    assert table.find("id-100") == -1 and "id-100" not in table and 42 not in table
    assert list(table) == ids and table.id_at(2) == "0123456789abcdef"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.uuids().map(str), st.text(max_size=12),
                          st.sampled_from([U1, ASCII_UUID, "0123456789abcdef"])), max_size=80),
       st.integers(min_value=1, max_value=4))
def test_a_table_behaves_like_a_dict_of_first_rows(ids, spread):
    table = IdTable(hash=lambda k: hash(k) % spread)  # a few hash values: many collisions
    ref: dict[str, int] = {}
    for s in ids:
        assert table.find(s) == ref.get(s, -1)
        assert table.add(s) == ref.setdefault(s, len(ref))
    assert [table.id_at(r) for r in range(len(table))] == list(ref)


def test_call_table_and_counts_read_back_what_was_set():
    calls = CallTable(hash=_collide)
    calls["toolu_1"] = (EV1, "Bash")
    calls["toolu_2"] = (EV2, "Read")
    calls["toolu_1"] = (EV2, "Edit")  # a call id seen again: the newest wins, as a dict gave
    assert calls.get("toolu_1") == (EV2, "Edit") and calls.get("toolu_2") == (EV2, "Read")
    assert calls.get("toolu_3") is None and len(calls) == 2
    with pytest.raises(ValueError, match="not an event id"):
        calls["toolu_4"] = ("abcd", "Bash")  # hex, but not 32 bytes
    parts = IdCounts(hash=_collide)
    assert parts.get("msg_1", 0) == 0
    parts["msg_1"] = parts.get("msg_1", 0) + 1
    parts["msg_2"] = 5
    parts["msg_1"] = parts.get("msg_1", 0) + 1
    assert (parts.get("msg_1"), parts.get("msg_2"), parts.get("msg_3")) == (2, 5, None)


def test_uuid_index_over_a_colliding_table_links_each_line_to_its_own_parent():
    main = object()
    index = _Index(IdTable(hash=_collide))
    index[U1] = _Entry(main, None, EV1, 1, 0)
    index[ASCII_UUID] = _Entry(main, U1, EV2, 2, 0)
    index["0123456789abcdef"] = _Entry(main, ASCII_UUID, EV1, 3, 1)
    e = index.get("0123456789abcdef")
    assert (e.parent, e.event, e.gen, e.line) == (ASCII_UUID, EV1, 3, 1)
    assert index.get(ASCII_UUID).parent == U1 and index.get(U1).parent is None
    index.mark_ancestors("0123456789abcdef")
    assert [index[u].marked for u in (U1, ASCII_UUID, "0123456789abcdef")] == [True, True, True]
    assert "nope" not in index and index.get("nope") is None and len(index) == 3


def _reference_chain(records):
    """chain_of as it was (a dict of parents and a set): the oracle."""
    parents, leaf = {}, ""
    for rec in records:
        u = rec.get("uuid")
        if not isinstance(u, str):
            continue
        p = rec.get("parentUuid")
        if p is None:
            p = rec.get("logicalParentUuid")
        parents[u] = p if isinstance(p, str) else None
        if rec.get("type") in ("user", "assistant") and not rec.get("isSidechain"):
            leaf = u
    if not leaf:
        return None
    chain, cur = set(), leaf
    while cur is not None and cur not in chain and cur in parents:
        chain.add(cur)
        cur = parents[cur]
    return chain


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.one_of(st.none(), st.integers(0, 14)),
                          st.sampled_from(["user", "assistant", "system"]), st.booleans(),
                          st.booleans()), max_size=30))
def test_resume_chain_is_the_dict_walk_for_uuid_and_other_ids(lines):
    for name in (lambda i: str(uuidlib.UUID(int=i)), lambda i: f"u-{i}"):
        records = [{"uuid": name(u), "type": t, "isSidechain": side,
                    ("parentUuid" if not logical else "logicalParentUuid"):
                    None if p is None else name(p)}
                   for u, p, t, side, logical in lines]
        got = chain_of(records)
        want = _reference_chain(records)
        assert (None if got is None else set(got)) == want
        if want is not None:
            assert len(got) == len(want)
            assert all(u in got for u in want) and not any(f"x{u}" in got for u in want)


def _branch_shapes(repo, report) -> list:
    """Per session, each branch's event types (sorted: ids and uuids differ between the two
    imports, the shape must not)."""
    return [sorted(sorted(repo.graph.event(e).type for e in repo.graph.reachable_events([tip]))
                   for tip in repo.branches(stats.session).values())
            for stats in report.sessions]


def test_a_file_with_non_uuid_ids_imports_as_with_uuids(tmp_path, corpus):
    """A real transcript with two branches, and the same lines with every uuid (and tool id)
    rewritten to ids that are not UUIDs: the same sessions, branches and events."""
    src = corpus / "claude-code" / "ccl_experiments-ideas_progress-file-history-snapshot_v2.1.42.jsonl"
    names: dict[str, str] = {}

    def rename(v):
        if isinstance(v, dict):
            return {k: (names.setdefault(x, f"id-{len(names)}-{x[:5]}")
                        if k in ("uuid", "parentUuid", "logicalParentUuid", "tool_use_id", "id",
                                 "sourceToolUseID", "leafUuid") and isinstance(x, str)
                        else rename(x)) for k, x in v.items()}
        if isinstance(v, list):
            return [rename(x) for x in v]
        return v

    lines = [json.loads(x) for x in src.read_text(encoding="utf-8").splitlines() if x.strip()]
    other = tmp_path / src.name
    other.write_text("".join(json.dumps(rename(x)) + "\n" for x in lines), encoding="utf-8")
    assert names and not any(len(v) == 36 for v in names.values())
    got = []
    for path in (src, other):
        repo = Repository.memory()
        report = import_paths(repo, [path])
        got.append((report.events, len(report.warnings), [s.tool_pairs for s in report.sessions],
                    [len(s.branches) for s in report.sessions], _branch_shapes(repo, report)))
    assert got[0] == got[1]
    assert got[0][3] == [2]  # main and a rewind: the tree was built, not flattened
