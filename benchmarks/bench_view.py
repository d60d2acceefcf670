"""`ctx view` (issue 18): time to first render in headless Chromium, and export size.

Two sessions: the longest main session of the corpus (imported alone, as `ctx import FILE`
would) and a generated session of 100,000 events (10,000 turns of prompt, responses with
provider usage, tool calls and results; `--quick`: 10,000 events). For each: the time to build
the page's data and HTML in Python, the time from navigation start to the first drawn view in
headless Chromium (`window.__ctxFirstRender`, set in the frame after the page has drawn the
session: header, token chart, graph rows on screen, the first window of turns), where that
time goes (reading and parsing the HTML until the script starts, JSON.parse of the embedded
data, preparing and drawing), the page's size per 1,000 events, and beside it the baseline the
size is judged against: the same session as neutral JSONL (`ctx export --format jsonl`) per
1,000 events. Targets: first render < 1 s
(corpus) and < 3 s (100k).

Run alone: `.venv/bin/python -m benchmarks.bench_view [--quick]` (needs /usr/bin/chromium,
/usr/bin/chromedriver and selenium: `pip install -e '.[dev,viewer]'`).
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import time
from pathlib import Path

from ctxstore.importers.export import export_session
from ctxstore.repo import Repository
from ctxstore.viewer import export, model
from ctxstore.viewer.page import render_page
from tests.browser import browser, missing, wait_ready

from .corpus_import import imported, longest
from .table import run_and_print

TARGETS = {"corpus": 1.0, "generated": 3.0}


def _generated(root: Path, events: int) -> tuple[Repository, str]:
    from ctxstore.porcelain.sessions import append_batch

    repo = Repository.init(root)
    sid, _ = repo.new_session("generated session", "a long run of tool calls")
    lines = []
    n, turn = 1, 0
    while n < events:
        turn += 1
        lines.append({"type": "UserPromptSubmitted", "actor": "user",
                      "payload": {"text": f"Turn {turn}: run the tests and fix what fails"}})
        for k in range(3):
            lines.append({"type": "ModelResponseReceived", "actor": "model",
                          "payload": {"text": f"Step {k} of turn {turn}.",
                                      "usage": {"input_tokens": 1000 + (turn * 37) % 90000,
                                                "output_tokens": 200 + k}}})
            cid = f"call_{turn}_{k}"
            lines.append({"type": "ToolCallRequested", "actor": "model",
                          "payload": {"name": "Bash", "tool_call_id": cid,
                                      "args": {"command": f"pytest tests/test_{k}.py"}}})
            lines.append({"type": "ToolCallFinished", "actor": "tool",
                          "payload": {"name": "Bash", "tool_call_id": cid,
                                      "preview": f"{k + 3} passed in 0.{k}s"}})
        n += 10
    lines = lines[:events - 1]
    append_batch(repo, (json.dumps(x) for x in lines))
    return repo, sid


def _jsonl_bytes(repo: Repository, sid: str) -> int:
    buf = io.StringIO()
    export_session(repo, sid, "jsonl", buf)
    return len(buf.getvalue().encode("utf-8"))


def _measure(driver, repo: Repository, sid: str, label: str, tmp: Path, runs: int) -> dict:
    t0 = time.perf_counter()
    store = model.store_model(repo)
    tgt = export.target(repo, sid, store=store)
    tgt.sessions = [sid]
    data = export.export_data(repo, tgt, store)
    page = render_page(data, title=tgt.title)
    build = time.perf_counter() - t0
    path = tmp / f"{label}.html"
    path.write_text(page, encoding="utf-8")
    events = len(data["data"][sid]["events"])
    size = path.stat().st_size
    renders = []
    for _ in range(runs):
        driver.get("about:blank")
        driver.get(f"file://{path}{tgt.start}")
        wait_ready(driver, timeout=120)
        t = driver.execute_script("return window.__ctxTimes")
        renders.append((t["drawn"] / 1000, t))
    first, times = min(renders, key=lambda r: r[0])
    jsonl = _jsonl_bytes(repo, sid)
    return {"session": label, "events": events,
            "states kept": data["data"][sid]["states_mode"],
            "build s (python)": round(build, 2),
            "first render s": round(first, 3), "target s": TARGETS[label.split()[0]],
            "of which: load+HTML s": round(times["start"] / 1000, 2),
            "JSON.parse s": round((times["parsed"] - times["start"]) / 1000, 2),
            "draw s": round((times["drawn"] - times["parsed"]) / 1000, 2),
            "met": first < TARGETS[label.split()[0]],
            "page MB": round(size / 1e6, 2),
            "page KB / 1k events": round(size / 1e3 / events * 1000, 1),
            "baseline: JSONL KB / 1k events": round(jsonl / 1e3 / events * 1000, 1)}


def run(quick: bool = False) -> list[dict]:
    why = missing()
    if why:
        return [{"benchmark": "view", "note": f"skipped: {why}"}]
    rows: list[dict] = []
    tmp = Path(tempfile.mkdtemp(prefix="ctx-bench-view-"))
    try:
        with browser() as driver:
            files = longest(1)
            if files:
                with imported(files[0]) as cm:
                    rows.append(_measure(driver, cm.repo, cm.session, "corpus longest", tmp,
                                         runs=3))
                    rows[-1]["session"] = f"corpus longest ({files[0].name[:40]})"
            n = 10_000 if quick else 100_000
            repo, sid = _generated(tmp / "gen", n)
            try:
                rows.append(_measure(driver, repo, sid, f"generated {n // 1000}k", tmp,
                                     runs=1 if not quick else 2))
            finally:
                repo.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


def main() -> None:
    run_and_print(run, "ctx view: first render in headless Chromium, page size")


if __name__ == "__main__":
    main()
