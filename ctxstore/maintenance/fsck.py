"""Repository-level fsck: refs, reflogs, connectivity, generations and the seed's invariants.

`check` always runs the store-level verifier (ctxstore.store.fsck: every record of every pack
re-read, re-hashed, decoded, checked for canonical form and against its index; every line of
`dicts`) and checks that refs and reflogs parse (each damaged ref file and reflog line is one
problem, with file and line) and name existing objects. With `full` it adds what only the object graph can
tell, walking once from every ref, HEAD and reflog entry with ctxstore.links (the same walk
pack and gc use):

- every ref and reflog entry names an existing event;
- every link resolves (parents, messages, artifacts, artifact content, chunks, compaction
  ranges, snapshots, sessions): a missing object is reported with the id that names it;
- each event's generation is max(parent generations) + 1, and its parents are events;
- every tool result (ToolCallFinished/Failed) has a ToolCallRequested with the same
  tool_call_id at a lower generation (seed invariant 1);
- no call that is still PENDING at a branch tip (the one rule of state/calls.py: no result,
  not abandoned) was summarized away by a compaction on that branch (invariant 2);
- every compaction's first/last/first_kept/source events exist, first_event..last_event is a
  first-parent range and first_kept's first-parent chain reaches last_event (invariant 3).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .. import chunking, codec
from ..errors import CorruptObject, CorruptStore, CtxError, ObjectNotFound
from ..objects import links
from ..repo import Repository
from ..state.calls import open_calls

Progress = Callable[[str, int, int], None]
RESULT_TYPES = ("ToolCallFinished", "ToolCallFailed")
CONTENT_TYPES = ("blob", "chunks")


@dataclass(frozen=True, slots=True)
class Problem:
    kind: str  # ref | reflog | missing | type | generation | tool-pair | compaction | chunks | <store kinds>
    message: str
    id: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    def __str__(self) -> str:
        return self.message


@dataclass
class _Ev:
    generation: int
    parents: tuple[str, ...]
    type: str
    call: str | None
    facts: tuple[dict, dict] = ({}, {})  # the payload/causality keys the open-call rule reads


_RULE_PAYLOAD = ("tool_call_id", "name", "stop_reason", "subtype")
_RULE_CAUSALITY = ("tool_call_id", "message_id", "compaction_id")


class _Collector:
    """What the walk sees, kept small: events' generations and parents, types, compactions."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self.events: dict[str, _Ev] = {}
        self.compactions: dict[str, dict] = {}
        self.links: list[tuple[str, str, str]] = []  # (from, to, role) checked for type
        self.manifests: dict[str, Any] = {}
        self.memories: dict[str, Any] = {}
        self.workspaces: dict[str, Any] = {}

    def __call__(self, obj_id: str, type_name: str, value: Any) -> None:
        self.types[obj_id] = type_name
        if type_name == "event" and isinstance(value, dict):
            payload = value.get("payload") if isinstance(value.get("payload"), dict) else {}
            causality = value.get("causality") if isinstance(value.get("causality"), dict) else {}
            call = causality.get("tool_call_id") or payload.get("tool_call_id")
            parents = tuple(p for p in value.get("parents") or () if isinstance(p, str))
            gen = value.get("generation")
            facts = ({k: payload[k] for k in _RULE_PAYLOAD if k in payload},
                     {k: causality[k] for k in _RULE_CAUSALITY if k in causality})
            self.events[obj_id] = _Ev(gen if type(gen) is int else -1, parents,
                                      str(value.get("type", "")),
                                      call if isinstance(call, str) else None, facts)
        elif type_name == "compaction" and isinstance(value, dict):
            self.compactions[obj_id] = value
        elif type_name == "artifact" and isinstance(value, dict):
            content = value.get("content")
            if isinstance(content, str):
                self.links.append((obj_id, content, "content"))
        elif type_name == "chunks":
            self.manifests[obj_id] = value
        elif type_name == "memory":
            self.memories[obj_id] = value
        elif type_name == "workspace" and isinstance(value, dict):
            self.workspaces[obj_id] = value


@dataclass
class FsckReport:
    """`objects`: records verified; `problems`: every problem found (empty: healthy)."""

    objects: int
    full: bool
    problems: list[Problem]
    #: what is worth knowing but not a problem (the derived retrieval index's state)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "objects": self.objects, "full": self.full,
                "problems": [p.to_dict() for p in self.problems], "notes": self.notes}


def check(repo: Repository, *, full: bool = False, progress: Progress | None = None) -> FsckReport:
    """Verify every stored object (hash, decode, canonical form, index <-> pack) and that refs
    and reflogs name existing objects; with `full`, also walk the graph from every root:
    connectivity, generations, tool pairs and compaction ranges."""
    problems: list[Problem] = []
    counted = [0]

    def count(stage: str, n: int, total: int) -> None:
        if stage == "records":
            counted[0] = n
        if progress is not None:
            progress(stage, n, total)

    problems.extend(_store_problems(repo, count, counted))
    problems.extend(_journal_problems(repo))
    roots, ref_targets = _ref_problems(repo, problems)
    if full:
        problems.extend(_graph_problems(repo, roots, ref_targets, progress))
    from ..retrieval.index import index_status

    state, detail = index_status(repo)  # a derived cache: rebuilt on use, never a problem
    return FsckReport(counted[0], full, problems, [f"retrieval index: {state} ({detail})"])


def _journal_problems(repo: Repository) -> Iterator[Problem]:
    """Damage in the write-ahead journal (docs/format.md, "The write-ahead journal") and the
    damaged tails recovery set aside. A torn tail (a record cut short) is not damage. Looked at
    whether or not the journal is on now: a store may have been written with it."""
    if repo.path is None:
        return
    from ..repo.journal_apply import damaged_copies
    from ..store.journal import parse

    path = Path(repo.path) / "wal"
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        data = None
    if data is not None:
        try:
            scan = parse(data, str(path))
        except CorruptStore as exc:
            yield Problem("journal", str(exc))
        else:
            if scan.problem == "damaged":
                yield Problem("journal", f"{path}: {scan.detail}; the {len(data) - scan.end} "
                                         f"bytes from byte {scan.end} on are refused (the "
                                         f"{len(scan.records)} records before them are kept)")
    for copy in damaged_copies(Path(repo.path)):
        yield Problem("journal", f"{copy}: a damaged journal tail set aside by recovery "
                                 f"({copy.stat().st_size} bytes); its records were not replayed")


def _graph_problems(repo: Repository, roots: set[str], ref_targets: list,
                    progress: Progress | None) -> list[Problem]:
    problems: list[Problem] = []
    seen = _Collector()
    missing: dict[str, str] = {}
    reader = _Reader(repo.objects)
    cb = None if progress is None else (lambda n: progress("connectivity", n, 0))
    links.reachable(reader, sorted(roots), missing=missing, progress=cb, visit=seen)
    for obj_id, message in sorted(reader.damaged.items()):
        missing.pop(obj_id, None)
        problems.append(Problem("damaged", f"object {obj_id} cannot be read: {message}", obj_id))
    for obj_id, named_by in sorted(missing.items()):
        where = f" named by {named_by}" if named_by else " named by a ref or reflog"
        problems.append(Problem("missing", f"missing or unreadable object {obj_id}{where}",
                                obj_id))
    for label, target in ref_targets:
        t = seen.types.get(target)
        if t is not None and t != "event":
            problems.append(Problem("ref", f"{label} names {target}, a {t}, not an event", target))
    problems.extend(_event_problems(seen))
    problems.extend(_pending_compacted(seen, ref_targets))
    problems.extend(_compaction_problems(seen))
    problems.extend(_content_problems(seen))
    problems.extend(_memory_problems(seen))
    problems.extend(_workspace_name_problems(repo, seen))
    return problems


def _workspace_name_problems(repo: Repository, seen: _Collector) -> Iterator[Problem]:
    """Snapshot trees holding a name git itself refuses (`..`, `.`, `.git` in any case, an
    empty name, a `/`, `\\` or NUL in a name): `ctx restore` refuses such a snapshot
    (workspace/contain.py); fsck names the snapshot and the path. Only trees are read."""
    from ..chunking import read_content
    from ..workspace import gitdb
    from ..workspace.contain import name_problem

    listed: dict[str, str] = {}
    for value in seen.workspaces.values():
        for item in value.get("objects", ()):
            if isinstance(item, (list, tuple)) and len(item) == 2:
                listed.setdefault(str(item[0]), str(item[1]))
    checked: set[str] = set()
    for wid, value in sorted(seen.workspaces.items()):
        stack = [(str(value.get("tree", "")), "")]
        while stack:
            tree, prefix = stack.pop()
            if tree in checked or tree not in listed:
                continue  # a tree checked already, or one fsck's link walk reports as missing
            checked.add(tree)
            try:
                kind, data = gitdb.parse_loose(read_content(repo.objects, listed[tree]))
            except (CtxError, ValueError):
                continue  # unreadable content is reported by the link and hash checks
            if kind != gitdb.TREE:
                continue
            for mode, name, oid in _tree_entries(data):
                text = name.decode("utf-8", "replace")
                why = "a '/' in the name" if "/" in text else name_problem(text)
                if why is not None:
                    yield Problem("workspace", f"workspace {wid}: snapshot tree {tree[:12]} "
                                               f"holds {prefix + text!r}: {why}, a name git "
                                               f"refuses (`ctx restore` refuses it too)", wid)
                elif mode == b"40000":
                    stack.append((oid, prefix + text + "/"))


def _tree_entries(data: bytes) -> Iterator[tuple[bytes, bytes, str]]:
    """(mode, name, id) of each entry of a git tree's body; stops at malformed bytes."""
    pos = 0
    while pos < len(data):
        sp = data.find(b" ", pos)
        nul = data.find(b"\0", sp + 1)
        if sp < 0 or nul < 0 or nul + 21 > len(data):
            return
        yield data[pos:sp], data[sp + 1:nul], data[nul + 1:nul + 21].hex()
        pos = nul + 21


def _memory_problems(seen: _Collector) -> Iterator[Problem]:
    """A stored memory that breaks the governance rules (invariants 10-11) is never offered;
    fsck names it."""
    from ..memory.governance import violations
    from ..objects.base import from_stored

    for mid, value in sorted(seen.memories.items()):
        try:
            broken = violations(from_stored("memory", value))
        except CtxError as exc:
            broken = [str(exc)]
        for why in broken:
            yield Problem("memory", f"memory {mid}: {why}", mid)


class _Reader:
    """The store as the walk sees it: a damaged object is recorded and treated as absent."""

    def __init__(self, store) -> None:
        self.objects = store
        self.damaged: dict[str, str] = {}

    def get_raw(self, obj_id: str) -> tuple[str, bytes]:
        try:
            return self.objects.get_raw(obj_id)
        except CorruptObject as exc:
            self.damaged[obj_id] = str(exc)
            raise ObjectNotFound(str(exc)) from None


def _store_problems(repo: Repository, progress: Progress, counted: list[int]) -> Iterator[Problem]:
    from ..store.fsck import verify
    from ..store.packstore import PackStore

    store = repo.objects
    if not isinstance(store, PackStore):  # e.g. a memory store: re-hash what it holds
        n = 0
        for obj_id in store:
            type_name, body = store.get_raw(obj_id)
            n += 1
            if codec.compute_id(type_name, body) != obj_id:
                yield Problem("hash", f"object {obj_id} does not hash to its id", obj_id)
        counted[0] = n
        return
    total = sum(p.count() for p in store.packs())
    for p in verify(store, lambda n: progress("records", n, total)):
        yield Problem(p.kind, p.message, p.id)


def _ref_problems(repo: Repository, problems: list[Problem]) -> tuple[set[str], list]:
    roots: set[str] = set()
    targets: list[tuple[str, str]] = []
    damaged: list[CorruptStore] = []
    refs = list(repo.refs.iter_refs("refs/", damaged=damaged))
    for name, target in refs:
        roots.add(target)
        targets.append((f"ref {name}", target))
    problems.extend(Problem("ref", str(exc)) for exc in damaged)
    reported = {Path(str(exc.details.get("path", ""))).resolve() for exc in damaged}
    listed = {name for name, _ in refs}
    journalled = getattr(repo.refs, "journalled", None)
    if journalled is not None:  # a ref a journal record deleted keeps its file until checkpoint
        listed.update(journalled())
    problems.extend(_unlisted_ref_files(repo, listed, reported))
    try:
        head = repo.refs.read_head()
        if head.target:
            roots.add(head.target)
            targets.append(("HEAD", head.target))
    except CtxError as exc:
        problems.append(Problem("ref", f"HEAD: {exc}"))
    try:  # op-head is read by `op log`, undo and gc: its damage is reported like a ref's
        op = repo.refs.read_op_head()
        if op:
            roots.add(op)
            if op not in repo.objects:
                problems.append(Problem("ref", f"{repo.ref_file('op-head')}:1: op-head names "
                                               f"missing object {op}", op))
            elif repo.objects.type_of(op) != "operation":
                problems.append(Problem("ref", f"{repo.ref_file('op-head')}:1: op-head names "
                                               f"{op}, a {repo.objects.type_of(op)}, not an "
                                               f"operation", op))
    except CtxError as exc:
        problems.append(Problem("ref", f"op-head: {exc}"))
    for name in repo.refs.reflog_names():
        bad_lines: list[CorruptStore] = []
        for i, e in enumerate(reversed(repo.refs.reflog(name, damaged=bad_lines))):
            for v in (e.old, e.new):
                if v:
                    roots.add(v)
                    targets.append((f"reflog {name}@{{{i}}}", v))
        problems.extend(Problem("reflog", str(exc)) for exc in bad_lines)
    store = repo.objects
    for label, target in targets:
        if target not in store:
            kind = "reflog" if label.startswith("reflog") else "ref"
            problems.append(Problem(kind, f"{label} names missing object {target}", target))
    return roots, targets


def _unlisted_ref_files(repo: Repository, listed: set[str], reported: set[Path]
                        ) -> Iterator[Problem]:
    """Files under refs/ that are not refs (a bad name) and were not reported as damaged
    already: they do not break the store, but fsck names them so they can be removed."""
    root = getattr(repo.refs, "root", None)
    if root is None or not (Path(root) / "refs").is_dir():
        return
    for path in sorted((Path(root) / "refs").rglob("*")):
        if path.is_file() and not path.name.endswith(".lock") and path.resolve() not in reported:
            name = path.relative_to(root).as_posix()
            if name not in listed:
                yield Problem("ref", f"ref file {name} is not a valid ref (bad name or content)")


def _event_problems(seen: _Collector) -> Iterator[Problem]:
    events = seen.events
    calls: dict[str, int] = {}
    for ev in events.values():
        if ev.type == "ToolCallRequested" and ev.call:
            calls[ev.call] = min(calls.get(ev.call, ev.generation), ev.generation)
    for eid in sorted(events):
        ev = events[eid]
        gens = []
        for p in ev.parents:
            pe = events.get(p)
            if pe is None:
                t = seen.types.get(p)
                if t is not None:
                    yield Problem("type", f"event {eid} has parent {p}, a {t}, not an event", eid)
                gens = None
                break
            gens.append(pe.generation)
        if gens is not None:
            expected = 1 + max(gens, default=0)
            if ev.generation != expected:
                yield Problem("generation", f"event {eid} has generation {ev.generation}, "
                                            f"expected {expected}", eid)
        if ev.type in RESULT_TYPES:
            if not ev.call:
                yield Problem("tool-pair", f"tool result {eid} names no tool_call_id", eid)
            elif calls.get(ev.call, ev.generation) >= ev.generation:
                yield Problem("tool-pair", f"tool result {eid} ({ev.call}) has no earlier "
                                           f"ToolCallRequested", eid)


def _pending_compacted(seen: _Collector, ref_targets: list) -> Iterator[Problem]:
    """Invariant 2 on every branch: a call still pending at the tip (state/calls.py) must not
    be among the events a compaction on that branch replaced."""
    events, done = seen.events, set()
    for label, tip in ref_targets:
        if not label.startswith("ref refs/sessions/") or tip in done or tip not in events:
            continue
        done.add(tip)
        chain, cur = [], tip
        while cur in events:
            chain.append(cur)
            ev = events[cur]
            cur = ev.parents[0] if ev.parents else None
        chain.reverse()
        book = open_calls((eid, events[eid].type, *events[eid].facts) for eid in chain)
        if not book.pending:
            continue
        replaced: dict[str, str] = {}
        for eid in chain:
            cid = events[eid].facts[1].get("compaction_id")
            rec = seen.compactions.get(cid) if events[eid].type == "CompactionCompleted" else None
            for sid in (rec or {}).get("source_event_ids") or ():
                replaced.setdefault(sid, cid)
        for tcid, call in book.pending.items():
            cid = replaced.get(call["event"])
            if cid:
                yield Problem("tool-pair", f"{label[4:]}: pending tool call {tcid} "
                                           f"({call['event'][:12]}) was summarized away by "
                                           f"compaction {cid[:12]}", call["event"])


def _first_parent_reaches(events: dict[str, _Ev], start: str, target: str) -> bool:
    """True if following first parents from `start` reaches `target` (or start == target)."""
    goal = events.get(target)
    cur = start
    while True:
        if cur == target:
            return True
        ev = events.get(cur)
        if ev is None or not ev.parents or (goal is not None and ev.generation <= goal.generation):
            return False
        cur = ev.parents[0]


def _compaction_problems(seen: _Collector) -> Iterator[Problem]:
    """Ranges that name events must name stored ones on one first-parent line. Empty fields are
    allowed where the record says so: no `first_kept` when nothing was kept verbatim (a merge,
    or a transcript whose compaction kept nothing), and no range at all when the source
    recorded a compaction that replaced nothing (then `source_event_ids` is empty too)."""
    events = seen.events
    for cid in sorted(seen.compactions):
        c = seen.compactions[cid]
        sources = c.get("source_event_ids") or ()
        no_range = not sources and c.get("first_event") == "" and c.get("last_event") == ""
        bad = False
        for key in ("first_event", "last_event", "first_kept"):
            v = c.get(key)
            empty_ok = key == "first_kept" or no_range
            if v == "" and empty_ok:
                continue
            if not isinstance(v, str) or v not in events:
                bad = True
                yield Problem("compaction", f"compaction {cid}: {key} {str(v)[:64]!r} is not a "
                                            f"stored event", cid)
        for v in sources:
            if v not in events:
                bad = True
                yield Problem("compaction", f"compaction {cid}: source event {v} is not a "
                                            f"stored event", cid)
        if bad or no_range:
            continue
        first, last, kept = c["first_event"], c["last_event"], c["first_kept"]
        if not _first_parent_reaches(events, last, first):
            yield Problem("compaction", f"compaction {cid}: first_event {first[:12]} is not on "
                                        f"last_event {last[:12]}'s first-parent line", cid)
        if kept and (kept == last or not _first_parent_reaches(events, kept, last)):
            yield Problem("compaction", f"compaction {cid}: first_kept {kept[:12]}'s first-parent "
                                        f"chain does not reach last_event {last[:12]}", cid)


def _content_problems(seen: _Collector) -> Iterator[Problem]:
    for art, content, _role in seen.links:
        t = seen.types.get(content)
        if t is not None and t not in CONTENT_TYPES:
            yield Problem("type", f"artifact {art} content {content} is a {t}, not a blob or "
                                  f"chunks manifest", art)
    for mid in sorted(seen.manifests):
        value = seen.manifests[mid]
        try:
            chunking.check_manifest(mid, value)
        except CtxError as exc:
            yield Problem("chunks", str(exc), mid)
            continue
        for chunk_id, _length in value["chunks"]:
            t = seen.types.get(chunk_id)
            if t is not None and t != "blob":
                yield Problem("chunks", f"chunks manifest {mid} names {chunk_id}, a {t}", mid)
