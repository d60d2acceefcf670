"""Import speed per harness: `ctx import` of each corpus folder against reading and parsing it.

    .venv/bin/python -m benchmarks.bench_harnesses [--quick] [HARNESS...]   # --help: this text

For each harness folder of the corpus (`$CTXSTORE_CORPUS`, else ../shared/corpus/sessions),
every session unit the importers find there (the folder walk `ctx import DIR` does) is imported
into a fresh on-disk store, best of 3 (1 with --quick). The baseline, measured in the same run,
is what any reader of the same files must do: read every byte and parse it (json.loads per
JSONL line, json.load of a document, each file of a storage tree, every row of a SQLite
database with its JSON columns decoded, the lines of a Markdown history). Rows: records
(source lines, elements or rows the importer kept), records/s of the import, records/s of the
parse alone, and the ratio.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from tests.corpus import corpus_root

HARNESSES = ("claude-code", "codex", "pi", "gemini", "qwen", "copilot", "opencode", "cursor",
             "goose", "aider", "cline")


def _parse_unit(path: Path) -> None:
    """Read and parse one session unit the way the cheapest reader of its format must."""
    if path.is_dir():
        for f in sorted(path.rglob("*")):
            if f.is_file() and not f.is_symlink():
                _parse_unit(f)
        return
    name = path.name
    if name.endswith((".db", ".vscdb", ".sqlite")):
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
            for t in tables:
                for row in con.execute(f'select * from "{t}"'):
                    for v in row:
                        if isinstance(v, str) and v[:1] in "{[":
                            try:
                                json.loads(v)
                            except ValueError:
                                pass
        finally:
            con.close()
        return
    data = path.read_bytes()
    if name.endswith(".jsonl"):
        for line in data.splitlines():
            if line.strip():
                try:
                    json.loads(line)
                except ValueError:
                    pass
    elif name.endswith(".json"):
        try:
            json.loads(data)
        except ValueError:
            pass
    else:
        data.decode("utf-8", "replace").splitlines()


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def measure(harness: str, folder: Path, repeat: int) -> dict:
    from ctxstore.importers import import_paths
    from ctxstore.importers.detect import walk
    from ctxstore.repo import Repository

    units = walk(folder)
    records = 0

    def run_import() -> None:
        nonlocal records
        tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-harness-"))
        try:
            repo = Repository.init(tmp)
            try:
                report = import_paths(repo, [str(u) for u in units])
            finally:
                repo.close()
            records = sum(s.records for s in report.sessions)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    imp = _best(run_import, repeat)
    parse = _best(lambda: [_parse_unit(u) for u in units], repeat)
    return {"harness": harness, "units": len(units), "records": records,
            "import_s": round(imp, 3), "import_records_per_s": round(records / imp) if imp else 0,
            "parse_s": round(parse, 4),
            "parse_records_per_s": round(records / parse) if parse else 0,
            "import_vs_parse": f"{imp / parse:.0f}x" if parse else "-"}


def run(quick: bool, only: tuple[str, ...] = ()) -> list[dict]:
    root = corpus_root()
    if not root.is_dir():
        return [{"harness": "corpus", "note": f"not found at {root}: set CTXSTORE_CORPUS"}]
    rows = []
    for h in only or HARNESSES:
        folder = root / h
        if folder.is_dir():
            rows.append(measure(h, folder, 1 if quick else 3))
    return rows


def main() -> None:
    from .table import print_rows

    if "-h" in sys.argv[1:] or "--help" in sys.argv[1:]:
        print(__doc__.strip())
        return
    only = tuple(a for a in sys.argv[1:] if not a.startswith("-"))
    print_rows(run("--quick" in sys.argv, only), "import speed per harness")


if __name__ == "__main__":
    main()
