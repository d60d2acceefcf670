"""The contract every ObjectStore implementation passes.

Mix `StoreContract` into a test class that defines `make_store(self, tmp_path)`; the class gets
every test below. A new implementation overrides only the factory.
"""

from __future__ import annotations

import pytest

from ctxstore import codec
from ctxstore.errors import AmbiguousId, BadRevision, CorruptObject, ObjectNotFound
from ctxstore.objects import Event, Message, TextBlock


class StoreContract:
    def make_store(self, tmp_path):  # pragma: no cover - overridden
        raise NotImplementedError

    @pytest.fixture
    def store(self, tmp_path):
        s = self.make_store(tmp_path)
        yield s
        s.close()

    def test_put_returns_id_of_canonical_body(self, store):
        ev = Event("UserPromptSubmitted", "user", {"text": "fix the test"}, ts="2026-01-01T00:00:00.000Z")
        obj_id = store.put_object(ev)
        assert obj_id == codec.compute_id("event", codec.pack_value(ev.to_dict()))
        assert store.get(obj_id) == ev

    def test_put_twice_stores_once(self, store):
        a = store.put("value", {"x": 1})
        b = store.put("value", {"x": 1})
        assert a == b
        assert list(store).count(a) == 1

    def test_missing_id_is_clear_error(self, store):
        with pytest.raises(ObjectNotFound):
            store.get_raw("0" * 64)
        with pytest.raises(ObjectNotFound):
            store.resolve("0" * 64)

    def test_contains_and_iterate(self, store):
        ids = {store.put("value", i) for i in range(50)}
        assert all(i in store for i in ids)
        assert "f" * 64 not in store
        assert set(store) == ids

    def test_blob_roundtrip_keeps_bytes(self, store):
        data = bytes(range(256)) * 100
        obj_id = store.put_blob(data)
        assert store.get_raw(obj_id) == ("blob", data)
        assert store.get(obj_id) == data

    def test_large_and_small_values(self, store):
        big = {"text": "x" * 200_000}
        small = {"t": ""}
        ids = [store.put("value", big), store.put("value", small)]
        assert store.get(ids[0]) == big and store.get(ids[1]) == small

    def test_message_roundtrip(self, store):
        msg = Message("user", (TextBlock("hello"),), provenance={"source": "user"})
        assert store.get(store.put_object(msg)) == msg

    def test_prefix_resolution(self, store):
        ids = [store.put("value", i) for i in range(300)]
        target = ids[0]
        assert store.resolve(target[:12]) == target
        assert store.resolve(target.upper()) == target
        # with 300 ids, some 4-digit... at least two share their first hex digit
        by_first: dict[str, list[str]] = {}
        for i in ids:
            by_first.setdefault(i[0], []).append(i)
        shared = next(v for v in by_first.values() if len(v) > 1)
        with pytest.raises(BadRevision):
            store.resolve(shared[0][:1])
        with pytest.raises(ObjectNotFound):
            store.resolve("abcd" + "0" * 8 if not any(i.startswith("abcd00000000") for i in ids) else "ffff0000ffff")

    def test_ids_with_prefix_of_any_length(self, store):
        """`ids_with_prefix` is the filter of every id by `startswith`, whatever the length: a
        one-digit prefix stands for sixteen first bytes (packs index ids by first byte)."""
        ids = sorted(store.put("value", i) for i in range(300))
        store.flush()
        for prefix in ["", *"0123456789abcdef", ids[7][:2], ids[7][:3], ids[7][:33], ids[7]]:
            assert sorted(store.ids_with_prefix(prefix)) == \
                [i for i in ids if i.startswith(prefix)], prefix

    def test_ambiguous_prefix(self, store):
        ids = [store.put("value", i) for i in range(5000)]
        by4: dict[str, list[str]] = {}
        for i in ids:
            by4.setdefault(i[:4], []).append(i)
        dup = next((v for v in by4.values() if len(v) > 1), None)
        assert dup is not None  # 5000 ids in 65536 buckets: a collision is near certain
        with pytest.raises(AmbiguousId):
            store.resolve(dup[0][:4])

    def test_put_body_rejects_wrong_id(self, store):
        _, body = codec.encode_object("value", {"a": 1})
        with pytest.raises(CorruptObject):
            store.put_body("value", body, obj_id="1" * 64)

    def test_type_of(self, store):
        assert store.type_of(store.put_blob(b"abc")) == "blob"
        assert store.type_of(store.put_object(Event("FileRead"))) == "event"
