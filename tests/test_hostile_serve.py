"""`ctx view --serve` against a DNS-rebinding page and other local users (issue 28, finding 7;
docs/security.md): only literal loopback Host headers with the server's port (or exactly the
printed host:port) are answered, and nothing is answered without the random token of the
printed URL (in the path, or the cookie the page sets)."""

from __future__ import annotations

import http.client
import threading

import pytest

from ctxstore.viewer.server import ViewerServer
from tests.viewer_sessions import demo_store


@pytest.fixture
def server(tmp_path):
    repo, sid = demo_store(tmp_path)
    srv = ViewerServer(repo, "127.0.0.1", 0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    repo.close()


def _get(srv, path: str, host: str | None = None, cookie: str | None = None):
    port = srv.server_address[1]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    headers = {"Host": host if host is not None else f"127.0.0.1:{port}"}
    if cookie:
        headers["Cookie"] = cookie
    conn.request("GET", path, headers=headers)
    resp = conn.getresponse()
    out = resp.status, resp.read(), resp.getheader("Set-Cookie")
    conn.close()
    return out


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.1:{port}", "2130706433:{port}",
                                  "0x7f000001:{port}", "127.0.0.1:1", "localhost", "",
                                  "127.0.0.1.evil.example:{port}"])
def test_hosts_that_only_resolve_to_loopback_are_refused(server, host):
    port = server.server_address[1]
    status, body, _ = _get(server, f"/{server.token}/api/sessions", host=host.format(port=port))
    assert status == 403 and b"sessions" not in body


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST:{port}"])
def test_literal_loopback_with_the_port_is_answered(server, host):
    port = server.server_address[1]
    status, _, _ = _get(server, f"/{server.token}/api/sessions", host=host.format(port=port))
    assert status == 200


def test_nothing_is_answered_without_the_token(server):
    for path in ("/", "/api/sessions", "/index.html", "/AAAA/api/sessions",
                 f"/{server.token[:-1]}/api/sessions"):
        status, body, _ = _get(server, path)
        assert status == 403 and b"sessions" not in body, path
    status, _, _ = _get(server, "/api/sessions", cookie=f"{server.cookie_name}=wrong")
    assert status == 403


def test_the_printed_url_carries_the_token_and_the_page_sets_a_strict_cookie(server):
    assert server.url.endswith(f"/{server.token}/") and len(server.token) >= 32
    status, body, cookie = _get(server, f"/{server.token}/")
    assert status == 200 and b"<html" in body.lower()
    assert cookie.startswith(f"{server.cookie_name}={server.token}")
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    # the page's own requests (to /api/...) carry the cookie
    status, _, _ = _get(server, "/api/sessions", cookie=cookie.split(";")[0])
    assert status == 200
