"""The Claude Code importer's uuid index (claude_code._Index): what a dict of _Entry gave."""

from __future__ import annotations

from ctxstore.importers.claude_code import _Entry, _Index

A, B = "a" * 64, "b" * 64


def test_entries_read_back_as_stored_and_a_stored_back_change_sticks():
    main, side = object(), object()
    index = _Index()
    index["u1"] = _Entry(main, None, A, 7, 0)
    index["u2"] = _Entry(side, "u1", B, 2**40, 3)
    e = index.get("u2")
    assert (e.builder, e.parent, e.event, e.gen, e.line, e.marked) == (side, "u1", B, 2**40, 3, False)
    assert "u1" in index and "u3" not in index and len(index) == 2
    assert index.get("u3") is None and index.get("u3", e) is e
    got = index["u1"]
    got.marked = True
    assert index["u1"].marked is False  # a copy: changes count once stored back
    index["u1"] = got
    assert index["u1"].marked is True
    index["u1"] = _Entry(side, "u0", B, 8, 1)  # a uuid seen again: its newest line wins
    e = index["u1"]
    assert (e.builder, e.parent, e.event, e.gen, e.line, e.marked) == (side, "u0", B, 8, 1, False)
    assert len(index) == 2
