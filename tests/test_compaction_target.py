"""Compaction depends on the CompactionTarget protocol, not on ContextManager: a bare binding of
one branch (repository + projector + tokenizer) compacts and merges exactly as the manager does."""

from __future__ import annotations

from dataclasses import dataclass

from ctxstore.compaction import CompactionTarget, compact, merge_branch
from ctxstore.context import EstimateTokenizer
from ctxstore.refs import branch_ref
from ctxstore.repo import Repository
from ctxstore.repo.revparse import resolve_event
from ctxstore.state.projector import Projector

from .sessions_factory import coding_session


@dataclass
class BareBranch:
    """The protocol and nothing else."""

    repo: Repository
    projector: Projector
    tokenizer: EstimateTokenizer
    session: str
    branch: str
    ref: str

    @property
    def tip(self) -> str:
        return self.repo.refs.read(self.ref)

    def resolve(self, rev: str | None) -> str:
        return self.tip if rev is None else resolve_event(self.repo, rev)


def _bare(cm, branch: str = "main") -> CompactionTarget:
    return BareBranch(cm.repo, Projector(cm.repo), EstimateTokenizer(), cm.session, branch,
                      branch_ref(cm.session, branch))


def test_a_bare_target_compacts_like_the_manager():
    cm = coding_session(8)
    cm.tokenizer = EstimateTokenizer()
    via_manager = compact(cm, keep_recent_tokens=300, dry_run=True).to_dict()
    via_protocol = compact(_bare(cm, cm.branch), keep_recent_tokens=300, dry_run=True).to_dict()
    assert via_protocol == via_manager and via_manager["summarized_events"] > 0
    res = compact(_bare(cm, cm.branch), keep_recent_tokens=300)
    assert res.committed and cm.repo.graph.event(cm.tip).type == "CompactionCompleted"


def test_a_bare_target_merges_a_branch():
    cm = coding_session(2)
    side = cm.fork("side")
    for t in range(5):
        side.record_tool_call(f"e{t}", "grep", {"q": f"thing {t}"})
        side.record_tool_result(f"e{t}", f"found thing {t} in src/x.py\n" * 40)
    main_tip = cm.tip
    res = merge_branch(_bare(cm, cm.branch), "side")
    assert res.committed and res.summarized == 15
    assert cm.repo.graph.event(cm.tip).parents == (main_tip, side.tip)
