"""Search quality on the real corpus: tests/data/search_questions.json holds questions written
from the transcripts, each with the events that answer it, named by their source file and line
(stable across imports, unlike event ids) and the text that makes them an answer. The
answering event must be among the first five hits for at least 90% of the questions."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxstore import Repository
from ctxstore.search import search
from ctxstore.search.documents import event_document
from ctxstore.search.index import connect, full_id, index_path

QUESTIONS = Path(__file__).parent / "data" / "search_questions.json"


@pytest.fixture(scope="module")
def corpus_repo(tmp_path_factory):
    from tests.corpus import require_corpus

    corpus = require_corpus()
    root = tmp_path_factory.mktemp("quality")
    env_cmd = [sys.executable, "-m", "ctxstore.cli", "--store", str(root)]
    subprocess.run([sys.executable, "-m", "ctxstore.cli", "init", str(root)], check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run([*env_cmd, "import", str(corpus)], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    with Repository.open(root / ".ctx") as repo:
        yield repo


def source_of(repo, eid: str) -> tuple[str, int] | None:
    """The transcript line an event came from: its own, or the nearest on its first-parent
    chain (an importer records the line on the first event it makes of it)."""
    for _e, ev in repo.graph.first_parents(eid):
        src = ev.payload.get("source")
        if hasattr(src, "get") and src.get("file"):
            return src["file"], src.get("line")
    return None


def test_the_questions_are_enough_and_their_answers_hold(corpus_repo):
    questions = json.loads(QUESTIONS.read_text())
    assert len(questions) >= 30
    search(corpus_repo, "anything", limit=1)  # builds the index
    con = connect(index_path(corpus_repo))
    texts: dict[tuple, list[str]] = {}
    for key, harness in con.execute(
            "SELECT d.key, s.harness FROM docs d JOIN sessions s ON s.sid = d.sid"):
        eid = full_id(corpus_repo, key)
        pos = source_of(corpus_repo, eid)
        if pos:
            ev = corpus_repo.graph.event(eid)
            texts.setdefault(pos, []).append(
                event_document(corpus_repo, ev, harness, effects=False).text.lower())
    con.close()
    for q in questions:
        assert q["answers"], q["question"]
        for a in q["answers"]:
            held = texts.get((a["file"], a["line"]), [])
            assert any(all(n.lower() in t for n in alt) for alt in q["evidence"] for t in held), \
                f"{q['question']}: {a} no longer holds its evidence"


def test_answers_rank_in_the_top_five(corpus_repo):
    questions = json.loads(QUESTIONS.read_text())
    found, missed = 0, []
    for q in questions:
        want = {(a["file"], a["line"]) for a in q["answers"]}
        got = [source_of(corpus_repo, h.event) for h in search(corpus_repo, q["question"], limit=5)]
        if want.intersection(got):
            found += 1
        else:
            missed.append(q["question"])
    rate = found / len(questions)
    print(f"search quality: {found}/{len(questions)} = {rate:.0%} in the top 5; missed: {missed}")
    assert rate >= 0.9, missed
