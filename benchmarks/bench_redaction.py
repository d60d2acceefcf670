"""Issue 17's redaction benchmark: throughput on the whole corpus, MB/s and events/s.

    .venv/bin/python -m benchmarks.bench_redaction [--quick]

Rows, all over the same transcripts (every *.jsonl under the corpus; --quick: the first 10):

- baseline "detect-secrets scan_file": detect-secrets' own scanner as its CLI runs it
  (`SecretsCollection.scan_file`, default settings: every plugin and filter) on the files;
- "Redactor, built-in patterns": ctxstore's patterns alone (what runs without the extra);
- "Redactor, built-in + detect-secrets": the default policy, line by line over the raw text;
- "store rewrite (pack/export/purge path)": every session imported into a memory store, then
  `redacted_view` over all refs — every object decoded, every string redacted, changed
  objects re-hashed; MB are the object bytes scanned, events/s counts the store's events;
- "build_context, redaction on/off": a 32k-token build at the tip of the longest transcript's
  main session; cold = a fresh ContextManager (new redactor, empty memo; detect-secrets
  already imported), warm = the same manager again (what a harness pays per call).
"""

from __future__ import annotations

import time
from pathlib import Path

from .bench_context import _best
from .corpus_import import corpus_files, imported, longest
from .table import run_and_print


def _files(quick: bool) -> list[Path]:
    files = corpus_files()
    return files[:10] if quick else files


def _detect_secrets_baseline(files: list[Path]) -> tuple[float, int]:
    from detect_secrets import SecretsCollection
    from detect_secrets.settings import default_settings

    t = time.perf_counter()
    found = 0
    with default_settings():
        coll = SecretsCollection()
        for f in files:
            coll.scan_file(str(f))
        found = sum(len(v) for v in coll.data.values())
    return time.perf_counter() - t, found


def _redactor_lines(files: list[Path], policy) -> tuple[float, int, int]:
    from ctxstore.redaction import Redactor

    r = Redactor(policy)
    r.MEMO_LIMIT = 0  # measure the scan, not the memo
    lines = [ln for f in files for ln in f.read_text(encoding="utf-8").splitlines()]
    t = time.perf_counter()
    fired = 0
    for ln in lines:
        r._memo.clear()
        fired += len(r.redact(ln)[1])
    return time.perf_counter() - t, fired, len(lines)


def _store_rewrite(files: list[Path]) -> tuple[float, int, int, int]:
    from ctxstore.importers import import_paths
    from ctxstore.redaction import redacted_view
    from ctxstore.repo import Repository

    repo = Repository.memory()
    import_paths(repo, [str(f) for f in files])
    refs = dict(repo.refs.iter_refs("refs/"))
    events = len(repo.graph.reachable_events(list(refs.values())))
    t = time.perf_counter()
    view = redacted_view(repo, refs)
    return time.perf_counter() - t, view.report.bytes_scanned, events, view.report.redactions


def run(quick: bool = False) -> list[dict]:
    from ctxstore.redaction import RedactionPolicy, detect_secrets_available

    files = _files(quick)
    if not files:
        return [{"benchmark": "redaction", "result": "n/a: no corpus (set CTXSTORE_CORPUS)"}]
    mb = sum(f.stat().st_size for f in files) / 1e6
    n_lines = sum(1 for f in files for _ in f.open(encoding="utf-8"))
    rows = []
    if detect_secrets_available():
        secs, found = _detect_secrets_baseline(files)
        rows.append({"what": "baseline: detect-secrets scan_file (all plugins)", "MB": mb,
                     "lines": n_lines, "seconds": secs, "MB/s": mb / secs,
                     "lines/s": n_lines / secs, "found": found})
    secs, fired, n = _redactor_lines(files, RedactionPolicy(detectors=()))
    rows.append({"what": "Redactor, built-in patterns", "MB": mb, "lines": n, "seconds": secs,
                 "MB/s": mb / secs, "lines/s": n / secs, "found": fired})
    if detect_secrets_available():
        secs, fired, n = _redactor_lines(files, RedactionPolicy())
        rows.append({"what": "Redactor, built-in + detect-secrets (default)", "MB": mb,
                     "lines": n, "seconds": secs, "MB/s": mb / secs, "lines/s": n / secs,
                     "found": fired})
    secs, scanned, events, redactions = _store_rewrite(files)
    rows.append({"what": "store rewrite, all refs (pack/export/purge path)",
                 "MB": scanned / 1e6, "events": events, "seconds": secs,
                 "MB/s": scanned / 1e6 / secs, "events/s": events / secs, "found": redactions})
    path = longest(1)[0]
    with imported(path) as cm:
        from ctxstore import ContextManager

        def cold() -> None:  # a fresh manager: new compiler, new redactor, empty memo
            ContextManager(cm.repo, cm.session, cm.branch).build_context(budget=32_000,
                                                                           auto_compact=False)

        def warm() -> None:
            cm.build_context(budget=32_000, auto_compact=False)

        times = {}
        for flag in (True, False, True, False):  # alternated: the machine's load drifts
            cm.repo.config["redaction"] = {"on_build": flag}
            for name, fn in (("cold", cold), ("warm", warm)):
                t = _best(fn, 3 if name == "cold" else 7)
                times[(flag, name)] = min(times.get((flag, name), t), t)
    for name in ("cold", "warm"):
        on, off = times[(True, name)], times[(False, name)]
        rows.append({"what": f"build_context 32k ({name}), {path.name[:32]}",
                     "redaction on ms": on * 1e3, "redaction off ms": off * 1e3,
                     "overhead ms": (on - off) * 1e3})
    return rows


def main() -> None:
    run_and_print(run, "Redaction throughput (issue 17)")


if __name__ == "__main__":
    main()
