"""An operation: what one repository transaction did to the refs (the operation log).

Like jj's operations, each one names its predecessor, so the log is a chain from `op-head`;
unlike jj's, it stores the ref *changes* (old → new), not a full view: the refs after any
operation are today's refs with the later operations' changes taken back (docs/format.md,
"The operation log").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .base import StoredObject

Change = tuple[str, "str | None", "str | None"]


@dataclass(frozen=True, slots=True)
class Operation(StoredObject):
    TYPE = "operation"

    parents: tuple[str, ...] = ()
    time: str = ""
    user: str = ""
    host: str = ""
    command: str = ""
    description: str = ""
    changes: tuple[Change, ...] = ()
    #: reflog lines removed ("expired") or put back ("restored"): (ref, how, entries), each
    #: entry [old, new, ts_ms, actor, message]. Absent from the map when empty.
    reflogs: tuple[tuple[str, str, tuple[tuple, ...]], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        d = {"parents": list(self.parents), "time": self.time, "user": self.user,
             "host": self.host, "command": self.command, "description": self.description,
             "changes": [list(c) for c in self.changes]}
        if self.reflogs:
            d["reflogs"] = [[name, how, [list(e) for e in entries]]
                            for name, how, entries in self.reflogs]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Operation:
        changes = []
        for c in d.get("changes", ()):
            if not isinstance(c, (list, tuple)) or len(c) != 3 or not isinstance(c[0], str):
                raise ValueError(f"bad change {c!r}")
            changes.append((c[0], c[1], c[2]))
        return cls(parents=tuple(d.get("parents", ())), time=str(d.get("time", "")),
                   user=str(d.get("user", "")), host=str(d.get("host", "")),
                   command=str(d.get("command", "")),
                   description=str(d.get("description", "")), changes=tuple(changes),
                   reflogs=tuple((str(name), str(how), tuple(tuple(e) for e in entries))
                                 for name, how, entries in d.get("reflogs", ())))
