"""Import idempotence and export round trips on the whole corpus in ONE on-disk store, checked
the naive way: the store's files byte for byte (not the store's own counts), and every exported
session against the raw JSON lines of its source file (json.loads, nothing from the importers).
Real data: the corpus (tests/corpus.py)."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest

from ctxstore.importers import export_session, import_paths
from ctxstore.repo import Repository
from tests.oracles import reachability as oracle

pytestmark = pytest.mark.usefixtures("corpus")


def _files(ctx_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(ctx_dir).as_posix(): p.read_bytes()
            for p in sorted(ctx_dir.rglob("*")) if p.is_file()}


def _raw_lines(path: Path) -> list:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _exported_equals_source(text: str, source: Path) -> bool | None:
    """Whether an export is the source again, read the naive way: JSONL line by line, a JSON
    document as one value; None for a source that is neither (a folder, a database, a
    Markdown history: their round trips are checked per harness in tests/test_import_*.py)."""
    if source.suffix == ".jsonl":
        return [json.loads(x) for x in text.splitlines()] == _raw_lines(source)
    if source.suffix == ".json" and source.is_file():
        return json.loads(text) == json.loads(source.read_text(encoding="utf-8"))
    return None


def _import_twice(corpus, path):
    repo = Repository.init(path)
    first = import_paths(repo, [corpus])
    repo.close()
    before = _files(path / ".ctx")
    assert any(k.startswith("objects/packs/") for k in before) and any(k.startswith("refs/") for k in before)
    repo = Repository.open(path)
    again = import_paths(repo, [corpus])
    repo.close()
    return first, again, before, _files(path / ".ctx")


def test_whole_corpus_reimport_adds_nothing_and_exports_json_equal(corpus, tmp_path):
    first, again, before, after = _import_twice(corpus, tmp_path)
    assert again.new_events == 0 and again.events == first.events
    # refs, reflogs and caches byte for byte; objects by the oracle's full walk
    outside_packs = lambda files: {k: v for k, v in files.items() if "/packs/" not in k}  # noqa: E731
    assert outside_packs(after) == outside_packs(before)
    repo = Repository.open(tmp_path)
    ids_after = oracle.ObjectGraph(repo.objects).ids
    repo.close()
    shutil.copytree(tmp_path / ".ctx", tmp_path / "check" / ".ctx")
    for k, v in before.items():  # the store as it was before the re-import
        if "/packs/" in k:
            (tmp_path / "check" / ".ctx" / k).write_bytes(v)
    repo = Repository.open(tmp_path / "check")
    assert oracle.ObjectGraph(repo.objects).ids == ids_after
    repo.close()

    repo = Repository.open(tmp_path)
    by_name = {p.name: p for p in corpus.rglob("*") if p.suffix in (".jsonl", ".json")}
    checked = 0
    for s in first.sessions:
        if repo.session(s.session).origin.get("layout") == "inline":
            continue  # written back inside the parent's file
        source = by_name.get(Path(s.file).name)
        if source is None:
            continue  # a folder or database unit: tests/test_import_<harness>.py
        out = io.StringIO()
        export_session(repo, s.session, s.format, out)
        same = _exported_equals_source(out.getvalue(), source)
        if same is None:
            continue
        assert same, s.file
        checked += 1
    repo.close()
    assert checked >= len(list(corpus.glob("*/*.jsonl")))  # every top-level transcript at least


def test_whole_corpus_reimport_writes_not_one_byte(corpus, tmp_path):
    _, _, before, after = _import_twice(corpus, tmp_path)
    assert sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k)) == []
