"""`ctx view` without a browser: the data model, the page's escaping and CSP, the CLI, and the
server's refusals (non-loopback binds, other hosts, paths outside the API, writes)."""

from __future__ import annotations

import json
import re
import threading
import urllib.error
import urllib.request

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxstore.cli.main import cli
from ctxstore.errors import InvalidInput
from ctxstore.viewer import export, model
from ctxstore.viewer.graph import lanes
from ctxstore.viewer.page import embed_json, render_page
from ctxstore.viewer.server import ViewerServer, check_bind, is_loopback

from .viewer_sessions import HOSTILE_FILE, demo_store, hostile_store


@pytest.fixture
def demo(tmp_path):
    repo, sid = demo_store(tmp_path)
    yield repo, sid
    repo.close()


@pytest.fixture
def hostile(tmp_path):
    repo, sid = hostile_store(tmp_path)
    yield repo, sid
    repo.close()


def test_lanes_fork_and_merge():
    # newest first: m merges b into a; a and b fork from r
    rows = lanes([("m", ("a", "b")), ("b", ("r",)), ("a", ("r",)), ("r", ())])
    r, a, b, m = rows  # oldest first
    assert r["up"] == [] and r["dn"]  # the root: edges only below
    assert m["up"] == [0, 1] and m["dn"] == []  # the merge joins both lanes
    assert {a["c"], b["c"]} == {0, 1}  # the two sides of the fork in two columns
    assert a["up"] and b["up"] and a["dn"] and b["dn"]


@st.composite
def _dags(draw):
    """A random event DAG, oldest first: each event has 0 (only the first), 1 or 2 parents
    among the earlier ones; generations as the store computes them."""
    n = draw(st.integers(1, 40))
    parents: list[tuple[int, ...]] = [()]
    for i in range(1, n):
        first = draw(st.integers(0, i - 1))
        extra = draw(st.lists(st.integers(0, i - 1), max_size=1))
        parents.append(tuple(dict.fromkeys([first, *extra])))
    return parents


@given(_dags())
@settings(max_examples=200, deadline=None)
def test_lanes_draw_every_edge(parents):
    """Every parent edge leaves its row by a column that runs straight up (through-lanes) to
    the parent's row and enters it from below: what the browser draws is the DAG."""
    gen = []
    for ps in parents:
        gen.append(1 + max((gen[p] for p in ps), default=0))
    ids = [f"e{i}" for i in range(len(parents))]
    # newest first, as the store walks: generation, then (here) index
    order = sorted(range(len(parents)), key=lambda i: (-gen[i], -i))
    rows_newest = [(ids[i], tuple(ids[p] for p in parents[i])) for i in order]
    laid = lanes(rows_newest)
    oldest = list(reversed(order))
    pos = {i: k for k, i in enumerate(oldest)}
    for k, i in enumerate(oldest):
        row = laid[k]
        reached = set()
        for c in row["up"]:
            j = k - 1
            while j >= 0 and c in laid[j]["th"] and laid[j]["c"] != c:
                j -= 1
            assert j >= 0 and c in laid[j]["dn"], (i, c)
            reached.add(oldest[j])
        assert reached == set(parents[i]), (i, reached, parents[i])
        assert all(pos[p] < k for p in parents[i])


def test_demo_model(demo):
    repo, sid = demo
    m = model.session_model(repo, sid)
    ev = m["events"]
    assert len(ev) == 29 and set(m["branches"]) == {"main", "approach-b"}
    # every request is paired with its result, and each result points back
    calls = [r for r in ev if "call" in r]
    assert len(calls) == 5 and all(r["call"]["status"] == "ok" for r in calls)
    for i, r in enumerate(ev):
        if "pair" in r:
            assert i in ev[r["pair"]]["results"]
    # the compaction names exactly the 17 events it replaced, and its checks pass
    comp = next(c for c in m["compactions"].values() if c["kind"] == "compaction")
    assert comp["source_count"] == 17 and -1 not in comp["sources"]
    assert [ev[i]["id"] for i in comp["sources"]][0] == comp["first_event"]
    assert {c["status"] for c in comp["checks"]} <= {"pass", "n/a"}
    assert [c["rule"] for c in comp["checks"]][:3] == ["range", "first_kept follows the range",
                                                      "summarizer_output"]
    # every event has a state; the state at the tip of main is the one `ctx state` projects
    from ctxstore.state.projector import Projector

    assert all("si" in r for r in ev)
    tip = m["branches"]["main"]
    T = m["states"]
    got = {f: T["values"][j] for f, j in zip(T["fields"], T["states"][ev[tip]["si"]], strict=True)}
    assert got == model.state_dict(Projector(repo).project(ev[tip]["id"]))


def test_compaction_checks_can_fail(demo):
    """The checks re-run on a record: a summary that lost the goal and a range that is not a
    line of the branch fail, where the real record passes."""
    import dataclasses

    from ctxstore.objects import Compaction
    from ctxstore.state.projector import Projector
    from ctxstore.viewer.checks import rerun, structural

    repo, sid = demo
    m = model.session_model(repo, sid)
    (eid, cid), = [(r["id"], r["k"]) for r in m["events"] if r["t"] == "CompactionCompleted"]
    rec = repo.objects.get_typed(cid, Compaction)
    good = {v["rule"]: v["status"] for v in rerun(repo, rec, eid, Projector(repo))}
    assert good["goal_verbatim"] == "pass" and good["smaller_than_replaced"] == "pass"
    bad = dataclasses.replace(rec, summary="Did some things.", goal={"user_goal": "",
                                                                     "current_task": ""},
                              tokens_after=rec.tokens_before + 1,
                              source_event_ids=rec.source_event_ids[1:])
    verdicts = {v["rule"]: v["status"] for v in rerun(repo, bad, eid, Projector(repo))}
    assert verdicts["goal_verbatim"] == "fail" and verdicts["smaller_than_replaced"] == "fail"
    assert structural(repo, bad)[0]["status"] == "fail"


def test_bundle_and_hostile_model(hostile):
    repo, sid = hostile
    m = model.session_model(repo, sid)
    (b,) = m["bundles"].values()
    assert b["segments"] and any(not s["kept"] for s in b["segments"])
    assert all(s["reason"] for s in b["segments"])
    c2 = next(r for r in m["events"] if r.get("call", {}).get("id") == "c2")
    assert c2["call"]["status"] == "abandoned"  # the user spoke again
    c1 = next(r for r in m["events"] if r.get("call", {}).get("id") == "c1")
    assert c1["call"]["effects"] == [{"kind": "read", "path": HOSTILE_FILE}]


def test_embedded_json_cannot_close_the_script(hostile):
    repo, sid = hostile
    text = embed_json(model.session_model(repo, sid))
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["id"] == sid


def test_page_csp_allows_only_its_own_script(hostile):
    repo, sid = hostile
    store = model.store_model(repo)
    page = render_page(export.export_data(repo, export.target(repo, None, store=store), store))
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page).group(1)
    assert "default-src 'none'" in csp and "connect-src 'none'" in csp
    assert "'unsafe-inline'" not in csp and "'unsafe-eval'" not in csp
    assert len(re.findall(r"<script", page)) == 2  # the JSON and the viewer
    assert "<img" not in page and "<svg" not in page and "<iframe" not in page
    assert "http://" not in page.split("<script>")[0].replace("http-equiv", "")


def test_cli_writes_a_page(demo, tmp_path):
    repo, sid = demo
    out = tmp_path / "v.html"
    r = CliRunner().invoke(cli, ["--store", str(repo.path), "view", sid[:8], "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert "1 session(s), 29 events" in r.output and out.read_text().startswith("<!DOCTYPE html>")
    r = CliRunner().invoke(cli, ["--store", str(repo.path), "view", "main..approach-b", "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert data["start"] == f"#compare={sid}&a=main&b=approach-b" and sid in data["data"]


@pytest.mark.parametrize("args, message", [
    (["nope"], "unknown revision"),
    (["main..nope"], "unknown revision"),
    (["--host", "0.0.0.0"], "--host and --allow-remote go with --serve"),
    (["--serve", "--host", "8.8.8.8"], "not a loopback address"),
    (["--serve", "-o", "x.html"], "--serve takes no -o"),
])
def test_cli_errors(demo, args, message):
    repo, _ = demo
    r = CliRunner().invoke(cli, ["--store", str(repo.path), "view", *args])
    assert r.exit_code != 0 and message in r.output, r.output


def test_loopback_rules():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    with pytest.raises(InvalidInput, match="--allow-remote"):
        check_bind("0.0.0.0", False)
    check_bind("0.0.0.0", True)  # asked for explicitly


@pytest.fixture
def server(demo):
    repo, sid = demo
    srv = ViewerServer(repo, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv, repo, sid
    srv.shutdown()
    srv.server_close()


def _get(url: str, host: str | None = None, method: str = "GET") -> tuple[int, bytes]:
    req = urllib.request.Request(url, method=method, headers={"Host": host} if host else {})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_server_answers_from_the_store(server):
    srv, repo, sid = server
    status, body = _get(srv.url)
    assert status == 200 and b"connect-src 'self'" in body
    status, body = _get(srv.url + "api/sessions")
    assert status == 200 and json.loads(body)["sessions"][0]["id"] == sid
    status, body = _get(srv.url + f"api/session/{sid[:10]}")
    sess = json.loads(body)
    assert status == 200 and len(sess["events"]) == 29 and sess["states"] is None
    tip = sess["events"][sess["branches"]["main"]]["id"]
    status, body = _get(srv.url + f"api/state/{tip}")
    assert status == 200 and json.loads(body)["goal"]["user_goal"]
    status, body = _get(srv.url + f"api/locate/{tip[:12]}")
    assert json.loads(body)["session"] == sid
    art = next(r["art"] for r in sess["events"] if r.get("art"))
    status, body = _get(srv.url + f"api/artifact/{art}")
    assert status == 200 and json.loads(body)["text"]


@pytest.mark.parametrize("path", [
    "../../../../etc/passwd", "%2e%2e/%2e%2e/etc/passwd", "api/artifact/..%2F..%2Fetc%2Fpasswd",
    "api/artifact/../../config.json", "config.json", ".ctx/config.json", "objects/",
    "api/session/..", "api/state/%2Fetc%2Fpasswd", "api/bundle/zzzz", "api/nope/abcd",
    "static/viewer.js", "index.html/../../etc/passwd",
])
def test_server_serves_nothing_outside_the_api(server, path):
    srv, _repo, _sid = server
    status, body = _get(srv.url + path)
    assert status == 404 and b"root:" not in body and b"durability" not in body


def test_server_refuses_other_hosts_and_writes(server):
    srv, _repo, _sid = server
    status, _ = _get(srv.url + "api/sessions", host="evil.example:80")
    assert status == 403
    status, _ = _get(srv.url + "api/sessions", method="POST")
    assert status == 405


def test_server_refuses_a_public_bind(demo):
    repo, _ = demo
    with pytest.raises(InvalidInput, match="not a loopback address"):
        ViewerServer(repo, "0.0.0.0", 0)
