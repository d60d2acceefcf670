"""The fast canonical encoder (ormsgpack) gives exactly the reference encoder's bytes and ids.

`codec._reference_pack` is the canonical form by definition (`canonicalize` + msgpack-python);
`codec._fast_pack` answers for the common values and returns None where only the reference may
decide. On every value: either both raise CodecError, or the bytes are equal. The golden vectors
of docs/format.md are checked by tests/test_codec.py through the public functions, which take
the fast path.
"""

from __future__ import annotations

import collections
import dataclasses
import datetime
import enum
import math
import uuid

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore import codec
from ctxstore.errors import CodecError
from tests.corpus import in_ci

codec._load_fast()
if codec._ormsgpack is None:  # pragma: no cover - a core dependency
    pytest.fail("ormsgpack is not installed", pytrace=False) if in_ci() else \
        pytest.skip("ormsgpack is not installed", allow_module_level=True)

ints = st.integers(min_value=-(2**63), max_value=2**64 - 1)
anyints = st.integers(min_value=-(2**70), max_value=2**70)  # also outside msgpack's range
floats = st.floats()  # NaN, infinities, -0.0 included
texts = st.text() | st.sampled_from(["\ud800", "a\udfffb", "é", "\U0001f600", "ｚ", ""])
scalars = (st.none() | st.booleans() | ints | anyints | floats | texts | st.binary()
           | st.just(-0.0) | st.just(math.nan))
keys = texts | st.integers(-3, 3) | st.just(True)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.tuples(inner, inner)
    | st.dictionaries(keys, inner, max_size=5) | st.dictionaries(st.text(max_size=4), inner,
                                                                   max_size=6),
    max_leaves=30)


def _both(value):
    try:
        ref = codec._reference_pack(value)
    except CodecError:
        ref = CodecError
    fast = codec._fast_pack(value)
    return ref, fast


@settings(max_examples=600, deadline=None)
@given(values)
def test_fast_encoder_equals_reference(value):
    ref, fast = _both(value)
    if fast is not None:
        assert ref is not CodecError, f"fast encoder accepted {value!r}, the reference refuses it"
        assert fast == ref
    if ref is CodecError:
        with pytest.raises(CodecError):
            codec.pack_value(value)
    else:
        assert codec.pack_value(value) == ref
        assert codec.encode_object("value", value)[1] == ref


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(max_size=6), ints | texts | floats, min_size=1, max_size=8))
def test_same_id_as_reference(d):
    try:
        ref = codec._reference_pack(d)
    except CodecError:
        return
    assert codec.encode_object("event", d)[0] == codec.compute_id("event", ref)


@settings(max_examples=300, deadline=None)
@given(values)
def test_is_canonical_agrees_with_reference(value):
    """The fast is_canonical on any msgpack body: True iff re-encoding gives the same bytes."""
    try:
        body = msgpack.packb(value, use_bin_type=True)  # unsorted, maybe float32-free garbage
    except (TypeError, ValueError, OverflowError):
        return
    try:
        decoded = codec.unpack_value(body)
        expected = codec._reference_pack(decoded) == body and \
            codec._decoded_is_canonical(decoded)
    except Exception:  # noqa: BLE001 - any failure means "not canonical"
        expected = False
    assert codec.is_canonical(body) == expected


class _Int(enum.IntEnum):
    A = 3


class _Plain(enum.Enum):
    A = 1


class _Str(str):
    pass


class _Dict(dict):
    pass


class _List(list):
    pass


@dataclasses.dataclass
class _DC:
    a: int = 1


_NT = collections.namedtuple("_NT", "a b")


@pytest.mark.parametrize("value", [
    _Int.A, _Plain.A, _Str("x"), {_Str("k"): 1}, _Dict(b=1, a=2), _List([1]), _NT(1, 2), {1},
    _DC(), datetime.datetime(2026, 1, 1), datetime.date(2026, 1, 1), uuid.UUID(int=5),
    (1, (2, 3)), bytearray(b"xy"), memoryview(b"xy"), 2**64, -(2**63) - 1, 2**64 - 1, -(2**63),
    {"a": -0.0}, [math.inf], {"f": 1.5, "g": -2.25}, "\ud800", {"\ud800": 1},
    "\xcb\x7f\xf8 looks like NaN", b"\xcb\x80\x00\x00\x00\x00\x00\x00\x00",
])
def test_unusual_values(value):
    ref, fast = _both(value)
    if fast is not None:
        assert fast == ref
    if ref is CodecError:
        with pytest.raises(CodecError):
            codec.pack_value(value)
    else:
        assert codec.pack_value(value) == ref


# -- JSON input (ctxstore.jsonparse): msgspec where it agrees with json.loads -----------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                                 max_size=4),
    max_leaves=20)


@settings(max_examples=400, deadline=None)
@given(json_values, st.booleans())
def test_jsonparse_equals_json_loads(value, as_bytes):
    import json

    from ctxstore import jsonparse

    text = json.dumps(value, ensure_ascii=False)
    expected = json.loads(text)
    if as_bytes:
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: no UTF-8 bytes hold it
            return
    else:
        data = text
    assert repr(jsonparse.loads(data)) == repr(expected)


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}', "123456789012345678901234567890",
                                  "-12345678901234567890", '"\\ud800"', "1e400", "-0", "-0.0",
                                  "[1, 2.5e-8, 18446744073709551615]"])
def test_jsonparse_edge_cases(text):
    import json

    from ctxstore import jsonparse

    expected = json.loads(text)
    for data in (text, text.encode()):
        got = jsonparse.loads(data)
        assert repr(got) == repr(expected)


@pytest.mark.parametrize("text", ["{", "", "  ", '{"a": 1} x', "\ufeff{}"])
def test_jsonparse_errors_are_json_loads_errors(text):
    import json

    from ctxstore import jsonparse

    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as got:
        jsonparse.loads(text)
    assert str(got.value) == str(want.value)
    with pytest.raises(UnicodeDecodeError):
        jsonparse.loads(b'{"a": "\xff"}')
