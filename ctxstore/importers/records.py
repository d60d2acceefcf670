"""Records: each original transcript line, kept so export can write it back JSON-equal.

A record is `{format, line, messages?, refs?, blobs?, raw?}`. A line's content is mostly what
the Message mapped from it already holds (text, thinking and its signature, tool input,
tool output), so a string of the line that is exactly a string of one of the line's messages
is left out and named instead: `refs[pointer] = [k, *path]`, `k` indexing `messages` (ids),
`path` the keys from the message's stored form to the string. Strings longer than the
artifact threshold that no message holds move to blobs named by JSON pointer; those are the
same bytes (so the same blob) as the artifact of a large tool output, which is then stored
once. Before a reduced record is stored, each ref is read back from the message it names as
export will read it and compared with the string it replaced; if one differs, the whole line is
kept. The record is the line with "" at exactly those pointers (and the blobs'), so that is the
whole of "the record plus the messages give back the line".
`raw` holds the text of a line that did not parse or has no canonical encoding (huge ints,
lone surrogates), so nothing is ever dropped.
"""

from __future__ import annotations

import json
from typing import Any

from .. import codec
from ..chunking import ChunkParams, put_large, read_content
from ..errors import CodecError
from ..objects.frozen import thaw

#: Sentinel value yielded for lines that are not a JSON object.
MALFORMED = object()

#: Shorter strings stay in the record: a reference would cost about as much as the string.
MIN_REF_CHARS = 24
#: A message is named only if the strings it stands for total at least this many characters.
MIN_MESSAGE_GAIN = 256


# ---------------------------------------------------------------------------------------------
# Reducing a line

def message_strings(messages: list[dict]) -> dict[str, list]:
    """string -> [k, *path] for every string of at least MIN_REF_CHARS in the decoded messages
    (the first place a string occurs wins)."""
    out: dict[str, list] = {}
    for k, msg in enumerate(messages):
        _strings_of(msg, [k], out)
    return out


def _strings_of(value: Any, path: list, out: dict[str, list]) -> None:
    """Add the long strings under `value` (a dict or list) to `out`, depth first in key order.
    The path of a string is built only when it is kept: most strings are short or repeated."""
    items = value.items() if type(value) is dict else enumerate(value)
    for key, v in items:
        t = type(v)
        if t is str:
            if len(v) >= MIN_REF_CHARS and v not in out:
                out[v] = [*path, key]
        elif t is dict or t is list:
            path.append(key)
            _strings_of(v, path, out)
            path.pop()
        elif isinstance(v, str):
            if len(v) >= MIN_REF_CHARS and v not in out:
                out[v] = [*path, key]
        elif isinstance(v, (dict, list)):
            path.append(key)
            _strings_of(v, path, out)
            path.pop()


class _Reducer:
    def __init__(self, store, threshold: int, strings: dict[str, list],
                 chunking: ChunkParams | None = None) -> None:
        self.objects = store
        self.chunking = chunking
        self.threshold = threshold
        self.strings = strings
        self.refs: dict[str, list] = {}
        self.blobs: dict[str, str] = {}
        self.blob_text: dict[str, str] = {}  # pointer -> the string a blob holds (for the check)
        self.ref_text: dict[str, str] = {}  # pointer -> the string a ref stands for
        self.parts: dict[str, tuple] = {}  # pointer -> its keys and indexes (for _put)
        self._path: list = []

    def keep_paying_refs(self, line: Any, free: set[int]) -> None:
        """Drop the refs into a message that save fewer than MIN_MESSAGE_GAIN characters (naming
        the message costs an id, except for the `free` ones), putting their strings back."""
        gain: dict[int, int] = {k: MIN_MESSAGE_GAIN for k in free}
        for pointer, ref in self.refs.items():
            gain[ref[0]] = gain.get(ref[0], 0) + len(self.ref_text[pointer])
        for pointer in [p for p, ref in self.refs.items() if gain[ref[0]] < MIN_MESSAGE_GAIN]:
            _put(line, self.parts[pointer], self.ref_text[pointer])
            del self.refs[pointer]

    def walk(self, value: Any) -> Any:
        """`value` with the strings a message holds (refs) and the long ones (blobs) replaced by
        "". Pointers are JSON pointers (RFC 6901); one is built only for a string that is
        replaced. Only the dicts and lists on the way to a replaced string are copied; the rest
        is shared with `value` (neither is changed afterwards, except by `_put` on the copy)."""
        self._path = []
        if isinstance(value, (dict, list)):
            self._find(value, dict if isinstance(value, dict) else list)
        elif isinstance(value, str):
            return self._leaf(value)
        if not self.parts:
            return value
        root = dict(value) if isinstance(value, dict) else list(value)
        copies: dict[tuple, Any] = {(): root}
        for parts in self.parts.values():
            target = root
            for i in range(len(parts) - 1):
                inner = copies.get(parts[:i + 1])
                if inner is None:
                    inner = target[parts[i]]
                    inner = dict(inner) if isinstance(inner, dict) else list(inner)
                    target[parts[i]] = copies[parts[:i + 1]] = inner
                target = inner
            target[parts[-1]] = ""
        return root

    def _find(self, value: Any, t: type) -> None:
        """Record the strings of one dict or list to replace (`_leaf`). Strings that stay
        (short, or in no message and short of the blob size) and other scalars cost no call:
        they are nearly all of a line."""
        path = self._path
        strings = self.strings
        big = self.threshold // 4
        for key, v in (value.items() if t is dict else enumerate(value)):
            vt = type(v)
            if vt is str:
                n = len(v)
                if n <= big and (n < MIN_REF_CHARS or v not in strings):
                    continue
                path.append(key)
                self._leaf(v)
            elif vt is dict or vt is list:
                path.append(key)
                self._find(v, vt)
            elif vt in _SCALARS:
                continue
            else:
                path.append(key)
                if isinstance(v, str):
                    self._leaf(v)
                elif isinstance(v, (dict, list)):
                    self._find(v, dict if isinstance(v, dict) else list)
            path.pop()

    def _pointer(self) -> str:
        parts = tuple(self._path)
        pointer = _POINTERS.get(parts)
        if pointer is None:
            pointer = "".join(f"/{_esc(p)}" if type(p) is str else f"/{p}" for p in parts)
            if len(_POINTERS) >= _POINTERS_MAX:
                _POINTERS.clear()
            _POINTERS[parts] = pointer
        self.parts[pointer] = parts
        return pointer

    def _leaf(self, value: str) -> Any:
        if len(value) >= MIN_REF_CHARS:
            ref = self.strings.get(value)
            if ref is not None:
                path = self._pointer()
                self.refs[path] = ref
                self.ref_text[path] = value
                return ""
        if len(value) > self.threshold // 4 and len(
                data := value.encode("utf-8", "surrogatepass")) > self.threshold:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return value
            path = self._pointer()
            self.blobs[path] = put_large(self.objects, data, self.chunking)
            self.blob_text[path] = value
            return ""
        return value


_SCALARS = frozenset({int, float, bool, type(None), bytes})

#: path -> JSON pointer: the same few paths (message.content.0.text, ...) recur on every line
_POINTERS: dict[tuple, str] = {}
_POINTERS_MAX = 4096


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unesc(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def _set(line: Any, pointer: str, text: Any) -> None:
    parts = [_unesc(p) for p in pointer.split("/")[1:]]
    target = line
    for p in parts[:-1]:
        target = target[int(p)] if isinstance(target, list) else target[p]
    last = parts[-1]
    if isinstance(target, list):
        target[int(last)] = text
    else:
        target[last] = text


def _put(line: Any, parts: tuple, text: Any) -> None:
    """`_set` by the keys and indexes the walk went through (no pointer to parse)."""
    target = line
    for p in parts[:-1]:
        target = target[p]
    target[parts[-1]] = text


def _follow(value: Any, path: list) -> Any:
    for key in path:
        value = value[key]
    if not isinstance(value, str):
        raise KeyError(path)
    return value


# ---------------------------------------------------------------------------------------------
# Keeping a line in its event, and getting it back

def keep_line(store, value: Any, text: str, threshold: int,
              messages: list[tuple[str, dict]] = (), implied: str = "",
              chunking: ChunkParams | None = None) -> dict[str, Any]:
    """The fields of `payload.source` that keep one line (see the module docstring).

    `messages` are (id, decoded stored form) of the Messages mapped from the line (and the
    message of the call a tool result answers); `implied` is the carrying event's
    `causality.message_id`, which refs may use without listing it.
    """
    if value is MALFORMED:
        return {"raw": text}
    try:
        ids = [mid for mid, _ in messages]
        red = _Reducer(store, threshold, message_strings([m for _, m in messages]), chunking)
        line = red.walk(value)
        red.keep_paying_refs(line, free={k for k, mid in enumerate(ids) if mid == implied})
        if red.refs:
            kept = _reduced(value, line, red, messages, implied)
            if kept is not None:
                return kept
            red = _Reducer(store, threshold, {}, chunking)  # the whole line after all
            line = red.walk(value)
        kept = {"record": line}
        if red.blobs:
            kept["blobs"] = red.blobs
        codec.pack_value(kept)  # raises CodecError if the line has no canonical form
        return kept
    except CodecError:
        return {"raw": text}


def _reduced(value: Any, line: Any, red: _Reducer, messages: list[tuple[str, dict]],
             implied: str) -> dict[str, Any] | None:
    """`line` with its refs renumbered over [implied] + listed messages; None if the stored
    form does not rebuild the original value exactly."""
    order = [implied] if implied else []
    for k in sorted({ref[0] for ref in red.refs.values()}):
        if messages[k][0] not in order:
            order.append(messages[k][0])
    index = {mid: i for i, mid in enumerate(order)}
    refs = {p: [index[messages[r[0]][0]], *r[1:]] for p, r in red.refs.items()}
    kept: dict[str, Any] = {"record": line, "refs": refs}
    if len(order) > len(implied and [implied]):
        kept["messages"] = order[1:] if implied else order
    if red.blobs:
        kept["blobs"] = red.blobs
    codec.pack_value(kept)  # raises CodecError if the line has no canonical form
    # the check export relies on: the record plus the messages give back the line. The record
    # is the line with "" at each pointer (walk), so it comes down to each ref reading back
    # its string from the message it now names.
    forms = dict(messages)
    try:
        ordered = [forms[mid] for mid in order]
        for pointer, ref in refs.items():
            if _follow(ordered[ref[0]], ref[1:]) != red.ref_text[pointer]:
                return None
    except (KeyError, IndexError, TypeError, ValueError):
        return None
    return kept


def source_objects(source: Any) -> list[str]:
    """Ids a kept line needs besides its event: the messages it lists, then its blobs."""
    if not isinstance(source, dict):
        return []
    return [*source.get("messages", ()), *(source.get("blobs") or {}).values()]


def event_line(store, payload: Any, causality: Any) -> str | None:
    """The JSONL text to write back for the line an event keeps, or None if it keeps none.

    Reads both the kept-in-the-event form and the older separate `record` object
    (`causality.record_id`, `{format, line, blobs?, raw?}`)."""
    source = payload.get("source")
    if not isinstance(source, dict):
        return None
    if "raw" in source:
        return source["raw"]
    if "record" in source:
        line = rebuild_record(store, source, causality)
        return json.dumps(line, ensure_ascii=False, separators=(",", ":"))
    rid = causality.get("record_id")
    return record_line(store, rid) if rid else None


def rebuild_record(store, source: Any, causality: Any) -> Any:
    """The parsed line a kept-in-the-event `source` (one with `record`) stands for: the record
    with the strings it names read back from its messages and blobs."""
    line = thaw(source["record"])
    if source.get("refs"):
        mids = ([causality["message_id"]] if causality.get("message_id") else [])
        mids += list(source.get("messages", ()))
        forms = [codec.unpack_value(store.get_raw(mid)[1]) for mid in mids]
        for pointer, ref in source["refs"].items():
            _set(line, pointer, _follow(forms[ref[0]], ref[1:]))
    for pointer, blob in (source.get("blobs") or {}).items():
        _set(line, pointer, read_content(store, blob).decode("utf-8"))
    return line


def load_record(store, record_id: str) -> tuple[Any, str | None]:
    """(parsed line, raw text or None) of a separately stored record (older imports)."""
    body = store.get(record_id)
    if body.get("raw") is not None:
        return None, body["raw"]
    line = body["line"]
    for pointer, blob in (body.get("blobs") or {}).items():
        _set(line, pointer, read_content(store, blob).decode("utf-8"))
    return line, None


def record_line(store, record_id: str) -> str:
    """The JSONL text to write back for a separately stored record."""
    line, raw = load_record(store, record_id)
    if raw is not None:
        return raw
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))


def write_json_lines(records, out, raw_key: str) -> int:
    """Write (line, value) records back one JSON line each: a value that is only `{raw_key:
    text}` (a line the importer kept as text: it did not parse) is written as that text. For
    importers whose records are JSON values of their own making (a database row, a document's
    element), not the lines `event_line` already gives back."""
    for _line, v in records:
        if isinstance(v, dict) and len(v) == 1 and isinstance(v.get(raw_key), str):
            out.write(v[raw_key])
        else:
            out.write(json.dumps(v, ensure_ascii=False, separators=(",", ":")))
        out.write("\n")
    return len(records)
