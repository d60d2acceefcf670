"""Lanes for drawing a session's event DAG one row per event, like `ctx log --graph`.

Each row gets the column of its node and three short lists of columns: lanes that pass
straight through the row, lanes in the top half that join the node, and lanes in the bottom half
the node's edges leave by. A lane keeps its column for its whole life (a freed column is reused
later), so the browser can draw every row on its own — the only way to draw 100k rows, of which
it renders the few on screen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def lanes(rows: Sequence[tuple[str, Sequence[str]]]) -> list[dict[str, Any]]:
    """Layout of ROWS given newest first as (event id, parent ids) and returned OLDEST first as
    {c: node column, th: pass-through columns, up: columns joining from the row above (the
    parents' side), dn: columns leaving to the row below (the children's side)}."""
    open_lanes: list[str | None] = []
    out: list[dict[str, Any]] = []
    for eid, parents in rows:
        joins = [i for i, x in enumerate(open_lanes) if x == eid]
        if joins:
            col = joins[0]
        else:
            col = _free(open_lanes)
        thru = [i for i, x in enumerate(open_lanes) if x is not None and x != eid]
        for j in joins:
            open_lanes[j] = None
        leave: list[int] = []
        for k, p in enumerate(parents):
            if p in open_lanes:
                leave.append(open_lanes.index(p))
                continue
            slot = col if k == 0 and open_lanes[col] is None else _free(open_lanes)
            open_lanes[slot] = p
            leave.append(slot)
        while open_lanes and open_lanes[-1] is None:
            open_lanes.pop()
        # newest first the node joins lanes above (children) and leaves by lanes below
        # (parents); oldest first the two halves swap
        out.append({"c": col, "th": thru, "up": sorted(set(leave)), "dn": joins})
    out.reverse()
    return out


def _free(open_lanes: list[str | None]) -> int:
    for i, x in enumerate(open_lanes):
        if x is None:
            return i
    open_lanes.append(None)
    return len(open_lanes) - 1
