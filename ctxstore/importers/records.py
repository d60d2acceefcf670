"""Records: each original transcript line, kept so export can write it back JSON-equal.

A record is `{format, line, blobs?, raw?}`. Strings longer than the artifact threshold move
to blobs named by JSON pointer; those are the same bytes (so the same blob) as the artifact of
a large tool output, which is then stored once. `raw` holds the text of a line that did not
parse or has no canonical encoding (huge ints, lone surrogates), so nothing is ever dropped.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import CodecError

#: Sentinel value yielded for lines that are not a JSON object.
MALFORMED = object()


# ---------------------------------------------------------------------------------------------

def _externalize(value: Any, threshold: int, store, path: str, blobs: dict[str, str]) -> Any:
    """Replace strings longer than `threshold` bytes by "" and remember them as blobs by JSON
    pointer. The same bytes become the tool-output artifact's blob, so they are stored once."""
    if isinstance(value, str):
        if len(value) > threshold // 4 and len(data := value.encode("utf-8", "surrogatepass")) > threshold:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError:
                return value
            blobs[path] = store.put_blob(data)
            return ""
        return value
    if isinstance(value, dict):
        return {k: _externalize(v, threshold, store, f"{path}/{_esc(k)}", blobs)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_externalize(v, threshold, store, f"{path}/{i}", blobs) for i, v in enumerate(value)]
    return value


def _esc(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _unesc(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


def put_record(store, fmt: str, value: Any, text: str, threshold: int) -> str:
    """Store one original line; returns the record id. `raw` is kept only when the parsed value
    has no canonical encoding (huge ints, lone surrogates) or the line did not parse."""
    if value is MALFORMED:
        return store.put("record", {"format": fmt, "line": None, "raw": text})
    blobs: dict[str, str] = {}
    try:
        line = _externalize(value, threshold, store, "", blobs)
        body: dict[str, Any] = {"format": fmt, "line": line}
        if blobs:
            body["blobs"] = blobs
        return store.put("record", body)
    except CodecError:
        return store.put("record", {"format": fmt, "line": None, "raw": text})


def load_record(store, record_id: str) -> tuple[Any, str | None]:
    """(parsed line, raw text or None) of a stored record, big strings put back."""
    body = store.get(record_id)
    if body.get("raw") is not None:
        return None, body["raw"]
    line = body["line"]
    for pointer, blob in (body.get("blobs") or {}).items():
        parts = [_unesc(p) for p in pointer.split("/")[1:]]
        target = line
        for p in parts[:-1]:
            target = target[int(p)] if isinstance(target, list) else target[p]
        last = parts[-1]
        text = store.get(blob).decode("utf-8")
        if isinstance(target, list):
            target[int(last)] = text
        else:
            target[last] = text
    return line, None


def record_line(store, record_id: str) -> str:
    """The JSONL text to write back for a record."""
    line, raw = load_record(store, record_id)
    if raw is not None:
        return raw
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"))
