"""A state machine over operations — append, fork, reset, checkout, merge, compact, import, gc,
undo, op restore — checking after every step that undo restores exactly the refs the previous
operation left, op restore the refs right after its operation, and that no object a ref or a
young operation names ever disappears (gc runs as one of the steps)."""

from __future__ import annotations

import json
import shutil
import tempfile
import uuid
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ctxstore.compaction import compact, merge_branch
from ctxstore.errors import BadRevision, CompactionRejected, RefConflict
from ctxstore.importers.porcelain import import_paths
from ctxstore.maintenance import gc as pm
from ctxstore.manager import ContextManager
from ctxstore.porcelain import branches as pb
from ctxstore.refs import HEAD, split_branch_ref
from ctxstore.repo import Repository, operations


def _claude_file(path: Path, prompts: list[str]) -> None:
    sid = str(uuid.uuid4())
    lines, parent = [], None
    for i, text in enumerate(prompts):
        for role, content in (("user", text), ("assistant", [{"type": "text", "text": f"ok {i}"}])):
            u = str(uuid.uuid4())
            lines.append({"type": role, "uuid": u, "parentUuid": parent, "sessionId": sid,
                          "timestamp": f"2026-01-01T00:00:{len(lines):02d}.000Z",
                          "message": {"role": role, "content": content}})
            parent = u
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")


class OperationLog(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="oplog-"))
        self.repo = Repository.init(self.dir, durability="never")
        self.repo.new_session(title="machine", goal="keep the refs honest")
        self.after: dict[str, dict] = {}  # operation id -> every ref right after it
        self.n = 0
        self._record()

    def teardown(self) -> None:
        self.repo.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers ---------------------------------------------------------------------------------
    def _refs(self) -> dict:
        out = dict(self.repo.refs.iter_refs("refs/"))
        out[HEAD] = self.repo.refs.read_head_value()
        return out

    def _record(self) -> None:
        head = operations.op_head(self.repo)
        if head is not None and head not in self.after:
            self.after[head] = self._refs()

    def _cm(self) -> ContextManager | None:
        cur = self.repo.current()
        if cur.ref is None or cur.tip is None or split_branch_ref(cur.ref) is None:
            return None
        return ContextManager(self.repo)

    # -- operations ------------------------------------------------------------------------------
    @rule(text=st.text(min_size=1, max_size=40))
    def append(self, text):
        cm = self._cm()
        if cm is not None:
            cm.add_user_message(text)
            cm.add_assistant_message(f"noted: {text}", tool_calls=[
                {"id": f"c{self.n}", "name": "bash", "args": {"cmd": "ls"}}])
            cm.record_tool_result(f"c{self.n}", "a\nb\n" * 50, name="bash")
            self.n += 1
        self._record()

    @rule()
    def fork(self):
        if self._cm() is not None:
            self.n += 1
            pb.fork(self.repo, f"side-{self.n}")
        self._record()

    @rule(back=st.integers(1, 3))
    def reset(self, back):
        if self._cm() is not None:
            try:
                pb.reset(self.repo, f"HEAD~{back}")
            except BadRevision:
                pass  # history too short: nothing written
        self._record()

    @rule()
    def checkout_main(self):
        cur = self.repo.current()
        if cur.session and cur.branch != "main" and self.repo.branches(cur.session).get("main"):
            pb.checkout(self.repo, "main")
        self._record()

    @rule()
    def merge(self):
        cm = self._cm()
        if cm is not None:
            others = [b for b in self.repo.branches(cm.session) if b != cm.branch]
            if others:
                try:
                    merge_branch(cm, others[0])
                except CompactionRejected:
                    pass
        self._record()

    @rule()
    def compact(self):
        cm = self._cm()
        if cm is not None:
            try:
                compact(cm, keep_recent_tokens=50)
            except (CompactionRejected, BadRevision):
                pass
        self._record()

    @rule(prompts=st.lists(st.text(min_size=1, max_size=20), min_size=1, max_size=3))
    def import_file(self, prompts):
        path = self.dir / f"t{self.n}.jsonl"
        self.n += 1
        _claude_file(path, prompts)
        import_paths(self.repo, [path])
        self._record()

    @rule()
    def gc(self):
        pm.gc(self.repo, prune="now")
        self._record()

    @precondition(lambda self: operations.op_head(self.repo) is not None)
    @rule()
    def undo(self):
        newest = next(operations.walk(self.repo))
        parent = newest.op.parents[0] if newest.op.parents else None
        try:
            operations.undo(self.repo)
        except RefConflict:
            raise AssertionError("undo of the newest operation can only conflict with a writer "
                                 "outside the log") from None
        if parent in self.after:
            assert self._refs() == self.after[parent]
        self._record()

    @precondition(lambda self: len(self.after) > 1)
    @rule(data=st.data())
    def restore(self, data):
        ops = list(self.after)  # in the order they happened (ids differ run to run: times)
        target = ops[data.draw(st.integers(0, len(ops) - 1))]
        operations.restore(self.repo, target)
        assert self._refs() == self.after[target]
        self._record()

    # -- invariants ------------------------------------------------------------------------------
    @invariant()
    def named_objects_exist(self):
        store = self.repo.objects
        for _name, tip in self.repo.refs.iter_refs("refs/"):
            assert tip in store
        for lo in operations.walk(self.repo):
            for _ref, old, new in lo.op.changes:
                for v in (old, new):
                    if v and not v.startswith("ref: "):
                        assert v in store, f"{v[:12]} named by operation {lo.id[:12]} is gone"


OperationLog.TestCase.settings = settings(max_examples=25, stateful_step_count=16, deadline=None)
test_operation_log = OperationLog.TestCase
