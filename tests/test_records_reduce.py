"""Record reduction (importers/records.py): a line kept in its event as the record plus the
strings its messages hold gives back the very line, and reducing never changes the parsed line
it reads (the record shares the parts of it that hold nothing to replace)."""

from __future__ import annotations

import copy
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import codec
from ctxstore.importers.records import keep_line, rebuild_record
from ctxstore.store.memory import MemoryStore

LONG = "a string long enough to be worth naming: " + "x" * 40
BIG = "big output line\n" * 400  # above a 4096-byte artifact threshold: a blob

keys = st.sampled_from(["text", "a/b", "t~1", "content", "0", "input", ""])
leaves = st.one_of(st.sampled_from([LONG, LONG + "!", BIG, "short", ""]), st.integers(-2**63, 2**63 - 1),
                   st.booleans(), st.none())
values = st.recursive(leaves, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                      st.dictionaries(keys, inner, max_size=4)),
                      max_leaves=20)


def _store_message(store, value) -> tuple[str, dict]:
    mid, body = codec.encode_object("message", value)
    store.put_encoded(mid, "message", body)
    return mid, codec.unpack_value(body)


@settings(max_examples=300, deadline=None)
@given(line=st.dictionaries(keys, values, max_size=5), message=values,
       implied=st.booleans())
def test_a_kept_line_rebuilds_exactly_and_the_parsed_line_is_untouched(line, message, implied):
    store = MemoryStore()
    msg = {"role": "user", "blocks": [{"type": "text", "text": LONG}], "meta": {"m": message}}
    mid, form = _store_message(store, msg)
    before = copy.deepcopy(line)
    kept = keep_line(store, line, json.dumps(line), 4096, [(mid, form)], mid if implied else "")
    assert line == before  # the record shares parts of the line: they must stay as they were
    if "raw" in kept:
        return
    caus = {"message_id": mid} if implied else {}
    assert rebuild_record(store, kept, caus) == line
    assert codec.unpack_value(codec.pack_value(kept)) is not None


def test_strings_a_message_holds_become_refs_and_long_ones_blobs():
    store = MemoryStore()
    mid, form = _store_message(store, {"role": "assistant",
                                       "blocks": [{"type": "text", "text": LONG * 8}]})
    line = {"message": {"content": [{"type": "text", "text": LONG * 8}]},
            "toolUseResult": {"stdout": BIG, "lines": ["x", LONG * 8]}, "a/b": {"~": LONG * 8}}
    kept = keep_line(store, line, json.dumps(line), 4096, [(mid, form)], mid)
    assert set(kept["refs"]) == {"/message/content/0/text", "/toolUseResult/lines/1", "/a~1b/~0"}
    assert set(kept["blobs"]) == {"/toolUseResult/stdout"}
    assert kept["record"]["message"]["content"][0]["text"] == ""
    assert kept["record"]["toolUseResult"]["lines"][0] == "x"
    assert line["message"]["content"][0]["text"] == LONG * 8  # the parsed line is unchanged
    assert rebuild_record(store, kept, {"message_id": mid}) == line
