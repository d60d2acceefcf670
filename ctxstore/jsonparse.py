"""JSON input parsed by msgspec where it gives json.loads's answer, by json.loads otherwise.

The hot paths that read JSON lines (`ctx append --batch`, the importers) call `loads`. msgspec
(C) parses a ~730-byte agent event in ~1.7 µs against ~5.7 µs for json.loads, and takes bytes,
so a line read from a binary file is not decoded first. Its values are json.loads's (integers of
any size stay ints, floats are correctly rounded, the last of duplicate keys wins); where it
refuses a line that json.loads accepts (NaN and Infinity literals, 1e400, lone surrogates) or
that is not JSON at all, json.loads parses it again, so the values and the errors
(`json.JSONDecodeError` with line and column, `UnicodeDecodeError` for bytes that are not
UTF-8) are exactly json.loads's. orjson was measured too: as fast, but it reads integers beyond 64 bits
as floats, and the check for them cost more than the parse.
"""

from __future__ import annotations

import json
from typing import Any

JSONDecodeError = json.JSONDecodeError
_json_loads = json.loads
_fast: Any = None  # msgspec's decoder, imported on the first call (start-up of other commands)
#: msgspec.MsgspecError: DecodeError (malformed, truncated), ValidationError (out of range)
_fast_error: Any = ValueError


def _load() -> None:
    global _fast, _fast_error
    try:
        import msgspec
    except ImportError:  # pragma: no cover - a core dependency; json.loads stays correct
        _fast = False
        return
    _fast, _fast_error = msgspec.json.Decoder().decode, msgspec.MsgspecError


def loads(data: str | bytes) -> Any:
    """json.loads(data): the same value, or the same exception."""
    if not _fast:
        if _fast is None:
            _load()
        if not _fast:
            return _json_loads(data)
    try:
        return _fast(data)
    except _fast_error:
        pass  # json.loads decides: it accepts more, and its errors name line and column
    return _json_loads(data)
