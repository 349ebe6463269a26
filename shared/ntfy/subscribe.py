"""The one subscription to the reply topic: ``GET <server>/<wake_topic>/json`` (httpx streaming).

ntfy answers with one JSON object per line: ``open``, the backlog after ``since``, then live
``message`` events and a ``keepalive`` every 45 s. The read timeout is a few keepalives long, so
a dead connection is noticed; any failure reconnects after an exponential, jittered backoff
(1 s doubling to 60 s, ×0.5-1.0), reset once a connection has opened. A reconnect asks for the
messages after the last one it saw (``since=<id>``; on the first run, ``since=all``: no ticket
can predate the key, and expired ones are refused), so a reply is seen once per connection and
handled once overall (records are keyed by message id).

A line longer than :data:`LINE_MAX` is dropped unread: bounded work per message.
"""

from __future__ import annotations

import logging
import queue
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import orjson
from donebell.shared.backoff import doubling
from donebell.shared.httpx_without_cli import httpx
from donebell.shared.ntfy.server_clock import SERVER_NOW, ServerClock

if TYPE_CHECKING:
    from donebell.shared.states import SubscriptionState

LINE_MAX = 64 << 10
KEEPALIVE_SECONDS = 45.0
BACKOFF_MAX = 60.0


def topic_url(server: str, topic: str) -> str:
    return f"{server}/{topic}/json"


def poll(
    url: str, headers: dict[str, str], since: str | None, timeout: float, clock: ServerClock | None = None
) -> list[dict[str, Any]]:
    """The cached messages after ``since`` (``--once`` runs): one request, then closed. Each
    message carries the server's clock at the reply (its ``Date``) as :data:`SERVER_NOW`."""
    params = {"poll": "1", "since": since or "all"}
    clock = clock or ServerClock()
    with httpx.Client(timeout=timeout, trust_env=False) as client:
        resp = client.get(url, params=params, headers=headers)
        if resp.status_code != 200:
            raise httpx.HTTPStatusError(f"HTTP {resp.status_code}", request=resp.request, response=resp)
        clock.heard_date_header(resp.headers.get("date"))
        messages = [m for m in _messages(iter([resp.content])) if m.get("event", "message") == "message"]
    for message in messages:
        message[SERVER_NOW] = clock.now() or time.time()
    return messages


def _messages(chunks: Iterator[bytes]) -> Iterator[dict[str, Any]]:
    buffer = b""
    skipping = False
    for chunk in chunks:
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                if len(buffer) > LINE_MAX:
                    buffer, skipping = b"", True  # an endless line: drop it unread
                break
            line, buffer = buffer[:end], buffer[end + 1 :]
            if skipping:
                skipping = False
                continue
            try:
                obj = orjson.loads(line) if len(line) <= LINE_MAX else None
            except orjson.JSONDecodeError:
                obj = None
            if isinstance(obj, dict):
                yield obj
    if buffer.strip() and not skipping:
        try:
            obj = orjson.loads(buffer)
        except orjson.JSONDecodeError:
            return
        if isinstance(obj, dict):
            yield obj


class Subscriber(threading.Thread):
    """Streams the reply topic into ``inbox`` (blocking when it is full: back-pressure, no loss)."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        since: str | None,
        inbox: queue.Queue[dict[str, Any] | None],
        log: logging.Logger,
        *,
        on_state: Callable[[SubscriptionState], None] = lambda _s: None,
        clock: ServerClock | None = None,
    ) -> None:
        super().__init__(name="wake-subscription", daemon=True)
        self.url, self.headers, self.last_id = url, headers, since
        self.inbox, self.log, self.on_state = inbox, log, on_state
        self.stopping = threading.Event()
        self.connects = 0
        self.failures = 0
        self.clock = clock or ServerClock()

    def run(self) -> None:
        failures = 0
        last_logged = float("-inf")
        while not self.stopping.is_set():
            opened_before = self.connects
            try:
                self._stream()
            except Exception as exc:  # noqa: BLE001 - the thread must outlive any one connection
                self.failures += 1
                failures = 1 if self.connects > opened_before else failures + 1  # reset once it worked
                self.on_state(subscription_trouble(exc))
                if time.monotonic() - last_logged > 60.0:  # rate-limited: one line a minute
                    self.log.warning("wake subscription failed (%s); reconnecting", type(exc).__name__)
                    last_logged = time.monotonic()
            delay = min(BACKOFF_MAX, doubling(0.5, min(failures, 6))) * random.uniform(0.5, 1.0)
            self.stopping.wait(delay)

    def _stream(self) -> None:
        params = {"since": self.last_id or "all"}
        timeout = httpx.Timeout(10.0, read=KEEPALIVE_SECONDS * 2.5)
        with httpx.Client(timeout=timeout, trust_env=False) as client:
            with client.stream("GET", self.url, params=params, headers=self.headers) as resp:
                if resp.status_code != 200:
                    raise httpx.HTTPStatusError(f"HTTP {resp.status_code}", request=resp.request, response=resp)
                for event in _messages(resp.iter_bytes()):
                    if self.stopping.is_set():
                        return
                    kind = event.get("event")
                    if kind in ("open", "keepalive"):
                        self.clock.heard(event.get("time"))
                    if kind == "open":
                        self.connects += 1
                        self.on_state("subscribed")
                    elif kind == "message":
                        event[SERVER_NOW] = self.clock.now() or time.time()  # what the tap's age is judged on
                        self.clock.heard(event.get("time"))
                        self.inbox.put(event)
                        if isinstance(event.get("id"), str):
                            self.last_id = event["id"]
        raise httpx.ReadError("the server closed the subscription")


def subscription_trouble(exc: Exception) -> SubscriptionState:
    """The health file's ``subscription`` after a failed connection: ``unauthorized`` when the
    server refused donebell's credentials (401/403), else ``unreachable``."""
    if isinstance(exc, httpx.HTTPStatusError) and exc.response.status_code in (401, 403):
        return "unauthorized"
    return "unreachable"


def clear_card(server: str, topic: str, sequence_id: str, headers: dict[str, str], timeout: float) -> str:
    """``PUT <server>/<topic>/<sequence_id>/clear`` (ntfy 2.16+ dismisses that notification on
    every subscribed phone): ``cleared``, or why not, in words for the reply's record."""
    url = f"{server}/{topic}/{sequence_id}/clear"
    try:
        resp = httpx.put(url, headers=headers, timeout=timeout, trust_env=False)
    except httpx.HTTPError as exc:
        return f"not cleared: {type(exc).__name__}"
    if resp.status_code == 200:
        return "cleared"
    if resp.status_code == 404:
        return "not cleared: the server cannot (ntfy before 2.16)"
    return f"not cleared: HTTP {resp.status_code}"


def publish_json(server: str, payload: dict[str, Any], headers: dict[str, str], timeout: float) -> str:
    """``POST <server>/`` with an ntfy JSON publish: ``sent``, or why not, in words for the log."""
    return _post(server + "/", headers, timeout, content=orjson.dumps(payload))


def post_text(url: str, body: str, headers: dict[str, str], timeout: float) -> str:
    """``POST <url>`` with a plain-text message: ``sent``, or why not."""
    return _post(url, headers, timeout, content=body.encode("utf-8"))


def _post(url: str, headers: dict[str, str], timeout: float, *, content: bytes) -> str:
    try:
        resp = httpx.post(url, headers=headers, content=content, timeout=timeout, trust_env=False)
    except httpx.HTTPError as exc:
        return f"not sent: {type(exc).__name__}"
    return "sent" if resp.status_code == 200 else f"not sent: HTTP {resp.status_code}"
