"""Hypothesis state machine over append / fork / checkout / reset / merge on one session.

Checks, after every step: objects never change or disappear; a branch never mutates another
branch's history (ancestor branches keep their events); every reset is recoverable from the
reflog; merge-base and diff equal brute-force answers.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from ctxstore.porcelain import branches as pb
from ctxstore.refs import branch_ref
from ctxstore.repo import Repository


def ancestors(repo: Repository, eid: str) -> set[str]:
    out, stack = set(), [eid]
    while stack:
        e = stack.pop()
        if e not in out:
            out.add(e)
            stack.extend(repo.graph.event(e).parents)
    return out


def brute_merge_bases(repo, a, b) -> set[str]:
    common = ancestors(repo, a) & ancestors(repo, b)
    # best common ancestors: not an ancestor of another common ancestor
    return {c for c in common if not any(c != o and c in ancestors(repo, o) for o in common)}


class DagMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.repo = Repository.memory()
        self.sid, root = self.repo.new_session("prop", ts="2026-01-01T00:00:00.000Z", nonce="prop")
        self.snap: dict[str, bytes] = {}
        self.history: dict[str, set[str]] = {"main": {root}}
        self.n = 0
        self.resets: list[tuple[str, str]] = []  # (branch, old tip)

    def _branches(self):
        return self.repo.branches(self.sid)

    def _current(self):
        return self.repo.current().branch

    @rule(k=st.integers(1, 3))
    def append(self, k):
        branch = self._current()
        with self.repo.transaction() as tx:
            for _ in range(k):
                self.n += 1
                tx.append("UserPromptSubmitted", "user", {"text": f"m{self.n}"},
                          ts=f"2026-01-01T00:00:{self.n % 60:02d}.000Z")
        self.history[branch] = ancestors(self.repo, tx.tip)

    @rule(data=st.data())
    def fork(self, data):
        name = f"b{len(self._branches())}"
        tip = self.repo.current().tip
        at = data.draw(st.sampled_from(sorted(ancestors(self.repo, tip))))
        pb.fork(self.repo, name, at)
        self.history[name] = ancestors(self.repo, at)

    @rule(data=st.data())
    def checkout(self, data):
        name = data.draw(st.sampled_from(sorted(self._branches())))
        pb.checkout(self.repo, name)

    @precondition(lambda self: self.n > 0)
    @rule(data=st.data())
    def reset(self, data):
        branch = self._current()
        tip = self.repo.current().tip
        target = data.draw(st.sampled_from(sorted(ancestors(self.repo, tip))))
        pb.reset(self.repo, target)
        self.resets.append((branch, tip))
        self.history[branch] = ancestors(self.repo, target)

    @rule(data=st.data())
    def merge(self, data):
        branches = self._branches()
        other = data.draw(st.sampled_from(sorted(branches)))
        if other == self._current():
            return
        with self.repo.transaction() as tx:
            tx.append("BranchMerged", "agent", {"branch": other}, extra_parents=(branches[other],),
                      ts="2026-01-01T00:01:00.000Z")
        self.history[self._current()] = ancestors(self.repo, tx.tip)

    @invariant()
    def objects_never_change(self):
        store = self.repo.objects
        for oid, body in self.snap.items():
            assert store.get_raw(oid)[1] == body
        for oid in store:
            self.snap.setdefault(oid, store.get_raw(oid)[1])

    @invariant()
    def branches_keep_their_own_history(self):
        for name, tip in self._branches().items():
            assert ancestors(self.repo, tip) == self.history[name]

    @invariant()
    def resets_recoverable_from_reflog(self):
        for branch, old_tip in self.resets:
            log = self.repo.refs.reflog(branch_ref(self.sid, branch))
            assert any(e.new == old_tip for e in log)

    @invariant()
    def merge_base_and_diff_match_brute_force(self):
        tips = sorted(self._branches().values())
        for a in tips:
            for b in tips:
                bases = self.repo.graph.merge_bases(a, b)
                assert set(bases) == brute_merge_bases(self.repo, a, b)
                d = self.repo.graph.diff(a, b)
                assert set(d.only_a) == ancestors(self.repo, a) - ancestors(self.repo, b)
                assert set(d.only_b) == ancestors(self.repo, b) - ancestors(self.repo, a)


TestDag = DagMachine.TestCase
