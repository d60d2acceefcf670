"""Real network servers for the git-remote tests, on 127.0.0.1 only:

- `tls_files()`: a throw-away certificate authority and a server certificate for 127.0.0.1
  (the `openssl` command line tool);
- `https_git()`: git's own smart-HTTP server (`git http-backend` as CGI) behind TLS and HTTP
  Basic auth, pushes enabled;
- `sshd()`: OpenSSH's `sshd` as a foreground child (`-D -e`) with a temporary host key and
  authorized_keys, for the user running the tests (git-upload-pack/receive-pack on its PATH);
- `ssh_agent()`: an `ssh-agent` holding one key.

Each process runs in its own process group and is killed (with its children) on exit. When a
tool is missing the test is skipped, except under CI=true, where it fails with one line
(.ci/run installs openssh-server).
"""

from __future__ import annotations

import base64
import contextlib
import getpass
import os
import shutil
import signal
import ssl
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from .corpus import in_ci
from .remotetools import free_port, wait_port

EC = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1")  # fast to generate
SSHD = shutil.which("sshd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")


def require(tool: str | None, name: str, how: str) -> str:
    """The tool's path; skip (fail under CI=true) with one line when it is missing."""
    if tool is None:
        message = f"{name} is not installed ({how})"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return tool


def _run(*args: str, cwd=None) -> None:
    subprocess.run(args, cwd=cwd, check=True, capture_output=True, timeout=60)


def tls_files(root: Path, name: str = "ca") -> dict[str, Path]:
    """A CA (`ca.pem`) and a certificate for 127.0.0.1 signed by it (`cert.pem`, `key.pem`)."""
    openssl = require(shutil.which("openssl"), "openssl", "apt-get install openssl")
    root.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, csr, cert = (root / f"{name}-{n}" for n in
                                  ("ca.key", "ca.pem", "key.pem", "csr.pem", "cert.pem"))
    ext = root / f"{name}-ext.cnf"
    ext.write_text("subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
                   "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n")
    _run(openssl, "req", "-x509", *EC, "-nodes", "-days", "2",
         "-keyout", str(ca_key), "-out", str(ca), "-subj", f"/CN=ctx test {name}")
    _run(openssl, "req", *EC, "-nodes", "-keyout", str(key), "-out", str(csr),
         "-subj", "/CN=127.0.0.1")
    _run(openssl, "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", "2", "-out", str(cert), "-extfile", str(ext))
    return {"ca": ca, "cert": cert, "key": key}


class _GitHttp(BaseHTTPRequestHandler):
    """One request: check Basic auth, then run `git http-backend` as a CGI script."""

    protocol_version = "HTTP/1.1"  # keep-alive, as libgit2 expects; every reply has a length
    server: _Server

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _serve(self) -> None:
        body = self._body()
        auth = self.headers.get("Authorization") or ""
        self.server.seen.append(auth)
        if auth != self.server.expected:
            self._reply(401, [("WWW-Authenticate", 'Basic realm="ctx-test"')], b"")
            return
        path, _, query = self.path.partition("?")
        env = {"PATH": os.environ["PATH"], "GIT_PROJECT_ROOT": str(self.server.root),
               "GIT_HTTP_EXPORT_ALL": "1", "GIT_CONFIG_NOSYSTEM": "1",
               "HOME": str(self.server.root), "REQUEST_METHOD": self.command,
               "PATH_INFO": path, "QUERY_STRING": query, "REMOTE_USER": self.server.user,
               "REMOTE_ADDR": "127.0.0.1", "CONTENT_TYPE": self.headers.get("Content-Type", ""),
               "CONTENT_LENGTH": str(len(body)), "GATEWAY_INTERFACE": "CGI/1.1",
               "SERVER_PROTOCOL": "HTTP/1.1"}
        for header in ("Git-Protocol", "Content-Encoding"):
            if self.headers.get(header):
                env["HTTP_" + header.upper().replace("-", "_")] = self.headers[header]
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                             timeout=60).stdout
        head, _, payload = out.partition(b"\r\n\r\n")
        if not _:
            head, _, payload = out.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name, value.strip()))
        self._reply(status, headers, payload)

    do_GET = do_POST = _serve

    def log_message(self, *args) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    user: str
    expected: str
    seen: list[str]


@contextlib.contextmanager
def https_git(root: Path, tls: dict[str, Path], user: str, password: str):
    """Serve the repositories under `root` over https://127.0.0.1:PORT/ for user:password;
    yields the server (`.url` the base URL, `.seen` every Authorization header received)."""
    require(shutil.which("git"), "git", "apt-get install git")
    server = _Server(("127.0.0.1", 0), _GitHttp)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls["cert"], tls["key"])
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.root, server.user, server.seen = root, user, []
    server.expected = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
    server.url = f"https://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def ssh_keygen(path: Path, comment: str = "ctx-test", passphrase: str = "") -> Path:
    """An ed25519 key pair (one KDF round for a passphrase: decrypting it stays fast)."""
    keygen = require(shutil.which("ssh-keygen"), "ssh-keygen", "apt-get install openssh-client")
    _run(keygen, "-q", "-t", "ed25519", "-a", "1", "-N", passphrase, "-C", comment,
         "-f", str(path))
    return path


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)


@contextlib.contextmanager
def sshd(root: Path, authorized: list[Path]):
    """`sshd -D -e` on a free 127.0.0.1 port accepting the given public keys for the current
    user; yields (port, user, known_hosts line for the host key)."""
    binary = require(SSHD, "sshd", "apt-get install openssh-server")
    root.mkdir(parents=True, exist_ok=True)
    host_key = root / "host_ed25519"
    ssh_keygen(host_key, "ctx-test-host")
    keys = root / "authorized_keys"
    keys.write_text("".join(p.read_text() for p in authorized))
    keys.chmod(0o600)
    port = free_port()
    config = root / "sshd_config"
    config.write_text(
        f"ListenAddress 127.0.0.1\nPort {port}\nHostKey {host_key}\n"
        f"PidFile {root / 'sshd.pid'}\nAuthorizedKeysFile {keys}\nStrictModes no\n"
        f"UsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        f"PubkeyAuthentication yes\nPermitRootLogin prohibit-password\nPrintMotd no\n"
        f"LogLevel ERROR\nAcceptEnv none\n")
    if os.geteuid() == 0:  # sshd's privilege separation directory, absent where never run
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    log = root / "sshd.log"  # a file, not a pipe: a full pipe would block sshd
    with open(log, "wb") as err:
        proc = subprocess.Popen([binary, "-D", "-e", "-f", str(config)],
                                stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
    try:
        wait_port(port, proc, "sshd", lambda: log.read_text(errors="replace"))
        public = (root / "host_ed25519.pub").read_text().split()
        yield port, getpass.getuser(), f"[127.0.0.1]:{port} {public[0]} {public[1]}\n"
    finally:
        _kill_group(proc)


@contextlib.contextmanager
def ssh_agent(key: Path):
    """An ssh-agent holding `key`; yields its SSH_AUTH_SOCK."""
    agent = require(shutil.which("ssh-agent"), "ssh-agent", "apt-get install openssh-client")
    add = require(shutil.which("ssh-add"), "ssh-add", "apt-get install openssh-client")
    short = Path(tempfile.mkdtemp(prefix="ctx-agent-"))  # a unix socket path has ~100 bytes
    sock = short / "agent.sock"
    proc = subprocess.Popen([agent, "-D", "-a", str(sock)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            if proc.poll() is not None or time.monotonic() > deadline:
                err = proc.stderr.read().decode(errors="replace") if proc.poll() else ""
                raise RuntimeError(f"ssh-agent did not start: {err.strip()}")
            time.sleep(0.02)
        subprocess.run([add, str(key)], env={**os.environ, "SSH_AUTH_SOCK": str(sock)},
                       check=True, capture_output=True, timeout=30)
        yield str(sock)
    finally:
        _kill_group(proc)
        shutil.rmtree(short, ignore_errors=True)


def assert_nowhere(secrets: list[str], stores: list[Path], outputs: list[str]) -> None:
    """No secret in any output, nor anywhere under each store's .ctx: the raw bytes of every
    file (config, refs, reflogs, operation log, packs), every ctxstore object decoded, and
    every object of the git mirror (.ctx/remotes.git) inflated."""
    import pygit2

    from ctxstore import codec
    from ctxstore.repo import Repository

    for text in outputs:
        for secret in secrets:
            assert secret not in text, f"a secret is in the output: {text!r}"
    for root in stores:
        ctx = root / ".ctx"
        files = [p for p in sorted(ctx.rglob("*")) if p.is_file()]
        assert files, f"no store at {root}"
        for p in files:
            data = p.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, f"a secret is in {p}"
        repo = Repository.open(ctx)
        try:
            count = 0
            for oid in repo.objects:
                type_name, body = repo.objects.get_raw(oid)
                text = repr(codec.decode_body(type_name, body))
                count += 1
                for secret in secrets:
                    assert secret not in text, f"a secret is in object {oid} of {root}"
            assert count, f"no objects in {root}"
        finally:
            repo.close()
        mirror = ctx / "remotes.git"
        if mirror.is_dir():
            odb = pygit2.Repository(str(mirror)).odb
            for oid in odb:
                data = odb.read(oid)[1]
                for secret in secrets:
                    assert secret.encode() not in data, f"a secret is in git object {oid}"


def round_trip(tmp_path: Path, url: str, repo_path: Path) -> list[str]:
    """Two machines through one remote URL: push, clone, push again, fetch (tracking refs
    only), pull (fast-forward); `git fsck --strict` of the remote. Returns every output."""
    from click.testing import CliRunner

    from ctxstore.cli.main import cli

    from .clitools import Ctx
    from .remotetools import Machine, fsck_strict, remote_refs

    a = Machine(tmp_path / "a")
    a("remote", "add", "origin", url)
    outputs = [a("push").stdout]
    assert "[new branch]" in outputs[0], outputs[0]
    res = CliRunner().invoke(cli, ["clone", url, str(tmp_path / "b")])
    assert res.exit_code == 0, res.output + repr(res.exception)
    outputs.append(res.output)
    b = Ctx(tmp_path / "b")
    assert b.json("status")["head"] == a.tip()
    a.say(3)
    outputs.append(a("push").stdout)
    res = b("fetch")
    outputs.append(res.stdout + res.stderr)
    assert b.json("status")["head"] != a.tip()  # fetch moves remote-tracking refs only
    assert a.tip() in b("branch", "-r", "--json").stdout  # ...to the tip pushed
    outputs.append(b("pull").stdout)
    assert b.json("status")["head"] == a.tip()
    for m in (a, b):
        outputs.append(m("op", "log", "--json").stdout + m("reflog", "--json").stdout)
    fsck_strict(repo_path)
    assert any(name.startswith("refs/ctx/") for name in remote_refs(repo_path))
    return outputs
