"""The notification card on both ends of the server range (issue 34 item 11): ntfy 2.11 (Debian
trixie), which has no sequence IDs, and 2.27 (Debian sid), which updates a card by ``sequence_id``
and dismisses it with ``PUT /<topic>/<sequence_id>/clear``.

* A publish retried after its answer was lost (a real proxy in front of the real server forwards
  the first POST and drops the answer) reaches the server twice: 2.27 stores both under the
  record's ``sequence_id`` (the phone shows one card, updated), 2.11 stores two separate messages.
* A card whose request was answered at the desk, or by another tap, is cleared on 2.27 (the
  server stores the ``message_clear`` event for that ``sequence_id``) and said to be impossible on 2.11.
* doctor's ``updates`` check tells the two apart, asking without publishing
  (tests/test_real_ntfy_doctor.py, on both).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from donebell.shared.ntfy.subscribe import clear_card
from donebell.workers.wake.pipeline import WakePipeline
from support.delivery_kit import Env
from support.ntfy_real import SERVER_IDS, SERVER_SUITES, RealNtfy, serve_with_donebell
from support.waiting import wait_for
from test_approvals import Phone, _printed

pytestmark = pytest.mark.usefixtures("no_outside_config")

TOPIC = "donebell-cards"


@pytest.fixture(scope="module", params=SERVER_SUITES, ids=SERVER_IDS)
def server(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[tuple[RealNtfy, str]]:
    yield from serve_with_donebell(tmp_path_factory.mktemp("ntfy-cards"), request.param)


def _events(ntfy: RealNtfy, topic: str, token: str) -> list[dict[str, Any]]:
    """Everything the server keeps for ``topic`` (messages and, on 2.27, clear events)."""
    reply = httpx.get(
        f"{ntfy.url}/{topic}/json",
        params={"poll": "1", "since": "all"},
        headers={"Authorization": f"Bearer {token}"},
        timeout=10,
    )
    reply.raise_for_status()
    return [json.loads(line) for line in reply.text.splitlines() if line.strip()]


class AnswerDroppingProxy:
    """A reverse proxy to ``upstream`` that forwards every POST but drops the answer to the first
    ``drops`` of them (the connection closes without a response): a publish whose answer was lost."""

    def __init__(self, upstream: str, drops: int = 1) -> None:
        self.upstream, self.drops, self.forwarded = upstream, drops, 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                keep = {k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")}
                answer = httpx.post(proxy.upstream + self.path, content=body, headers=keep, timeout=10)
                proxy.forwarded += 1
                if proxy.drops > 0:
                    proxy.drops -= 1
                    self.close_connection = True  # delivered, but the client never hears back
                    return
                self.send_response(answer.status_code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_a_publish_retried_after_a_lost_answer_updates_one_card(tmp_path: Path, server: tuple[RealNtfy, str]) -> None:
    ntfy, token = server
    proxy = AnswerDroppingProxy(ntfy.url)
    try:
        env = Env(tmp_path, server=proxy.url, topic=TOPIC, token=token)
        record = env.queue()
        role = env.role(once=True)
        deadline = time.monotonic() + 40
        while env.state.count("outbox") and time.monotonic() < deadline:
            role.run_pass()
            time.sleep(0.5)
        assert env.state.count("outbox") == 0 and proxy.forwarded == 2  # the lost answer, then the retry
    finally:
        proxy.close()
    stored = [e for e in _events(ntfy, TOPIC, token) if e["event"] == "message"]
    assert len(stored) == 2 and stored[0]["id"] != stored[1]["id"]
    if ntfy.version == "2.27":  # one card on the phone: the second revision replaces the first
        assert [m.get("sequence_id") for m in stored] == [record["sequence_id"]] * 2
    else:  # 2.11 ignores the field: the phone shows the notification twice (doctor's `updates` warns)
        assert all("sequence_id" not in m for m in stored)


@pytest.mark.parametrize("answered", ["at-the-desk", "by-another-tap"])
def test_a_card_answered_elsewhere_is_cleared_where_the_server_can(
    tmp_path: Path, server: tuple[RealNtfy, str], answered: str
) -> None:
    """The permission request's card was pushed; the prompt was answered at the terminal, or by a
    first tap; a later tap is refused `already-answered` and the card is cleared (2.27) or said
    not clearable (2.11). The clear goes to the real server with donebell's own token."""
    ntfy, token = server
    topic = f"{TOPIC}-{answered}"
    phone = Phone(tmp_path)
    proc = phone.ask()
    request = phone.request()
    card = {"topic": topic, "title": "needs you", "message": "Bash", "sequence_id": request["sequence_id"]}
    pushed = httpx.post(f"{ntfy.url}/", json=card, headers={"Authorization": f"Bearer {token}"}, timeout=5)
    assert pushed.status_code == 200, pushed.text
    pipe = WakePipeline(phone.state, phone.env.settings(), logging.getLogger("test-cards"))
    cleared: list[str] = []

    def clear(sequence_id: str) -> str:
        cleared.append(clear_card(ntfy.url, topic, sequence_id, {"Authorization": f"Bearer {token}"}, 5.0))
        return cleared[-1]

    pipe.clear_card = clear
    if answered == "at-the-desk":
        with phone.transcript.open("ab") as f:
            f.write(phone.answer_line)
        assert _printed(proc, timeout=15) == b""
    else:
        first = pipe.receive({"id": "first", "message": phone.ticket(request, "allow"), "time": int(time.time())})
        assert first is not None and first["status"] == "answered"
        assert json.loads(_printed(proc, timeout=15))["hookSpecificOutput"]["decision"]["behavior"] == "allow"
    late = pipe.receive({"id": "late", "message": phone.ticket(request, "deny"), "time": int(time.time())})
    assert late is not None and late["reason"] == "already-answered"
    if ntfy.version == "2.27":
        assert late["card"] == "cleared"
        wait_for(lambda: _clears(ntfy, topic, token) == [request["sequence_id"]], 10, "the clear event")
    else:
        assert late["card"] == "not cleared: the server cannot (ntfy before 2.16)"
        assert _clears(ntfy, topic, token) == []


def _clears(ntfy: RealNtfy, topic: str, token: str) -> list[str]:
    return [e.get("sequence_id", "") for e in _events(ntfy, topic, token) if e["event"] == "message_clear"]
