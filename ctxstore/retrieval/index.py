"""The retrieval index: a derived, rebuildable bm25s cache over the text of memories,
artifacts and events, under `.ctx/cache/retrieval/` (docs/format.md "Memory").

Why bm25s: BM25 ranking (what FTS5's bm25() and tantivy also give) as a small pure-Python
package over numpy sparse matrices; building 200k documents takes seconds and a query a few
milliseconds, and its scores come back for every row, so scope and trust filters are a numpy
mask before the top-k, not a post-filter that can come back empty (docs/benchmarks.md has the
comparison with SQLite FTS5 measured in the same run).

The index is never trusted over the objects. It remembers the tips of `refs/sessions/*` and
`refs/memory/*` it was built from; when they moved, only what is new is read (walking from the
new tips down to what is indexed) into a small delta index next to the main one, and the main
index is rebuilt when the delta grows past a quarter of it. A missing, unreadable or
inconsistent cache is rebuilt from the refs. Every hit is re-read and re-checked by the caller
(ctxstore/retrieval/select.py) before anything reaches a model.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import blake3

from .. import codec
from ..clock import now_iso
from ..errors import CorruptObject, CtxError, Unsupported
from ..lockfile import LockFile, write_file_atomically
from ..memory.log import CHAIN_TYPES, WRITTEN, chain_events, iter_scope_refs
from ..memory.scopes import scope_keys
from ..objects import Artifact, Message
from ..objects.memory import Memory
from ..refs import SESSIONS_PREFIX
from ..refs.names import split_branch_ref
from ..repo import Repository
from .text import artifact_text, event_text, memory_text, tokens

INDEX_VERSION = 1
#: The delta index is folded into a rebuilt main index past max(this, main rows / 4).
DELTA_REBUILD_MIN = 2000
KINDS = ("memory", "artifact", "event")
Progress = Callable[[str, int, int], None]


#: The index each store was last opened with in this process (by resolved path).
_OPEN: dict[str, RetrievalIndex] = {}


class _Damaged(Exception):
    pass


def require_bm25s():
    try:
        import bm25s
    except ImportError:
        raise Unsupported("retrieval needs the bm25s package: pip install 'ctxstore[memory]'") from None
    return bm25s


@dataclass(frozen=True)
class Row:
    """One indexed document: what it is, its id, its group (`m:SCOPE\\0KEY` for a memory,
    `s:SESSION` for an artifact or event) and the event that brought it in."""

    kind: str
    id: str
    group: str
    source: str


def current_tips(repo: Repository) -> dict[str, str]:
    out = dict(repo.refs.iter_refs(SESSIONS_PREFIX))
    out.update(iter_scope_refs(repo))
    return out


class _Collector:
    """Reads what refs gained since OLD tips: rows and their texts, each id once."""

    def __init__(self, repo: Repository, known: set[str], progress: Progress | None) -> None:
        self.repo = repo
        self.known = known
        self.rows: list[Row] = []
        self.texts: list[str] = []
        self.sessions: dict[str, str] = {}
        self.progress = progress

    def add(self, row: Row, text: str) -> None:
        if row.id in self.known or not text.strip():
            return
        self.known.add(row.id)
        self.rows.append(row)
        self.texts.append(text)
        if self.progress is not None and len(self.rows) % 5000 == 0:
            self.progress("read", len(self.rows), 0)

    def run(self, old: dict[str, str], new: dict[str, str]) -> None:
        stops = set(old.values())
        for ref, tip in sorted(new.items()):
            if old.get(ref) == tip:
                continue
            if ref.startswith(SESSIONS_PREFIX):
                parts = split_branch_ref(ref)
                if parts:
                    self._session(parts[0], tip, stops)
            else:
                self._memories(tip, old.get(ref))

    def _memories(self, tip: str, old: str | None) -> None:
        store = self.repo.objects
        for eid, ev in chain_events(self.repo, tip, stop=old):
            if ev.type != WRITTEN:
                continue
            mid = str(ev.payload.get("memory_id", ""))
            if mid in self.known:
                continue
            mem = store.get(mid)
            if isinstance(mem, Memory):
                self.add(Row("memory", mid, f"m:{mem.scope}\0{mem.scope_key}", eid), memory_text(mem))

    def _session(self, sid: str, tip: str, stops: set[str]) -> None:
        if sid not in self.sessions:
            self.sessions[sid] = scope_keys(self.repo, sid, user="").project
        repo, store, group = self.repo, self.repo.objects, f"s:{sid}"
        stack, seen = [tip], set()
        while stack:
            eid = stack.pop()
            if eid in seen or eid in stops or eid in self.known:
                continue
            seen.add(eid)
            ev = repo.graph.event(eid)
            stack.extend(ev.parents)
            if ev.type in CHAIN_TYPES:
                continue
            mid = ev.causality.get("message_id")
            msg = store.get(mid) if isinstance(mid, str) and mid else None
            msg = msg if isinstance(msg, Message) else None
            self.add(Row("event", eid, group, eid), event_text(ev, msg))
            arts = [ev.causality.get("artifact_id")]
            if msg is not None:
                arts += [getattr(b, "output_ref", "") for b in msg.blocks]
            for aid in arts:
                if isinstance(aid, str) and aid and aid not in self.known:
                    art = store.get(aid)
                    if isinstance(art, Artifact):
                        self.add(Row("artifact", aid, group, eid), artifact_text(store, art))


class RetrievalIndex:
    """Open with `RetrievalIndex.open(repo)` (loads, catches up, or rebuilds the cache)."""

    def __init__(self, repo: Repository) -> None:
        self.repo = repo
        self.dir = Path(repo.path) / "cache" / "retrieval" if repo.path is not None else None
        self.rows: list[Row] = []
        self.main_rows = 0
        self.main: Any = None
        self.main_name: str | None = None
        self.delta: Any = None
        self.delta_texts: list[str] = []
        self.tips: dict[str, str] = {}
        self.sessions: dict[str, str] = {}
        self.built = ""
        self.ids: set[str] = set()
        #: what opening did: loaded | updated (+N rows) | rebuilt (why)
        self.how = ""
        self._arrays: tuple | None = None
        self._manifest: bytes | None = None  # the manifest this state was loaded from / saved as

    # -- opening ---------------------------------------------------------------------------------
    @classmethod
    def open(cls, repo: Repository, *, progress: Progress | None = None,
             rebuild: bool = False) -> RetrievalIndex:
        """The index of REPO, current with its refs. A process keeps the last one it opened per
        store and reuses it while the manifest on disk is the one it wrote or read."""
        require_bm25s()
        if repo.path is None:
            idx = cls(repo)
            idx._rebuild(progress, "in-memory store")
            return idx
        key = str(Path(repo.path).resolve())
        idx = _OPEN.get(key)
        if idx is None or idx.repo is not repo:
            idx = cls(repo)
        assert idx.dir is not None
        idx.dir.mkdir(parents=True, exist_ok=True)
        with LockFile(idx.dir / "update", wait=120):
            state, why = idx._load()
            if rebuild or state != "ok":
                idx._rebuild(progress, "asked" if rebuild else why)
            else:
                idx._refresh(progress)
        _OPEN[key] = idx
        return idx

    def _load(self) -> tuple[str, str]:
        """('ok' | 'absent' | 'damaged', why); reuses what is loaded when the manifest is the
        same."""
        assert self.dir is not None
        try:
            raw = (self.dir / "manifest.json").read_bytes()
            man = json.loads(raw)
        except FileNotFoundError:
            return "absent", "no index yet"
        except (OSError, ValueError) as exc:
            return "damaged", f"manifest unreadable ({exc})"
        if raw == self._manifest:
            return "ok", ""
        self._manifest, self._arrays = None, None
        try:
            if man.get("version") != INDEX_VERSION:
                return "damaged", f"index version {man.get('version')!r}"
            main, delta = (self._read(man, "main_rows_file"), self._read(man, "delta_file"))
            rows = [Row(*r) for r in main["rows"]]
            self.main_rows = len(rows)
            if self.main_rows != int(man["main_rows"]):
                return "damaged", "row counts disagree"
            self.rows = rows + [Row(*r) for r in delta["rows"]]
            self.delta_texts = list(delta["texts"])
            self.tips, self.sessions = dict(man["tips"]), dict(man["sessions"])
            self.main_name, self.built = man.get("main"), man.get("built", "")
            if len(self.rows) != self.main_rows + len(self.delta_texts):
                return "damaged", "row counts disagree"
            bm25s = require_bm25s()
            self.main = None
            if self.main_name:
                self.main = bm25s.BM25.load(str(self.dir / self.main_name), mmap=False)
                if self.main.scores["num_docs"] != self.main_rows:
                    return "damaged", "main index size disagrees with the manifest"
            self.delta = self._fit(self.delta_texts)
        except _Damaged as exc:
            return "damaged", str(exc)
        except (OSError, KeyError, TypeError, ValueError, CorruptObject) as exc:
            return "damaged", f"cache unreadable ({type(exc).__name__}: {exc})"
        self.ids = {r.id for r in self.rows}
        self._manifest = raw
        return "ok", ""

    def _read(self, man: dict, key: str) -> dict:
        assert self.dir is not None
        name, digest = man[key]
        data = (self.dir / name).read_bytes()
        if blake3.blake3(data).hexdigest() != digest:
            raise _Damaged(f"{name} does not match the manifest")
        return codec.unpack_value(data)

    @staticmethod
    def _fit(texts: list[str]):
        """A bm25s model of TEXTS (token ids built here: a third faster than handing bm25s
        lists of strings)."""
        if not texts:
            return None
        bm25s = require_bm25s()
        from bm25s.tokenization import Tokenized

        vocab: dict[str, int] = {"\0": 0}
        ids = [[vocab.setdefault(w, len(vocab)) for w in tokens(t)] or [0] for t in texts]
        model = bm25s.BM25()
        model.index(Tokenized(ids=ids, vocab=vocab), show_progress=False)
        return model

    def _rebuild(self, progress: Progress | None, why: str) -> None:
        col = _Collector(self.repo, set(), progress)
        self.tips = current_tips(self.repo)
        col.run({}, self.tips)
        self.rows, self.sessions = col.rows, col.sessions
        self.main_rows, self.delta_texts, self.delta = len(col.rows), [], None
        if progress is not None:
            progress("index", len(col.rows), len(col.rows))
        self.main = self._fit(col.texts)
        self.ids = {r.id for r in self.rows}
        self.how = f"rebuilt ({why})"
        self._save(new_main=True)

    def _refresh(self, progress: Progress | None) -> None:
        cur = current_tips(self.repo)
        if cur == self.tips:
            self.how = "loaded"
            return
        col = _Collector(self.repo, set(self.ids), progress)
        col.sessions = dict(self.sessions)
        col.run(self.tips, cur)
        if len(self.delta_texts) + len(col.rows) > max(DELTA_REBUILD_MIN, self.main_rows // 4):
            self._rebuild(progress, f"{len(self.delta_texts) + len(col.rows)} new rows")
            return
        self.rows += col.rows
        self.delta_texts += col.texts
        self.sessions, self.tips = col.sessions, cur
        self.ids.update(r.id for r in col.rows)
        self.delta = self._fit(self.delta_texts)
        self.how = f"updated (+{len(col.rows)} rows)"
        self._save(new_main=False)

    def _write(self, prefix: str, value: Any) -> list[str]:
        assert self.dir is not None
        data = codec.pack_value(value)
        name = f"{prefix}-{uuid.uuid4().hex[:12]}.msgpack"
        write_file_atomically(self.dir / name, data, fsync=False)
        return [name, blake3.blake3(data).hexdigest()]

    def _save(self, new_main: bool) -> None:
        """Main index and rows are written once per rebuild; an update rewrites only the delta
        file and the manifest (written last: it names the files of this state)."""
        self._arrays = None
        self.built = now_iso()
        if self.dir is None:
            return
        old = json.loads(self._manifest) if self._manifest and not new_main else {}
        if new_main:
            self.main_name = None
            if self.main is not None:
                self.main_name = f"main-{uuid.uuid4().hex[:12]}"
                self.main.save(str(self.dir / self.main_name))
        main_file = old.get("main_rows_file") or self._write(
            "rows", {"rows": [[r.kind, r.id, r.group, r.source] for r in self.rows[:self.main_rows]]})
        delta_file = self._write("delta", {
            "rows": [[r.kind, r.id, r.group, r.source] for r in self.rows[self.main_rows:]],
            "texts": self.delta_texts})
        man = {"version": INDEX_VERSION, "main": self.main_name, "main_rows": self.main_rows,
               "rows": len(self.rows), "main_rows_file": main_file, "delta_file": delta_file,
               "tips": self.tips, "sessions": self.sessions, "built": self.built}
        raw = json.dumps(man, sort_keys=True).encode()
        write_file_atomically(self.dir / "manifest.json", raw, fsync=False)
        self._manifest = raw
        keep = {main_file[0], delta_file[0], self.main_name}
        for path in self.dir.iterdir():
            if path.name.startswith(("rows-", "delta-", "main-")) and path.name not in keep:
                shutil.rmtree(path) if path.is_dir() else os.unlink(path)

    # -- querying --------------------------------------------------------------------------------
    def _index_arrays(self):
        if self._arrays is None:
            import numpy as np

            groups: dict[str, int] = {}
            kind_codes = {k: i for i, k in enumerate(KINDS)}
            kinds = np.fromiter((kind_codes[r.kind] for r in self.rows), dtype=np.int8,
                                count=len(self.rows))
            group_arr = np.fromiter((groups.setdefault(r.group, len(groups)) for r in self.rows),
                                    dtype=np.int32, count=len(self.rows))
            self._arrays = (kinds, group_arr, groups, kind_codes)
        return self._arrays

    def scores(self, query: str):
        """BM25 score of every row for QUERY (main rows, then delta rows)."""
        import numpy as np

        q = tokens(query)
        parts = []
        for model, n in ((self.main, self.main_rows), (self.delta, len(self.delta_texts))):
            if n == 0:
                continue
            known = [t for t in q if t in model.vocab_dict]
            parts.append(model.get_scores(known).astype(np.float32) if known
                         else np.zeros(n, dtype=np.float32))
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)

    def search(self, query: str, k: int = 10, *, kinds: Iterable[str] | None = None,
               groups: Iterable[str] | None = None, ids: Iterable[str] | None = None
               ) -> list[tuple[Row, float]]:
        """The K best rows for QUERY with a positive score, best first (ties: row order), among
        rows of KINDS, in GROUPS, with IDS (None: any)."""
        import numpy as np

        scores = self.scores(query)
        if not len(scores):
            return []
        kinds_arr, group_arr, group_ids, kind_codes = self._index_arrays()
        mask = scores > 0
        if kinds is not None:
            mask &= np.isin(kinds_arr, [kind_codes[k] for k in kinds])
        if groups is not None:
            mask &= np.isin(group_arr, [group_ids[g] for g in groups if g in group_ids])
        if ids is not None:
            wanted = set(ids)
            mask &= np.fromiter((r.id in wanted for r in self.rows), dtype=bool, count=len(self.rows))
        cand = np.flatnonzero(mask)
        if len(cand) > k:
            part = np.argpartition(-scores[cand], k - 1)[:k]
            cand = cand[part]
        order = sorted(cand.tolist(), key=lambda i: (-float(scores[i]), i))
        return [(self.rows[i], float(scores[i])) for i in order[:k]]

    def groups_of_project(self, project: str) -> list[str]:
        return [f"s:{sid}" for sid, key in self.sessions.items() if key == project]


def index_status(repo: Repository) -> tuple[str, str]:
    """('ok' | 'stale' | 'damaged' | 'absent' | 'n/a', detail) without loading bm25s: what fsck
    reports about the cache (a note, never a problem: it is rebuilt when needed)."""
    if repo.path is None:
        return "n/a", "in-memory store"
    d = Path(repo.path) / "cache" / "retrieval"
    try:
        man = json.loads((d / "manifest.json").read_bytes())
    except FileNotFoundError:
        return "absent", "built on first use (ctx memory search, ctx context --retrieve)"
    except (OSError, ValueError) as exc:
        return "damaged", f"manifest unreadable ({exc}); rebuilt on next use"
    try:
        for name, digest in (man["main_rows_file"], man["delta_file"]):
            if blake3.blake3((d / name).read_bytes()).hexdigest() != digest:
                return "damaged", f"{name} disagrees with the manifest; rebuilt on next use"
        if man["main"] and not (d / man["main"]).is_dir():
            return "damaged", "the main index is missing; rebuilt on next use"
    except (OSError, KeyError, TypeError) as exc:
        return "damaged", f"{type(exc).__name__}: {exc}; rebuilt on next use"
    try:
        tips = current_tips(repo)
    except CtxError as exc:
        return "damaged", str(exc)
    rows = man.get("rows", man["main_rows"])
    if tips != man["tips"]:
        return "stale", f"{rows} rows; refs moved since {man['built']}: caught up on next use"
    return "ok", f"{rows} rows, built {man['built']}"
