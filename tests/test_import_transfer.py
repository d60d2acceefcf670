"""End to end across features: an imported transcript survives pack → unpack into a fresh
store and gc, and still exports JSON-equal to the original file (every object an imported line
needs is reachable)."""

from __future__ import annotations

import json

import pytest

from ctxstore import Repository
from ctxstore.importers import export_session, import_paths
from ctxstore.maintenance import gc as maintenance
from ctxstore.objects.links import reachable
from ctxstore.porcelain import transfer
from tests.corpus import corpus_root

CORPUS = corpus_root()
FILES = [CORPUS / "claude-code" / "ccl_jssoundrecorder_queue-operation-thinking_v2.0.42.jsonl",
         CORPUS / "codex" / "rollout-genuine_v0.58.0_chatbot-ui-lmstudio_019a93b9.jsonl",
         CORPUS / "pi" / "pi-mono_before-compaction_v1-format_genuine.jsonl"]
FORMAT = {"claude-code": "claude-code", "codex": "codex", "pi": "pi"}

pytestmark = pytest.mark.usefixtures("corpus")


def _lines(text: str) -> list:
    return [json.loads(x) for x in text.splitlines() if x.strip()]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.parent.name)
def test_imported_session_survives_pack_unpack_and_gc(tmp_path, path):
    import io

    src = Repository.init(tmp_path / "src")
    report = import_paths(src, [str(path)])
    sid = report.sessions[0].session
    pack = tmp_path / "s.ctxpack"
    transfer.pack(src, str(pack), [sid])
    roots = [tip for _, tip in src.refs.iter_refs()]
    needed = reachable(src.objects, roots)
    src.close()

    dst = Repository.init(tmp_path / "dst")
    transfer.unpack(dst, str(pack))
    assert all(i in dst.objects for i in needed)
    maintenance.gc(dst, prune="now")
    out = io.StringIO()
    export_session(dst, sid, FORMAT[path.parent.name], out)
    assert _lines(out.getvalue()) == _lines(path.read_text(encoding="utf-8"))
    dst.close()


def test_full_fsck_is_clean_on_the_whole_imported_corpus(tmp_path):
    """Imported compactions (empty first_kept, or an empty range the source recorded) and
    merge records are valid records, not fsck problems."""
    from ctxstore import ContextManager
    from ctxstore.compaction import compact, merge_branch
    from ctxstore.maintenance import fsck as fsck_repo

    store = Repository.init(tmp_path)
    import_paths(store, [str(CORPUS)])
    from tests.sessions_factory import coding_session

    cm = coding_session(8, store=store)
    alt = cm.fork("alt")
    alt.record_tool_call("a1", "bash", {"cmd": "ls"})
    alt.record_tool_result("a1", "x\n" * 500)
    compact(cm, keep_recent_tokens=300)
    merge_branch(cm, "alt")
    assert isinstance(cm, ContextManager)
    assert fsck_repo.check(store, full=True).problems == []
