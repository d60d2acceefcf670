"""The codec: canonical form, ids, golden vectors (also checked against docs/format.md)."""

from __future__ import annotations

import ast
import math
import os
import re

import msgpack
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ctxstore import codec
from ctxstore.errors import CodecError, CorruptObject

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: (type, value, canonical body hex, id). Never change an entry: ids are forever.
GOLDEN = [
    ("value", None, "c0", "5e671f4fe10844dc1c0036e3042781ff3c86c34e2e154505fb2a52caf6b977d6"),
    ("value", 0, "00", "c3c17aceb4037d43a0d93227e85ab012d4a361c260c62ede01c6d57f7772258a"),
    ("value", -1, "ff", "8fa5f3a6aa0b13e7e69c460e6544249c373fed0ae09b559fd0d3a2edb894660b"),
    ("value", 1.5, "cb3ff8000000000000",
     "d2ba0ae3d3ac12e702ca2671a487e8b108e188f25753cfeac34d88d53d745995"),
    ("value", "hello", "a568656c6c6f",
     "2403754547a041af8e3820a45f76e28332f8c22e018c669b8e0ff1e699b44fcf"),
    ("value", [], "90", "219d25708a0557199d932d3d2688fd5125523bd79a97f9afec4560b9eb1b6a31"),
    ("value", {}, "80", "bcc67a4aa3127a657756188b2e3012e31e0515dfb397a649d559997963a9ed65"),
    ("value", {"b": 1, "a": [True, False, None]}, "82a16193c3c2c0a16201",
     "aefa374418296065284fbc14ef4ab3ebebc0a516cd5ef4d3a94291444470c4d5"),
    ("blob", b"", "", "c4a34b7985a358fa540da4cfb4d3510db7d013cd50f61305d502dcbe75f85a8f"),
    ("blob", b"hello", "68656c6c6f",
     "724b23a9f35db749986b548f5265d8921c86f379aac17d39a22f5022ec6297ce"),
    ("event", {"type": "UserPromptSubmitted", "actor": "user", "payload": {"text": "fix the test"},
               "parents": [], "generation": 1, "ts": "2026-01-01T00:00:00.000Z", "causality": {}},
     None, "99db66a954598bfa01fa2ca8c843ca04243f1ac1d196f1a7a94585ddb31a8ea6"),
    ("operation", {"parents": [], "time": "2026-01-01T00:00:00.000Z", "user": "ada", "host": "box",
                   "command": "ctx new", "description": "new session",
                   "changes": [["refs/sessions/5e671f4fe10844dc1c0036e3042781ff3c86c34e2e154505fb"
                                "2a52caf6b977d6/main", None,
                                "99db66a954598bfa01fa2ca8c843ca04243f1ac1d196f1a7a94585ddb31a8ea6"]]},
     None, "42461960edc59b20cafe8882b66760b2285413dba28e943cee24c5b462a1b86e"),
    ("workspace", {"tree": "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "base": None, "depth": 1, "files": 0,
                   "objects": [["4b825dc642cb6eb9a060e54bf8d69288fbee4904",
                                "570245bd84114448dbc7c3a23980b0c583d16100df4cf638692f8acb3ad70ebe"]]},
     None, "797a1ea3da3e780e0b349004d616843f8663d0b1c74aff5320f92cb59dddf497"),
]


@pytest.mark.parametrize("type_name,value,body_hex,obj_id", GOLDEN)
def test_golden_vectors(type_name, value, body_hex, obj_id):
    got_id, body = codec.encode_object(type_name, value)
    assert got_id == obj_id
    if body_hex is not None:
        assert body.hex() == body_hex


def _doc_vectors() -> list[tuple[str, object, str]]:
    text = open(os.path.join(ROOT, "docs", "format.md"), encoding="utf-8").read()
    section = text.split("## Golden vectors", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\|\s*`(\w+)`\s*\|\s*`(.+?)`\s*\|[^|]*\|\s*`([0-9a-f]{64})`\s*\|",
                     line)
        if m:
            rows.append((m.group(1), ast.literal_eval(m.group(2)), m.group(3)))
    return rows


def test_docs_golden_vectors_match():
    rows = _doc_vectors()
    assert len(rows) == len(GOLDEN)
    assert [(t, v, i) for t, v, _, i in GOLDEN] == rows
    for type_name, value, obj_id in rows:
        assert codec.encode_object(type_name, value)[0] == obj_id


# ---------------------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------------------

scalars = (st.none() | st.booleans() | st.integers(min_value=-(2**63), max_value=2**64 - 1)
           | st.floats(allow_nan=False, allow_infinity=False) | st.text() | st.binary())
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=25)


def _same(a, b) -> bool:
    """Equality that also tells 0.0 from -0.0 apart only where canonical form would not."""
    return codec.pack_value(a) == codec.pack_value(b)


@given(values)
def test_roundtrip_and_stable_id(value):
    obj_id, body = codec.encode_object("value", value)
    decoded = codec.decode_body("value", body)
    assert _same(decoded, value)
    assert codec.encode_object("value", decoded)[0] == obj_id
    assert codec.is_canonical(body)


@given(st.dictionaries(st.text(max_size=6), st.integers(-(2**63), 2**64 - 1), min_size=2, max_size=8),
       st.randoms())
def test_key_insertion_order_never_changes_the_id(d, rnd):
    items = list(d.items())
    rnd.shuffle(items)
    assert codec.encode_object("value", dict(items))[0] == codec.encode_object("value", d)[0]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, {1: "x"}, {"a": {b"k": 1}},
                                 [object()], 2**64, -(2**63) - 1])
def test_values_without_canonical_form_are_rejected(bad):
    with pytest.raises(CodecError):
        codec.encode_object("value", bad)


def test_negative_zero_hashes_as_zero():
    assert codec.encode_object("value", -0.0)[0] == codec.encode_object("value", 0.0)[0]
    assert codec.encode_object("value", [-0.0])[0] == codec.encode_object("value", [0.0])[0]


def test_is_canonical_rejects_unsorted_map_and_garbage():
    assert codec.is_canonical(codec.pack_value({"a": 1, "b": 2}))
    assert not codec.is_canonical(msgpack.packb({"b": 2, "a": 1}))
    assert not codec.is_canonical(msgpack.packb(1.5, use_single_float=True))
    assert not codec.is_canonical(b"\xc1")


def test_record_roundtrip_and_crc():
    obj_id, body = codec.encode_object("value", {"text": "x" * 500})
    payload, comp, dict_id = codec.Compressor().compress(body)
    assert comp == codec.COMP_ZSTD and len(payload) < len(body)
    rec = codec.encode_record(obj_id, "value", payload, comp, dict_id, len(body))
    info = codec.read_record_header(rec, 0)
    assert (info.id, info.type, info.size) == (obj_id, "value", len(rec))
    dec = codec.Decompressor(lambda _: b"")
    assert dec.decompress(codec.record_payload(rec, info), info) == body
    bad = bytearray(rec)
    bad[-1] ^= 1
    with pytest.raises(CorruptObject):
        codec.record_payload(bytes(bad), info)


def test_one_record_header_parser_rejects_an_unknown_type_code():
    """record_span is the one parser of record headers: the read path (Decompressor.read) and
    the walks share its checks, so a record with a type code no build knows is CorruptObject
    everywhere, never a KeyError."""
    from ctxstore.errors import CorruptObject

    obj_id, body = codec.encode_object("blob", b"x" * 10)
    rec = bytearray(codec.encode_record(obj_id, "blob", body, codec.COMP_NONE, 0, len(body)))
    rec[3] = 250  # the type code byte
    for parse in (lambda b: codec.record_span(b, 0), lambda b: codec.read_record_header(b, 0),
                  lambda b: codec.Decompressor(lambda _i: b"").read(b, 0)):
        with pytest.raises(CorruptObject, match="unknown object type code 250 at offset 0"):
            parse(bytes(rec))
