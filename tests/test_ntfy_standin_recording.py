"""The ntfy stand-in as a test harness: request recording, keep-alive, and the subprocess mode."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import httpx
import pytest
from support.ntfy_kit import post
from support.ntfy_standin import NtfyStandin

TESTS_DIR = Path(__file__).resolve().parent


# ------------------------------------------------------------------------- recording, keep-alive


def test_one_keepalive_connection_is_reused(srv: NtfyStandin) -> None:
    """Requests on one client share one TCP connection; a second client opens another."""
    with httpx.Client(base_url=srv.url, timeout=5) as c:
        for i in range(3):
            assert c.post("/", json={"topic": "t", "message": str(i)}).status_code == 200
    assert srv.connections_opened == 1 and len({r.connection_id for r in srv.requests}) == 1
    post(srv.url, json={"topic": "t"})
    assert srv.connections_opened == 2


def test_requests_are_recorded_with_headers_body_and_times(srv: NtfyStandin, client: httpx.Client) -> None:
    """Each request keeps method, path, headers, raw body, parsed JSON and monotonic/wall arrival times."""
    client.post("/", json={"topic": "t", "message": "one"}, headers={"Authorization": "Bearer x"})
    client.post("/t?title=q", content=b"two")
    first, second = srv.requests
    assert (first.method, first.path, first.parsed, first.header("AUTHORIZATION")) == (
        "POST",
        "/",
        {"topic": "t", "message": "one"},
        "Bearer x",
    )
    assert (second.target, second.query, second.body, second.parsed) == ("/t?title=q", {"title": "q"}, b"two", None)
    assert first.arrived_monotonic <= second.arrived_monotonic and first.message_ids == [srv.messages()[0]["id"]]
    assert srv.messages()[1]["title"] == "q"


def test_wait_for_messages_times_out() -> None:
    """`wait_for_messages` raises TimeoutError when too few messages arrive."""
    with NtfyStandin() as s, pytest.raises(TimeoutError):
        s.wait_for_messages(1, timeout=0.05)


# ------------------------------------------------------------------------------------ subprocess


def test_subprocess_mode(tmp_path: Path) -> None:
    """As a process it writes its port, records stored messages as JSON lines, takes faults via /_standin and exits 0 on SIGTERM."""
    port_file, record = tmp_path / "port", tmp_path / "messages.jsonl"
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    cmd = [sys.executable, "-m", "support.ntfy_standin", "--port", "0", "--port-file", str(port_file)]
    proc = subprocess.Popen(
        [*cmd, "--record-file", str(record)], stdout=subprocess.PIPE, env=env, cwd=tmp_path, text=True
    )
    guard = threading.Timer(10, proc.kill)  # a stand-in that never starts cannot hang the suite
    guard.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until it is listening: no polling for the port file
        assert line.startswith("listening "), line
        url = line.split()[1]
        assert url == f"http://127.0.0.1:{int(port_file.read_text())}"
        with httpx.Client(base_url=url, timeout=5) as c:
            c.post("/_standin/fault", json={"kind": "fail", "status": 503, "count": 1}).raise_for_status()
            assert c.post("/", json={"topic": "t", "message": "m"}).status_code == 503
            ok = c.post("/", json={"topic": "t", "message": "m"}).json()
            recorded = c.get("/_standin/requests").json()
            state = c.get("/_standin/state").json()
        assert [r["status"] for r in recorded] == [503, 200] and state["connections_opened"] == 1
        assert [json.loads(line) for line in record.read_text().splitlines()] == [ok]
    finally:
        guard.cancel()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
