"""The proxy policy (issue 15, item 3): never credentials over a clear-text proxy hop.

A hook-started worker inherits the agent's environment, ``HTTP_PROXY`` included, and httpx's own
environment handling sent ``Authorization`` in clear text to that proxy for a plain-http server
(and proxied even a loopback server). Through ``donebell test``, the delivery role and doctor,
with a real forward proxy (``support/http_proxy.py``) and the ntfy stand-in on 127.0.0.1. The
server is named ``ntfy.example.test``: not loopback, and the proxy maps it to the stand-in.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.delivery_kit import TOPIC, Env
from support.http_proxy import HttpProxy
from support.ntfy_standin import NtfyStandin

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOKEN = "tk_proxytokenabcdefghijklmnopq01"
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy")


def _run(env: Env, proxies: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in env.environ().items() if k.lower() not in PROXY_VARS}
    return subprocess.run(
        [sys.executable, "-m", "donebell.supervisor.cli", *args],
        capture_output=True,
        text=True,
        env={**environ, **proxies},
        timeout=60,
    )


@pytest.fixture()
def authed() -> Iterator[NtfyStandin]:
    with NtfyStandin(
        tokens={TOKEN: "phil"},
        users={"phil": "pw-proxy-unused"},
        default_access="deny-all",
        access={"phil": {TOPIC: "read-write"}},
    ) as srv:
        yield srv


def test_credentials_are_never_sent_through_a_plain_http_proxy(authed: NtfyStandin, tmp_path: Path) -> None:
    """A token for an http:// server (clear text allowed by allow_insecure_auth) with HTTP_PROXY set: the
    proxy used to receive `Authorization: Bearer tk_...`. Now `donebell test` refuses (exit 78, the reason
    and the fix), the worker leaves the record queued untouched, and the proxy sees nothing."""
    port = authed.url.rpartition(":")[2]
    with HttpProxy() as proxy:
        env = Env(tmp_path, server=f"http://ntfy.example.test:{port}", token=TOKEN, allow_insecure_auth=True)
        proxies = {"HTTP_PROXY": proxy.url}
        test = _run(env, proxies, "test")
        assert test.returncode == 78, test.stdout + test.stderr
        assert "through the proxy" in test.stderr and "NO_PROXY" in test.stderr
        record = env.queue()
        worker = _run(env, proxies, "worker", "delivery", "--once")
        assert worker.returncode == 0, worker.stderr
        assert env.state.read("outbox", record["key"])["attempts"] == 0  # type: ignore[index]
        health = env.state.read_health("delivery") or {}
        assert "through the proxy" in str(health.get("config_problem"))
        doctor = json.loads(_run(env, proxies, "doctor", "--json").stdout)
        [server_check] = [c for c in doctor["checks"] if c["name"] == "server"]
        assert server_check["status"] == "fail" and "through the proxy" in server_check["summary"]
        assert proxy.requests == [] and authed.requests == []
        assert TOKEN not in env.all_state_text() + test.stderr + worker.stderr + json.dumps(doctor)


def test_a_loopback_server_is_never_proxied(authed: NtfyStandin, tmp_path: Path) -> None:
    """With HTTP_PROXY set, a token for http://127.0.0.1 went through the proxy; now it goes direct."""
    with HttpProxy() as proxy:
        env = Env(tmp_path, server=authed.url, token=TOKEN)
        test = _run(env, {"HTTP_PROXY": proxy.url, "ALL_PROXY": proxy.url}, "test", "--json")
        assert test.returncode == 0, test.stdout + test.stderr
        assert json.loads(test.stdout)["http_status"] == 200
        assert proxy.requests == [] and len(authed.messages()) == 1


def test_a_plain_http_proxy_still_carries_a_request_without_credentials(srv: NtfyStandin, tmp_path: Path) -> None:
    """No credentials: HTTP_PROXY is honoured for an http:// server (and by doctor's health check)."""
    port = srv.url.rpartition(":")[2]
    with HttpProxy() as proxy:
        env = Env(tmp_path, server=f"http://ntfy.example.test:{port}")
        test = _run(env, {"http_proxy": proxy.url}, "test", "--json")
        assert test.returncode == 0, test.stdout + test.stderr
        [carried] = [r for r in proxy.requests if r.method == "POST"]
        assert carried.target == f"http://ntfy.example.test:{port}/" and "Authorization" not in carried.headers
        assert len(srv.messages()) == 1
        doctor = json.loads(_run(env, {"http_proxy": proxy.url}, "doctor", "--json").stdout)
        [server_check] = [c for c in doctor["checks"] if c["name"] == "server"]
        assert server_check["status"] == "ok", server_check
        assert any(r.target.endswith("/v1/health") for r in proxy.requests)


def test_https_goes_through_https_proxy_in_a_connect_tunnel(authed: NtfyStandin, tmp_path: Path) -> None:
    """An https:// server with HTTPS_PROXY: the proxy only sees `CONNECT host:port`, never a header
    (the stand-in speaks plain http, so the TLS handshake then fails and the record is retried)."""
    port = authed.url.rpartition(":")[2]
    with HttpProxy() as proxy:
        env = Env(tmp_path, server=f"https://ntfy.example.test:{port}", token=TOKEN)
        record = env.queue()
        worker = _run(
            env, {"HTTPS_PROXY": proxy.url, "HTTP_PROXY": "http://127.0.0.1:9"}, "worker", "delivery", "--once"
        )
        assert worker.returncode == 0, worker.stderr
        assert [(r.method, r.target) for r in proxy.requests] == [("CONNECT", f"ntfy.example.test:{port}")]
        assert "Authorization" not in proxy.requests[0].headers
        assert env.state.read("outbox", record["key"])["attempts"] == 1  # type: ignore[index]


def test_no_proxy_is_respected(srv: NtfyStandin, tmp_path: Path) -> None:
    """A host listed in NO_PROXY goes direct (here: a name that does not resolve, so a dns retry)."""
    with HttpProxy() as proxy:
        env = Env(tmp_path, server="http://ntfy.example.test:9", token=TOKEN, allow_insecure_auth=True)
        record = env.queue()
        worker = _run(
            env, {"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,.example.test"}, "worker", "delivery", "--once"
        )
        assert worker.returncode == 0, worker.stderr
        assert proxy.requests == []
        assert env.state.read("outbox", record["key"])["attempts"] == 1  # type: ignore[index]


@pytest.mark.parametrize(
    ("server", "no_proxy", "direct"),
    [
        ("https://ntfy.corp.example", "corp.example", True),
        ("https://ntfy.corp.example", ".corp.example", True),
        ("https://corp.example", ".corp.example", True),
        ("https://notcorp.example", "corp.example", False),
        ("https://ntfy.corp.example:8443", "ntfy.corp.example:443", False),
        ("https://ntfy.corp.example:8443", "ntfy.corp.example:8443", True),
        ("https://10.1.2.3", "10.0.0.0/8", True),
        ("https://10.1.2.3", "10.1.2.4", False),
        ("https://[fd00::1]:8443", "fd00::/8", True),
        ("https://anything.example", "*", True),
        ("https://NTFY.Corp.Example.", "corp.example", True),
    ],
)
def test_no_proxy_entries(server: str, no_proxy: str, direct: bool) -> None:
    from donebell.shared.ntfy.proxy import route_for

    route = route_for(server, credentials=True, environ={"HTTPS_PROXY": "proxy.corp:3128", "NO_PROXY": no_proxy})
    assert (route.proxy is None) is direct, route


def test_route_details() -> None:
    from donebell.shared.ntfy.proxy import ProxyRefused, route_for

    env = {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2", "ALL_PROXY": "http://all:3"}
    assert route_for("https://ntfy.sh", credentials=True, environ=env).proxy == "http://low:1"
    assert route_for("http://ntfy.sh", credentials=False, environ=env).proxy == "http://all:3"
    assert route_for("http://localhost:8080", credentials=True, environ=env).proxy is None
    assert route_for("https://ntfy.sh", credentials=True, environ={}).proxy is None
    shown = route_for("https://ntfy.sh", credentials=True, environ={"HTTPS_PROXY": "http://u:proxypw@p:1"}).why
    assert "proxypw" not in shown and "CONNECT" in shown
    with pytest.raises(ProxyRefused, match="socks5"):
        route_for("https://ntfy.sh", credentials=False, environ={"ALL_PROXY": "socks5://p:1080"})
    with pytest.raises(ProxyRefused, match="clear text"):
        route_for("http://ntfy.sh", credentials=True, environ={"ALL_PROXY": "http://p:1"})
