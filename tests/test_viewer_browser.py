"""`ctx view` in headless Chromium (Debian's chromium + chromium-driver, tests/browser.py):
the demo, the corpus and hostile content rendered, asserted on the DOM, clicked through, and
photographed (the screenshot paths are printed; run with -s to see them)."""

from __future__ import annotations

import threading
import time

import pytest
from click.testing import CliRunner

from ctxstore.cli.main import cli
from ctxstore.repo import Repository
from ctxstore.viewer import export, model
from ctxstore.viewer.page import render_page
from ctxstore.viewer.server import ViewerServer

from .browser import artifacts_dir, browser, console_errors, require_browser, wait_ready
from .corpus import require_corpus
from .viewer_sessions import HOSTILE_FILE, demo_store, hostile_store

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def driver():
    require_browser()
    with browser() as d:
        yield d


def _page(repo, rev=None, all_sessions=False) -> str:
    store = model.store_model(repo)
    tgt = export.target(repo, rev, all_sessions, store)
    return render_page(export.export_data(repo, tgt, store), title=tgt.title)


def _open(driver, path, fragment: str = "") -> None:
    driver.get(f"file://{path}{fragment}")
    wait_ready(driver)


def _js(driver, script: str, *args):
    return driver.execute_script(script, *args)


def _count(driver, selector: str) -> int:
    return _js(driver, "return document.querySelectorAll(arguments[0]).length", selector)


def _text(driver, selector: str) -> str:
    return _js(driver, "var e = document.querySelector(arguments[0]); return e ? e.textContent : null",
               selector)


def _shot(driver, name: str) -> None:
    path = artifacts_dir() / f"{name}.png"
    driver.save_screenshot(str(path))
    print(f"screenshot: {path}")


def _key(driver, key: str) -> None:
    _js(driver, "document.dispatchEvent(new KeyboardEvent('keydown', {key: arguments[0]}))", key)


def _no_alert_no_errors(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018 - raises when no alert is open
    assert console_errors(driver) == []


def test_demo_session(driver, tmp_path):
    repo, sid = demo_store(tmp_path / "store")
    m = model.session_model(repo, sid)
    path = tmp_path / "demo.html"
    path.write_text(_page(repo, sid), encoding="utf-8")
    _open(driver, path, f"#session={sid}&branch=main")
    assert _text(driver, "#event-count") == "29" and _text(driver, "#branch-count") == "2"
    assert _text(driver, "#turn-count") == "2"  # the session start and one user prompt
    assert _count(driver, ".turn") == 2
    assert _count(driver, "#graph .grow") == 29  # every row fits on screen: all drawn
    # tool calls paired with results: the four on main, each with its result inside
    assert _count(driver, "#transcript .tool-pair") == 4
    assert _count(driver, "#transcript .tool-pair .tool-result") == 4
    # the compaction, expanded to the exact range it replaced, with its checks and summary
    comp = next(c for c in m["compactions"].values() if c["kind"] == "compaction")
    assert _text(driver, ".compaction .range-count") == "17"
    _js(driver, "document.querySelector('.compaction details.replaced').open = true")
    time.sleep(0.2)
    ids = _js(driver, "return Array.from(document.querySelectorAll('.compaction .range li'))"
                      ".map(function (li) { return li.getAttribute('data-event'); })")
    assert ids == [m["events"][i]["id"] for i in comp["sources"]]
    assert _js(driver, "return document.querySelector('.compaction')"
                       ".querySelectorAll('.checks li.pass').length") == sum(
        c["status"] == "pass" for c in comp["checks"])
    assert _count(driver, ".compaction .checks li.fail") == 0
    assert "[Summary of earlier work" in _text(driver, ".compaction details.summary pre")
    # a large result collapsed, its artifact one click away
    driver.find_element("css selector", ".tool-pair .art-btn").click()
    time.sleep(0.2)
    assert "test_case_000" in _text(driver, "#artifact-text")
    # click a graph node: the detail panel shows that event and its projected state
    row = m["events"][11]
    driver.find_element("css selector", '#graph .grow[data-row="11"]').click()
    time.sleep(0.2)
    assert _text(driver, "#detail-id") == row["id"]
    assert "serialize() joins" in _text(driver, "#state")
    assert driver.current_url.endswith(f"event={row['id']}")
    _js(driver, "window.scrollTo(0, 0)")
    _shot(driver, "demo-session")
    # keyboard: j / k between turns, b to the branch point (the fork of approach-b)
    _key(driver, "k")
    assert _js(driver, "return ctxView.view().turn") == 0
    _key(driver, "j")
    assert _js(driver, "return ctxView.view().turn") == 1
    _js(driver, "ctxView.select(arguments[0])", m["branches"]["main"])
    _key(driver, "b")
    fork = next(int(k) for k, v in m["children"].items() if len(v) > 1)
    assert _text(driver, "#detail-id") == m["events"][fork]["id"]
    # print: graph, chart and controls hidden; every collapsed part opened
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    _js(driver, "window.dispatchEvent(new Event('beforeprint'))")
    assert _js(driver, "return getComputedStyle(document.getElementById('graph')).display") == "none"
    assert _js(driver, "return getComputedStyle(document.getElementById('chart')).display") == "none"
    assert _count(driver, "#transcript details:not([open])") == 0
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": ""})
    # a deep link opens at the event, on a branch that contains it
    alt = m["events"][m["branches"]["approach-b"]]["id"]
    _open(driver, path, f"#event={alt[:14]}")
    assert _text(driver, "#detail-id") == alt
    assert _js(driver, "return document.getElementById('branch-select').value") == "approach-b"
    # compare: events only on each side from the merge base, and the state difference
    _js(driver, "document.getElementById('compare-a').value = 'approach-b';"
                "document.getElementById('compare-b').value = 'main';")
    _js(driver, "window.scrollTo(0, 0)")
    driver.find_element("css selector", "#compare-go").click()
    time.sleep(0.3)
    d = repo.graph.diff(repo.branches(sid)["approach-b"], repo.branches(sid)["main"])
    assert _count(driver, "#only-a li") == len(d.only_a)
    assert _count(driver, "#only-b li") == len(d.only_b)
    assert _text(driver, "#merge-base a") == d.base[:12]
    assert _count(driver, "#state-diff li") > 0
    _shot(driver, "demo-compare")
    _no_alert_no_errors(driver)
    repo.close()


def test_hostile_content_renders_as_text(driver, tmp_path):
    repo, sid = hostile_store(tmp_path / "store")
    m = model.session_model(repo, sid)
    path = tmp_path / "hostile.html"
    path.write_text(_page(repo, sid), encoding="utf-8")
    _open(driver, path)
    _no_alert_no_errors(driver)
    assert _count(driver, "img, iframe, object, embed") == 0
    assert _count(driver, "script") == 2 and _count(driver, "svg foreignObject") == 0
    body = _js(driver, "return document.body.textContent")
    for s in ("<script>alert('prompt')</script>", "<img src=x onerror=alert('img')>",
              "[click me](javascript:alert('link'))", HOSTILE_FILE, "<script>alert('code')</script>"):
        assert s in body
    hrefs = _js(driver, "return Array.from(document.querySelectorAll('a[href]'))"
                        ".map(function (a) { return a.getAttribute('href'); })")
    assert hrefs and all(h.startswith("#") or h.startswith("https://") for h in hrefs), hrefs
    assert "https://example.com/?q=<b>" in hrefs
    # markdown: a heading, a list and a code block built as elements; the rest is text
    assert _count(driver, ".msg h4") >= 1 and _count(driver, ".msg li") == 2
    assert _count(driver, ".msg pre code") == 1
    # the recorded bundle: "what the model saw", segment by segment, dropped ones marked
    (b,) = m["bundles"].values()
    assert _count(driver, ".bundle tr.segment") == len(b["segments"])
    assert _count(driver, ".bundle tr.segment.dropped") == sum(not s["kept"] for s in b["segments"])
    assert _count(driver, ".bundle tr.segment[data-tier='P0']") >= 1
    # the unanswered call is marked abandoned (the user spoke again)
    assert _count(driver, ".tool-pair .status-abandoned") >= 1
    # the sessions list shows the hostile title as text too
    _js(driver, "location.hash = '#sessions'")
    time.sleep(0.2)
    assert "<script>alert('title')</script>" in _text(driver, "#sessions tbody")
    assert _count(driver, "img, iframe, object, embed") == 0
    _js(driver, "location.hash = '#session=' + arguments[0]", sid)
    time.sleep(0.3)
    # open everything that can be opened: still nothing runs
    _js(driver, "document.querySelectorAll('details').forEach(function (d) { d.open = true; });"
                "document.querySelectorAll('.art-btn').forEach(function (b) { b.click(); });")
    for i in range(len(m["events"])):
        _js(driver, "ctxView.select(arguments[0])", i)
    time.sleep(0.3)
    _shot(driver, "hostile")
    assert _count(driver, "img, iframe, object, embed") == 0
    _no_alert_no_errors(driver)
    repo.close()


def test_served_store(driver, tmp_path):
    repo, sid = hostile_store(tmp_path / "store")
    demo = Repository.open(tmp_path / "store")
    from ctxstore.porcelain.demo import run_demo

    demo_sid = run_demo(demo).session
    demo.close()
    srv = ViewerServer(repo, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        driver.get(srv.url)
        wait_ready(driver)
        assert _count(driver, "#sessions tbody tr") == 2
        # search filters the list
        box = driver.find_element("css selector", "#session-search")
        box.send_keys("serializer")
        assert _count(driver, "#sessions tbody tr") == 1
        driver.find_element("css selector", f'#sessions a[data-session="{demo_sid}"]').click()
        for _ in range(100):
            if _text(driver, "#event-count"):
                break
            time.sleep(0.05)
        assert _text(driver, "#event-count") == "29"
        driver.find_element("css selector", '#graph .grow[data-row="11"]').click()
        for _ in range(100):
            if "serialize() joins" in (_text(driver, "#state") or ""):
                break
            time.sleep(0.05)
        assert "serialize() joins" in _text(driver, "#state")  # exact, from /api/state
        driver.get(srv.url + f"#session={sid}")
        wait_ready(driver)
        time.sleep(0.3)
        _no_alert_no_errors(driver)
        assert _count(driver, "img, iframe") == 0
        _shot(driver, "served-hostile")
    finally:
        srv.shutdown()
        srv.server_close()
        repo.close()


def test_corpus_sessions(driver, tmp_path):
    corpus = require_corpus()
    store = tmp_path / "corpus"
    r = CliRunner().invoke(cli, ["init", str(store)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["--store", str(store), "import", str(corpus)])
    assert r.exit_code == 0, r.output
    repo = Repository.open(store)
    path = tmp_path / "corpus.html"
    path.write_text(_page(repo, all_sessions=True), encoding="utf-8")
    rows = model.store_model(repo)["sessions"]
    _open(driver, path, "#sessions")
    assert _count(driver, "#sessions tbody tr") == len(rows)
    formats = {r["format"] for r in rows}
    assert {"claude-code", "codex", "pi"} <= formats
    _js(driver, "var s = document.getElementById('format-filter'); s.value = 'pi';"
                "s.dispatchEvent(new Event('change'))")
    assert _count(driver, "#sessions tbody tr") == sum(r["format"] == "pi" for r in rows)
    _shot(driver, "corpus-sessions")
    longest = max(rows, key=lambda r: r["events"])
    # every session is listed above; each one opened in the page costs a browser load of the
    # whole store, so per harness the four longest (and every one of a small harness) are
    # opened, which covers every format's shapes (an Aider history alone holds 1,134 sessions)
    by_format: dict[str, list] = {}
    for row in sorted(rows, key=lambda r: -r["events"]):
        by_format.setdefault(row["format"], []).append(row)
    opened = [r for group in by_format.values() for r in group[:4]]
    assert longest in opened and {r["format"] for r in opened} == formats
    for row in opened:
        m = model.session_model(repo, row["id"])
        branch = "main" if "main" in m["branches"] else sorted(m["branches"])[0]
        chain, i = [], m["branches"][branch]
        while i is not None:
            chain.append(i)
            p = model.row_parents(m["events"], i)
            i = p[0] if p else None
        chain.reverse()
        prompts = sum(m["events"][j]["t"] == "UserPromptSubmitted" for j in chain)
        turns = prompts + (m["events"][chain[0]]["t"] != "UserPromptSubmitted")
        driver.get(f"file://{path}#session={row['id']}&branch={branch}")
        driver.refresh()
        wait_ready(driver)
        assert _text(driver, "#event-count") == str(len(m["events"])), row["id"]
        assert _text(driver, "#branch-count") == str(len(m["branches"]))
        assert _text(driver, "#turn-count") == str(turns), row["id"]
        rendered = _count(driver, ".turn:not(.stub)")
        assert rendered == min(turns, 40)
        if turns <= 40:  # every turn drawn: every call on the branch is one pair in the page
            calls = sum("call" in m["events"][j] for j in chain)
            assert _count(driver, "#transcript .tool-pair[data-row]") - _count(
                driver, "#transcript .tool-pair:not(:has(.args))") == calls, row["id"]
        for cid, c in m["compactions"].items():
            on_chain = any(m["events"][j].get("k") == cid for j in chain)
            if on_chain and turns <= 40:
                counts = _js(driver, "return Array.from(document.querySelectorAll('.compaction "
                                     ".range-count')).map(function (e) { return e.textContent; })")
                assert str(c["source_count"]) in counts
        if row["id"] == longest["id"]:
            _shot(driver, "corpus-longest")
        assert console_errors(driver) == [], row["id"]
    repo.close()


PI_COMPACTED = "pi/pi-mono_before-compaction_v1-format_genuine.jsonl"


def test_every_prompt_of_a_long_session_is_on_the_page(driver, tmp_path):
    """Issue 30 item 8: the genuine pi session with compactions has more turns than the page
    draws at once (40); every prompt of the branch is still on the page, each turn outside
    the window as its prompt, opened by a click. Before: 39 of them (40 turns, the first
    the session start), the rest only after scrolling to the end."""
    src = require_corpus() / PI_COMPACTED
    store = tmp_path / "pi"
    for args in (["init", str(store)], ["--store", str(store), "import", str(src)]):
        r = CliRunner().invoke(cli, args)
        assert r.exit_code == 0, r.output
    repo = Repository.open(store)
    (sid,) = repo.session_ids()
    m = model.session_model(repo, sid)
    chain, i = [], m["branches"]["main"]
    while i is not None:
        chain.append(i)
        p = model.row_parents(m["events"], i)
        i = p[0] if p else None
    prompts = [m["events"][j]["id"] for j in reversed(chain)
               if m["events"][j]["t"] == "UserPromptSubmitted"]
    assert len(prompts) >= 50 and any("k" in m["events"][j] for j in chain)  # compacted
    path = tmp_path / "pi.html"
    path.write_text(_page(repo), encoding="utf-8")
    repo.close()
    _open(driver, path)
    assert _count(driver, ".turn:not(.stub)") == 40 < len(prompts)
    shown = _js(driver, "return Array.from(document.querySelectorAll('#transcript .msg.user'))"
                        ".map(function (e) { return e.getAttribute('data-event'); })")
    assert shown == prompts
    others = _js(driver, "return Array.from(document.querySelectorAll('#transcript .ev.other'))"
                         ".map(function (e) { return e.textContent; })")
    assert not [t for t in others if "(no text" in t], others  # no empty-response rows
    _js(driver, "document.querySelector('#stub-50 button').click()")
    wait_ready(driver)
    assert _count(driver, "#turn-50") == 1 and _count(driver, "#stub-50") == 0
    assert console_errors(driver) == []
