"""`donebell test` and `donebell doctor` tried as a new user would, against the real ntfy (2.11 and 2.27).

No token on a deny-all server, a wrong token, a user without write access, and a URL that is not
ntfy at all: each is a failure that names its fix (which key, which `ntfy access` line), found by
doctor asking the server itself without publishing anything; the waiting outbox record says why.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.delivery_kit import Env
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, free_port, serve_module
from support.waiting import wait_for

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOPIC = "donebell-doctor-real"


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def ntfy(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[RealNtfy]:
    """deny-all; `donebell` may read and write donebell-*, `reader` only read it."""
    for server in serve_module(tmp_path_factory.mktemp("ntfy-doctor"), default_access="deny-all", suite=request.param):
        server.user_add("donebell", "pw-donebell")
        server.access("donebell", "donebell-*", "rw")
        server.user_add("reader", "pw-reader")
        server.access("reader", "donebell-*", "read-only")
        yield server


def _doctor(env: Env) -> tuple[int, dict[str, Any], str]:
    as_json = env.run_cli("doctor", "--json", timeout=60)
    table = env.run_cli("doctor", timeout=60)
    return as_json.returncode, json.loads(as_json.stdout), table.stdout


def _check(doc: dict[str, Any], name: str) -> dict[str, Any]:
    [found] = [c for c in doc["checks"] if c["name"] == name]
    return dict(found)


def _outbox_error(env: Env) -> str:
    [path] = list((env.state.root / "outbox").glob("*.json"))
    return str(json.loads(path.read_text())["last_error"])


def test_no_token_on_a_deny_all_server_names_the_token_and_the_access_line(ntfy: RealNtfy, tmp_path: Path) -> None:
    env = Env(tmp_path, server=ntfy.url, topic=TOPIC)
    run = env.run_cli("test")
    assert run.returncode == 1
    assert "without an access token (HTTP 403)" in run.stdout, run.stdout
    assert f"ntfy access donebell '{TOPIC}' rw" in run.stdout and "donebell config set token -" in run.stdout
    assert "needs an access token for the topic: set `token`" in _outbox_error(env)  # why it waits
    code, doc, table = _doctor(env)
    access = _check(doc, "access")
    assert code == 1 and access["status"] == "fail" and "HTTP 403" in access["summary"]
    assert f"ntfy access donebell '{TOPIC}' rw" in access["next_step"]
    assert "Nothing blocks notifications" not in table and "problem(s) block notifications" in table


def test_a_wrong_token_fails_doctor_naming_the_token_key(ntfy: RealNtfy, tmp_path: Path) -> None:
    wrong = "tk_" + "1" * 29
    env = Env(tmp_path, server=ntfy.url, topic=TOPIC, token=wrong)
    run = env.run_cli("test")
    assert run.returncode == 1 and "does not accept donebell's credentials (HTTP 401)" in run.stdout
    assert "set a valid `token`" in run.stdout
    assert "rejects the configured credentials" in _outbox_error(env)
    code, doc, table = _doctor(env)
    assert code == 1 and _check(doc, "access")["status"] == "fail"
    assert "set a valid `token`" in _check(doc, "access")["next_step"]
    assert wrong not in run.stdout + run.stderr + table + json.dumps(doc) + env.all_state_text()


def test_a_user_without_write_access_gets_the_access_line_with_its_name(ntfy: RealNtfy, tmp_path: Path) -> None:
    token = ntfy.token_add("reader")
    env = Env(tmp_path, server=ntfy.url, topic=TOPIC, token=token)
    code, doc, table = _doctor(env)
    access = _check(doc, "access")
    assert code == 1 and access["status"] == "fail" and "user reader" in access["summary"]
    assert access["next_step"] == f"on the server: `ntfy access reader '{TOPIC}' rw`"
    assert token not in table + json.dumps(doc)


def test_a_good_token_passes_and_doctor_published_nothing(ntfy: RealNtfy, tmp_path: Path) -> None:
    """The probes leave nothing on the topic; ntfy 2.11 has no sequence-ID route: the phone will
    show a retried notification twice, and doctor says so as a warning (it does not block); 2.27
    routes them: `updates` is ok."""
    token = ntfy.token_add("donebell")
    env = Env(tmp_path, server=ntfy.url, topic="donebell-doctor-ok", token=token)
    code, doc, table = _doctor(env)
    access, updates = _check(doc, "access"), _check(doc, "updates")
    assert access["status"] == "ok" and "user donebell" in access["summary"]
    if ntfy.version == "2.11":
        assert updates["status"] == "warn" and "predates ntfy 2.16" in updates["summary"]
    else:
        assert updates["status"] == "ok" and "ntfy 2.16 or later" in updates["summary"]
    assert "a second time" in updates["summary"]
    assert ntfy.poll("donebell-doctor-ok", token=token) == []  # doctor published nothing
    assert token not in table + json.dumps(doc)
    assert code == (1 if any(c["status"] == "fail" for c in doc["checks"]) else 0)


@pytest.fixture()
def not_ntfy(tmp_path: Path) -> Iterator[str]:
    """A plain web server (Python's http.server) where the user meant to put ntfy."""
    port = free_port()
    (tmp_path / "www").mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(tmp_path / "www")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _answers(url), 15, "http.server to listen")
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return False
    return True


def test_a_url_that_is_not_ntfy_is_a_failure_naming_the_server_key(not_ntfy: str, tmp_path: Path) -> None:
    env = Env(tmp_path, server=not_ntfy, topic=TOPIC)
    run = env.run_cli("test")
    assert run.returncode == 1 and "does not answer like an ntfy server" in run.stdout, run.stdout
    assert "set `server` to the ntfy server's base URL" in run.stdout
    assert "does not answer like ntfy: check `server`" in _outbox_error(env)
    code, doc, _ = _doctor(env)
    assert code == 1 and _check(doc, "access")["status"] == "fail"


class _AcceptsAnything(BaseHTTPRequestHandler):
    """A web app that answers every POST with 200 "OK" (a webhook catcher, a misrouted proxy)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"OK")

    def log_message(self, *args: Any) -> None:
        pass


def test_a_2xx_from_something_that_is_not_ntfy_is_not_reported_as_delivered(tmp_path: Path) -> None:
    """Before, `donebell test` printed "sent" for any 2xx; without ntfy's message id it now says the
    server is probably not ntfy and exits 1; doctor fails it already at its health check."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _AcceptsAnything)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    try:
        env = Env(tmp_path, server=f"http://127.0.0.1:{httpd.server_address[1]}", topic=TOPIC)
        run = env.run_cli("test")
        assert run.returncode == 1 and "probably not an ntfy server" in run.stdout, run.stdout
        code, doc, _ = _doctor(env)
        assert code == 1 and _check(doc, "server")["status"] == "fail"  # no /v1/health: not ntfy
    finally:
        httpd.shutdown()
        httpd.server_close()
