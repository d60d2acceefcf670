"""Refs that name a foreign id (a LangGraph thread, an Agents SDK session) under a prefix.

A framework's ids are free text; a ref component is not. An id that is a safe component stays
readable (`refs/langgraph/threads/t1`); any other is written as `hex-<utf-8 hex>`, and ids that
themselves start with `hex-` are always hex, so the mapping is one-to-one both ways."""

from __future__ import annotations

import re

_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")
_HEX_MARK = "hex-"


def id_ref(prefix: str, foreign_id: str) -> str:
    """`prefix` + a ref component that names `foreign_id` (prefix ends with '/')."""
    fid = str(foreign_id)
    if (_SAFE.fullmatch(fid) and not fid.startswith(_HEX_MARK) and ".." not in fid
            and not fid.endswith((".lock", "."))):
        return prefix + fid
    return prefix + _HEX_MARK + fid.encode("utf-8").hex()


def id_of(prefix: str, ref: str) -> str:
    """The foreign id a ref made by `id_ref(prefix, …)` names."""
    name = ref[len(prefix):]
    if name.startswith(_HEX_MARK):
        return bytes.fromhex(name[len(_HEX_MARK):]).decode("utf-8")
    return name
