"""Governed writes: every memory change is checked here, then written as a memory object plus
an event of its scope's history, in one repository transaction (one operation: `ctx undo`
reverts it).

The rules (seed invariants 10 and 11, docs/format.md "Memory"): a memory names the objects it
came from (`source_refs`, each in the store), has a scope with a key, and an expiry or an update
policy. A write that breaks one is refused with MemoryRefused (exit 10) and writes nothing.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from ..clock import now_iso, parse_ts, parse_when
from ..errors import BadRevision, InvalidInput, MemoryRefused, NotFound
from ..objects.memory import DEFAULT_PRIORITY, KINDS, SCOPES, Memory
from ..repo import Repository
from ..repo.transaction import Transaction
from .log import FORGOTTEN, USED, WRITTEN, MemoryRecord, ScopeLog, find_memory
from .scopes import ScopeKeys, parse_scope, scope_keys, scope_ref

#: Update policies (docs/format.md "Memory"); `review-after:AGE` takes an age such as 30d.
UPDATE_POLICIES = ("until-superseded", "review-after:AGE")


def _fmt(when: datetime) -> str:
    when = when.astimezone(UTC)
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def now_dt() -> datetime:
    """Now as the store's clock says (CTX_FAKE_TIME when set: tests and demos control it)."""
    when = parse_ts(now_iso())
    assert when is not None
    return when


def parse_ttl(text: str, what: str = "--ttl") -> timedelta:
    """An age (`30d`, `12h`, `2.weeks`) as a positive duration."""
    now = now_dt()
    try:
        past = parse_when(text if any(c.isalpha() for c in text) else f"{text}d", now, what)
    except InvalidInput:
        past = None
    if past is None or past >= now or not any(c.isdigit() for c in text):
        raise MemoryRefused(f"{what}: cannot read {text!r} as a duration: use e.g. 30d, 12h, 2w")
    return now - past


def check_policy(policy: str) -> str:
    policy = policy.strip()
    if policy == "until-superseded":
        return policy
    name, sep, age = policy.partition(":")
    if name == "review-after" and sep:
        parse_ttl(age, "--update-policy review-after")
        return policy
    raise MemoryRefused(f"unknown update policy {policy!r}: use until-superseded or "
                        f"review-after:AGE (e.g. review-after:30d)")


def stale_at(mem: Memory) -> datetime | None:
    """When a `review-after:AGE` memory stops being offered until re-confirmed by an edit."""
    name, _, age = mem.update_policy.partition(":")
    if name != "review-after":
        return None
    updated = parse_ts(mem.updated or mem.created)
    return None if updated is None else updated + parse_ttl(age)


def offerable(mem: Memory, now: datetime) -> str:
    """'' if MEM may be offered at NOW, else why not (expired, stale, invalid)."""
    problems = violations(mem)
    if problems:
        return "invalid: " + problems[0]
    if mem.expires_at:
        exp = parse_ts(mem.expires_at)
        if exp is None or exp <= now:
            return f"expired {mem.expires_at}"
    stale = stale_at(mem)
    if stale is not None and stale <= now:
        return f"stale since {_fmt(stale)} ({mem.update_policy}): re-confirm it with ctx memory edit"
    return ""


def violations(mem: Memory) -> list[str]:
    """The governance rules a memory object breaks (empty: none). Readers use it too: a stored
    memory that breaks a rule is never offered."""
    out = []
    if not mem.source_refs:
        out.append("no source refs (invariant 10: a memory names the events, messages or "
                   "artifacts it came from)")
    if mem.scope not in SCOPES:
        out.append(f"no valid scope ({mem.scope!r}; invariant 11)")
    elif mem.scope != "global" and not mem.scope_key:
        out.append(f"scope {mem.scope} without a key (invariant 11)")
    if not mem.expires_at and not mem.update_policy:
        out.append("neither an expiry nor an update policy (invariant 11: give --ttl, "
                   "--expires or --update-policy)")
    if mem.kind not in KINDS:
        out.append(f"unknown kind {mem.kind!r} (use one of {', '.join(KINDS)})")
    if not mem.content.strip():
        out.append("empty content")
    if not (0.0 <= mem.confidence <= 1.0) or math.isnan(mem.confidence):
        out.append(f"confidence {mem.confidence} outside [0, 1]")
    if not 0 <= mem.priority <= 100:
        out.append(f"priority {mem.priority} outside 0..100")
    return out


@dataclass
class MemorySpec:
    """What a caller asks to remember; `build` checks it and makes the object."""

    content: str
    scope: str | None = None  # SCOPE or SCOPE:KEY
    sources: Sequence[str] = ()
    kind: str = "fact"
    ttl: str | None = None
    expires: str | None = None
    update_policy: str | None = None
    confidence: float = 1.0
    keywords: Sequence[str] = ()
    priority: int = DEFAULT_PRIORITY
    sensitive: bool = False
    readable_by: Sequence[str] = ()
    author: str = ""
    origin: Mapping[str, Any] = field(default_factory=dict)


def resolve_sources(repo: Repository, sources: Iterable[str]) -> list[str]:
    from ..repo.revparse import resolve_object

    out: list[str] = []
    for s in sources:
        s = str(s).strip()
        if not s:
            continue
        try:
            oid = resolve_object(repo, s)
        except (NotFound, BadRevision) as exc:
            raise MemoryRefused(f"source {s!r} is not an object or revision of this store ({exc}); "
                                f"a memory's sources must be the events, messages or artifacts "
                                f"it came from (invariant 10)") from None
        if oid not in out:
            out.append(oid)
    if not out:
        raise MemoryRefused("refusing a memory without sources: give --source REF (an event, "
                            "message or artifact it came from; invariant 10)")
    return out


def _expiry(spec: MemorySpec, now: datetime) -> tuple[str, str]:
    given = [x for x in (spec.ttl, spec.expires, spec.update_policy) if x]
    if not given:
        raise MemoryRefused("refusing a memory without expiry or update policy: give --ttl AGE, "
                            "--expires DATE or --update-policy POLICY (invariant 11)")
    if spec.ttl and spec.expires:
        raise MemoryRefused("give --ttl or --expires, not both")
    expires = ""
    if spec.ttl:
        expires = _fmt(now + parse_ttl(spec.ttl))
    elif spec.expires:
        # a date or time only: parse_when would read `3d` as three days *ago* and `never` as
        # no time at all, then refuse them as "not in the future" (an age is what --ttl takes)
        when = parse_ts(spec.expires.strip())
        if when is None:
            raise MemoryRefused(f"--expires: cannot read {spec.expires!r} as a date or time: "
                                f"give an ISO date or time (2027-01-31, 2027-01-31T18:00Z), or "
                                f"--ttl AGE (30d, 12h, 2w) to expire that long from now")
        if when <= now:
            raise MemoryRefused(f"--expires {spec.expires}: that is not in the future")
        expires = _fmt(when)
    policy = check_policy(spec.update_policy) if spec.update_policy else ""
    return expires, policy


def build(repo: Repository, spec: MemorySpec, keys: ScopeKeys | None = None, *,
          now: datetime | None = None) -> Memory:
    """The checked Memory object SPEC asks for (nothing written). What is missing is said
    all at once: a user should not learn one required option per try."""
    missing = [what for what, ok in (
        (f"a scope (--scope {'|'.join(SCOPES)})", bool(spec.scope)),
        ("sources (--source REF: an event, message or artifact it came from)",
         any(str(s).strip() for s in spec.sources)),
        ("an expiry or update policy (--ttl AGE, --expires DATE or --update-policy POLICY)",
         any((spec.ttl, spec.expires, spec.update_policy)))) if not ok]
    if len(missing) > 1:
        raise MemoryRefused("refusing a memory without " + ", ".join(missing[:-1]) + " and "
                            + missing[-1] + " (invariants 10 and 11)")
    if not spec.scope:
        raise MemoryRefused("refusing a memory without scope: give --scope "
                            f"{'|'.join(SCOPES)} (invariant 11)")
    scope, key = parse_scope(spec.scope, keys or scope_keys(repo))
    sources = resolve_sources(repo, spec.sources)
    now = now or now_dt()
    expires, policy = _expiry(spec, now)
    try:
        confidence, priority = float(spec.confidence), int(spec.priority)
    except (TypeError, ValueError):
        raise MemoryRefused("confidence must be a number in [0, 1] and priority an integer") from None
    ts = _fmt(now)
    mem = Memory(scope=scope, scope_key=key, kind=spec.kind, content=spec.content.strip(),
                 source_refs=tuple(sources), confidence=confidence, created=ts, updated=ts,
                 expires_at=expires, update_policy=policy, sensitive=bool(spec.sensitive),
                 readable_by=tuple(sorted(set(spec.readable_by))),
                 keywords=tuple(dict.fromkeys(k.strip().lower() for k in spec.keywords if k.strip())),
                 priority=priority, author=spec.author, origin=dict(spec.origin))
    problems = violations(mem)
    if problems:
        raise MemoryRefused("refusing the memory: " + "; ".join(problems))
    return mem


class ChainWriter:
    """Appends events to scope chains inside one transaction. A chain that exists appends like
    a branch (rebased if another writer moved it meanwhile); one that does not is created by
    the transaction, its later events in the same transaction chained on the pending tip."""

    def __init__(self, tx: Transaction) -> None:
        self.tx = tx

    def append(self, ref: str, type: str, actor: str, payload: dict,
               causality: dict | None = None) -> str:
        tx = self.tx
        if tx.refs.read(ref) is not None:
            br = tx.branch(ref)
            br.message = br.message or f"memory: {type}"
            return tx.append(type, actor, payload, causality, ref=ref)
        pending = tx.read(ref)  # created earlier in this transaction, or None
        eid = tx.event(type, actor, payload, (pending,) if pending else (), causality)
        if pending is None:
            tx.create_ref(ref, eid, message=f"memory: {type}")
        else:
            tx.set_ref(ref, eid, message=f"memory: {type}")
        return eid


def _in_tx(repo: Repository, tx: Transaction | None, message: str, command: str):
    if tx is not None:
        from contextlib import nullcontext

        return nullcontext(tx)
    return repo.transaction(message=message, command=command)


def write(repo: Repository, mem: Memory, *, action: str = "add", actor: str = "user",
          tx: Transaction | None = None, extra: Mapping[str, Any] | None = None) -> str:
    """Store MEM and append its MemoryWritten event; returns the memory id."""
    problems = violations(mem)
    if problems:
        raise MemoryRefused("refusing the memory: " + "; ".join(problems))
    with _in_tx(repo, tx, f"memory {action}", f"api: memory {action}") as t:
        mid = repo.objects.put_object(mem)
        payload = {"memory_id": mid, "action": action, "scope": mem.scope,
                   "scope_key": mem.scope_key, **({"supersedes": mem.supersedes} if mem.supersedes else {}),
                   **dict(extra or {})}
        ChainWriter(t).append(scope_ref(mem.scope, mem.scope_key), WRITTEN, actor, payload)
    return mid


def remember(repo: Repository, spec: MemorySpec | None = None, *, actor: str = "user",
             keys: ScopeKeys | None = None, tx: Transaction | None = None, **kw: Any) -> str:
    """Check and write a new memory (SPEC, or MemorySpec(**kw)); returns its id."""
    spec = spec or MemorySpec(**kw)
    return write(repo, build(repo, spec, keys), action="add", actor=actor, tx=tx)


def edit(repo: Repository, memory: str, *, actor: str = "user", tx: Transaction | None = None,
         **changes: Any) -> str:
    """A new version of MEMORY (id or prefix) with CHANGES (fields of Memory, or `ttl`,
    `expires`, `sources`); it supersedes the old one. Returns the new id. An edit with no change
    re-confirms the memory (a new `updated`: a stale `review-after` memory is offered again)."""
    log, rec = find_memory(repo, memory)
    if rec.status != "live":
        raise MemoryRefused(f"memory {rec.id[:12]} is {rec.status}"
                            + (f" by {rec.superseded_by[:12]}: edit that one" if rec.superseded_by else "")
                            + "; only the live version can be edited")
    old = rec.memory
    now = now_dt()
    fields: dict[str, Any] = {}
    if changes.get("sources"):
        fields["source_refs"] = tuple(resolve_sources(repo, changes.pop("sources")))
    else:
        changes.pop("sources", None)
    ttl, expires, policy = changes.pop("ttl", None), changes.pop("expires", None), changes.pop("update_policy", None)
    if ttl or expires or policy:
        e, p = _expiry(MemorySpec("x", ttl=ttl, expires=expires, update_policy=policy), now)
        fields["expires_at"], fields["update_policy"] = e, p
    if changes.get("scope"):
        scope, key = parse_scope(changes.pop("scope"), scope_keys(repo))
        fields["scope"], fields["scope_key"] = scope, key
    else:
        changes.pop("scope", None)
    for k, v in changes.items():
        if v is None:
            continue
        if k not in Memory.__dataclass_fields__ or k in ("supersedes", "created", "updated"):
            raise InvalidInput(f"cannot edit field {k!r} of a memory")
        if k in ("keywords", "readable_by"):
            v = tuple(v)
        fields[k] = v
    new = replace(old, **fields, supersedes=rec.id, updated=_fmt(now))
    if (new.scope, new.scope_key) != (old.scope, old.scope_key):
        raise MemoryRefused("an edit keeps the memory's scope: forget it and add it to the other scope")
    return write(repo, new, action="edit", actor=actor, tx=tx)


def forget(repo: Repository, memory: str, *, reason: str = "", actor: str = "user",
           tx: Transaction | None = None) -> MemoryRecord:
    """Stop offering MEMORY (its live version): a ctx:memory-forgotten event; the object and its
    history stay (ctx undo brings it back)."""
    log, rec = find_memory(repo, memory)
    if rec.status != "live":
        raise MemoryRefused(f"memory {rec.id[:12]} is already {rec.status}")
    with _in_tx(repo, tx, "memory forget", "api: memory forget") as t:
        ChainWriter(t).append(log.ref, FORGOTTEN, actor,
                              {"memory_id": rec.id, "scope": log.scope, "scope_key": log.scope_key,
                               **({"reason": reason} if reason else {})})
    return rec


def record_usage(tx: Transaction, used: Mapping[tuple[str, str], list[str]], bundle_id: str,
                 event_id: str) -> None:
    """Usage records: for each (scope, key) the memory ids a recorded bundle included."""
    writer = ChainWriter(tx)
    for (scope, key), mids in sorted(used.items()):
        writer.append(scope_ref(scope, key), USED, "system",
                      {"memory_ids": sorted(set(mids)), "scope": scope, "scope_key": key},
                      {"bundle_id": bundle_id, "event_id": event_id})


__all__ = ["UPDATE_POLICIES", "ChainWriter", "MemorySpec", "ScopeLog", "build", "check_policy",
           "edit", "forget", "now_dt", "offerable", "parse_ttl", "record_usage", "remember",
           "resolve_sources", "stale_at", "violations", "write"]
