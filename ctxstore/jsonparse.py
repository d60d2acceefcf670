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

try:
    import msgspec as _msgspec
except ImportError:  # pragma: no cover - msgspec is a core dependency; the fallback stays correct
    _msgspec = None

JSONDecodeError = json.JSONDecodeError
_json_loads = json.loads
_fast = _msgspec.json.Decoder().decode if _msgspec is not None else None
#: DecodeError (malformed, truncated) and ValidationError (a number out of range)
_fast_error = _msgspec.MsgspecError if _msgspec is not None else ValueError


def loads(data: str | bytes) -> Any:
    """json.loads(data): the same value, or the same exception."""
    if _fast is not None:
        try:
            return _fast(data)
        except _fast_error:
            pass  # json.loads decides: it accepts more, and its errors name line and column
    return _json_loads(data)
