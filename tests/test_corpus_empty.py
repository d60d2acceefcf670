"""`CTXSTORE_CORPUS` pointing at an empty folder (a typo, a corpus not yet copied) is reported
like a missing corpus — one line under CI=true, a skip with the how-to elsewhere — instead of
one NotFound or FileNotFoundError traceback per real-data test (issue 35)."""

from __future__ import annotations

from .test_corpus_location import _copy, _run


def test_an_empty_corpus_folder_is_one_line_under_ci_and_a_skip_elsewhere(tmp_path):
    repo = _copy(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()

    failed = _run(repo, CI="true", CTXSTORE_CORPUS=str(empty))
    out = failed.stdout + failed.stderr
    assert failed.returncode == 1, out
    lines = [x for x in out.splitlines() if "corpus" in x and str(empty) in x]
    assert len(lines) == 1 and f"{empty} is empty" in lines[0] and "CTXSTORE_CORPUS=" in lines[0]
    assert "Traceback" not in out and "FileNotFoundError" not in out and "passed" not in out

    skipped = _run(repo, CTXSTORE_CORPUS=str(empty))
    assert skipped.returncode == 0 and "1 skipped" in skipped.stdout, skipped.stdout
    assert f"{empty} is empty" in skipped.stdout
