"""`ctx view --serve`: the page and its data from a local HTTP server (stdlib only).

It binds to 127.0.0.1 unless told otherwise, and refuses an address that is not loopback
unless the caller passes `allow_remote=True` (`--host H --allow-remote`): a transcript holds
code, paths and sometimes secrets. Two more locks (docs/security.md):

- **Host.** A request's Host header must be literally `127.0.0.1`, `[::1]` or `localhost` with
  the server's port, or exactly the host:port it printed; a name is never resolved, so a
  DNS-rebinding page (whose Host is its own name) is refused (403).
- **Token.** The printed URL is `http://HOST:PORT/<token>/`, a random 192-bit token. The page
  and the API answer under that prefix; opening it sets an HttpOnly, SameSite=Strict cookie
  for this port, which the page's own requests to `/api/...` carry. Without the token (path or
  cookie) every route is 403: another local user or a page that guesses the port gets nothing.

It answers GET only, and only these paths (below the token) — never a file of the disk:

    /                          the page (sessions list; the rest loads on demand)
    /api/sessions              the sessions list
    /api/session/<session>     one session (events, messages, compactions, bundles)
    /api/state/<event>         the projected state at an event
    /api/artifact/<artifact>   an artifact's description and text
    /api/bundle/<bundle>       a recorded context bundle
    /api/locate/<event>        {"session": id} for an event id or unique prefix

Ids are hex; anything else is 404 before the store is asked.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import re
import secrets
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

from ..errors import CtxError, InvalidInput
from ..repo import Repository
from ..repo.revparse import resolve_event
from ..state.projector import Projector
from . import model
from .page import render_page

_HEX = re.compile(r"[0-9a-f]{4,64}")
_ROUTE = re.compile(r"/api/(session|state|artifact|bundle|locate)/([^/]+)")
LOOPBACK_NAMES = ("localhost",)


def is_loopback(host: str) -> bool:
    """True when every address HOST resolves to is a loopback address."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError as exc:
        raise InvalidInput(f"--host {host!r}: cannot resolve it ({exc.strerror or exc})") from None
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


def check_bind(host: str, allow_remote: bool) -> None:
    if not is_loopback(host) and not allow_remote:
        raise InvalidInput(f"refusing to serve the store on {host}: it is not a loopback address "
                           f"and a transcript can hold code, paths and secrets (add --allow-remote "
                           f"to serve it there anyway)")


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, repo: Repository, host: str, port: int, allow_remote: bool = False,
                 start: str = "", bookkeeping: bool = False) -> None:
        check_bind(host, allow_remote)
        self.repo = repo
        self.bookkeeping = bookkeeping  # show source bookkeeping (model.session_model)
        self.allow_remote = allow_remote
        self.start_route = start
        self.lock = threading.Lock()  # the repository's caches are not made for threads
        self.projector = Projector(repo)
        self.session_cache: dict[str, dict[str, Any]] = {}
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.address_family = family
        self.token = secrets.token_urlsafe(24)
        super().__init__((host, port), _Handler)

    @property
    def base(self) -> str:
        """host:port as the printed URL names it."""
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in str(host) else host
        return f"{host}:{port}"

    @property
    def url(self) -> str:
        """The URL to open: the token is part of it."""
        return f"http://{self.base}/{self.token}/"

    @property
    def cookie_name(self) -> str:
        return f"ctx-view-{self.server_address[1]}"

    def allowed_hosts(self) -> set[str]:
        port = self.server_address[1]
        return {f"127.0.0.1:{port}", f"[::1]:{port}", f"localhost:{port}", self.base.lower()}

    # -- answers (None: 404) ------------------------------------------------------------------
    def page(self) -> str:
        with self.lock:
            store = model.store_model(self.repo)
        return render_page({**store, "data": {}, "start": self.start_route}, served=True,
                           title="ctx view")

    def answer(self, kind: str, ident: str) -> Any:
        with self.lock:
            if kind == "session":
                sid = self.repo.resolve_session(ident)
                if sid not in self.session_cache:
                    self.session_cache[sid] = model.session_model(
                        self.repo, sid, states="none", embed_artifacts=False,
                        bookkeeping=self.bookkeeping)
                return self.session_cache[sid]
            if kind == "state":
                eid = resolve_event(self.repo, ident)
                return model.state_dict(self.projector.project(eid))
            if kind == "artifact":
                return model.artifact_model(self.repo, _full_id(self.repo, ident))
            if kind == "bundle":
                return model.bundle_model(self.repo, _full_id(self.repo, ident))
            if kind == "locate":
                eid = resolve_event(self.repo, ident)
                return {"session": self.repo.session_of_event(eid), "event": eid}
        return None


def _full_id(repo: Repository, ident: str) -> str:
    from ..repo.revparse import resolve_object

    return resolve_object(repo, ident)


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "ctx-view"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # quiet: the command prints its URL, not a line per request

    def _send(self, status: int, body: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False, default=str).encode("utf-8"),
                   "application/json; charset=utf-8")

    def _host_ok(self) -> bool:
        """Literal loopback names with this port, or exactly what was printed; never
        resolved (a rebinding name resolves to 127.0.0.1 by design)."""
        if self.server.allow_remote:
            return True
        host = (self.headers.get("Host") or "").strip().lower()
        return host in self.server.allowed_hosts()

    def _authorized(self, path: str) -> tuple[bool, str]:
        """(token given, the path below the token prefix)."""
        prefix = f"/{self.server.token}"
        if path == prefix or path.startswith(prefix + "/"):
            return True, path[len(prefix):] or "/"
        for part in (self.headers.get("Cookie") or "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == self.server.cookie_name and \
                    hmac.compare_digest(value.encode(), self.server.token.encode()):
                return True, path
        return False, path

    def do_GET(self) -> None:  # noqa: N802 - stdlib name
        if not self._host_ok():
            self._json(HTTPStatus.FORBIDDEN, {"error": "this server answers its own loopback "
                                                       "address only"})
            return
        ok, path = self._authorized(urlsplit(self.path).path)
        if not ok:
            self._json(HTTPStatus.FORBIDDEN, {"error": "open the URL `ctx view --serve` printed "
                                                       "(it carries the token)"})
            return
        if path in ("/", "/index.html"):
            self._page()
            return
        if path == "/api/sessions":
            with self.server.lock:
                self._json(HTTPStatus.OK, model.store_model(self.server.repo))
            return
        m = _ROUTE.fullmatch(path)
        ident = unquote(m.group(2)).lower() if m else ""
        if not m or not _HEX.fullmatch(ident):
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
            return
        try:
            value = self.server.answer(m.group(1), ident)
        except CtxError as exc:
            self._json(HTTPStatus.NOT_FOUND, {"error": str(exc)})
            return
        if value is None:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
        else:
            self._json(HTTPStatus.OK, value)

    def _page(self) -> None:
        body = self.server.page().encode("utf-8")
        self.send_response(HTTPStatus.OK)
        self.send_header("Set-Cookie", f"{self.server.cookie_name}={self.server.token}; "
                                       f"HttpOnly; SameSite=Strict; Path=/")
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_HEAD = do_GET

    def _refuse(self) -> None:
        self._json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": "read-only"})

    do_POST = do_PUT = do_DELETE = do_PATCH = _refuse
