"""The stand-in's injected faults: what each kind answers, and the thread-safe queue of them.

`NtfyStandin.handle` takes the next matching fault from `srv.faults` before serving a request.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .ntfy_errors import NtfyError, injected_error

FAULT_KINDS = ("fail", "redirect", "drop", "delay", "hang", "trickle")


@dataclass
class Fault:
    """One injected answer; see `Faults` for what each kind does."""

    kind: str
    status: int = 0
    error: NtfyError | None = None
    location: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes | None = None
    content_type: str = "application/json"
    delay: float = 0.0
    store: bool = False
    reset: bool = False
    max_seconds: float = 60.0
    match: str = "publish"  # "publish" (POST/PUT/DELETE and GET .../publish) or "any"
    released: threading.Event = field(default_factory=threading.Event)


class Faults:
    """A thread-safe FIFO of injected answers. Each queued fault answers one matching request.

    Control requests (`/_standin/...`) never consume a fault; by default only publishing requests
    do, so a test can still poll `/<topic>/json` while faults are queued (`match="any"` changes it).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Fault] = deque()
        self._hangs: list[Fault] = []

    def _add(self, count: int, **kw: Any) -> None:
        if kw["match"] not in ("publish", "any"):
            raise ValueError("match must be 'publish' or 'any'")
        with self._lock:
            for _ in range(count):
                self._queue.append(Fault(**kw))

    def fail(
        self,
        status: int,
        code: int | None = None,
        *,
        error: str | None = None,
        link: str | None = None,
        count: int = 1,
        store: bool = False,
        delay: float = 0.0,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        content_type: str = "application/json",
        match: str = "publish",
    ) -> None:
        """Answer `status` with ntfy's error JSON for `code` (default: ntfy's code for the status,
        else `status*100+1`). `store=True` stores the message first (accepted, then an error);
        `body` replaces the JSON (e.g. a proxy's HTML 502); `headers` adds e.g. Retry-After."""
        self._add(
            count,
            kind="fail",
            status=status,
            error=injected_error(status, code, error, link),
            store=store,
            delay=delay,
            headers=tuple((headers or {}).items()),
            body=body,
            content_type=content_type,
            match=match,
        )

    def redirect(
        self, status: int = 302, location: str | None = None, *, count: int = 1, match: str = "publish"
    ) -> None:
        """Answer with a redirect; `location` defaults to this same URL, so a client that follows it
        would publish twice (visible in `requests`)."""
        if status not in (301, 302, 303, 307, 308):
            raise ValueError("redirect status must be 301, 302, 303, 307 or 308")
        self._add(count, kind="redirect", status=status, location=location, match=match)

    def accept_then_drop(
        self, count: int = 1, *, store: bool = True, reset: bool = False, delay: float = 0.0, match: str = "publish"
    ) -> None:
        """Store the message (unless `store=False`), then close the socket with no answer at all;
        `reset=True` sends a TCP RST instead of a FIN."""
        self._add(count, kind="drop", store=store, reset=reset, delay=delay, match=match)

    def delay(self, seconds: float, *, store: bool = True, count: int = 1, match: str = "publish") -> None:
        """A slow server. `store=True`: stored on arrival, the normal answer comes after `seconds`
        (a client that timed out never learns it was accepted). `store=False`: nothing is stored
        and the connection closes after `seconds` without an answer."""
        self._add(count, kind="delay", delay=seconds, store=store, match=match)

    def hang(self, count: int = 1, *, store: bool = False, max_seconds: float = 60.0, match: str = "publish") -> None:
        """Hold the request until `release()` (or stop, or `max_seconds`), then close it unanswered."""
        self._add(count, kind="hang", store=store, max_seconds=max_seconds, match=match)

    def trickle(
        self,
        count: int = 1,
        *,
        store: bool = False,
        interval: float = 1.0,
        max_seconds: float = 60.0,
        match: str = "publish",
    ) -> None:
        """A slow body: status 200 and headers at once, then one byte every `interval` seconds
        (chunked) until `max_seconds` or stop; a client without an overall deadline waits it out."""
        self._add(count, kind="trickle", store=store, delay=interval, max_seconds=max_seconds, match=match)

    def add_from_json(self, doc: Mapping[str, Any]) -> None:
        """The control endpoint's form: {"kind": "fail", "status": 500, "code": 50001, "count": 2}."""
        kw = dict(doc)
        kind = kw.pop("kind", None)
        if kind == "fail":
            if isinstance(kw.get("body"), str):
                kw["body"] = kw["body"].encode("utf-8")
            self.fail(**kw)
        elif kind == "redirect":
            self.redirect(**kw)
        elif kind == "drop":
            self.accept_then_drop(**kw)
        elif kind == "delay":
            self.delay(**kw)
        elif kind == "hang":
            self.hang(**kw)
        elif kind == "trickle":
            self.trickle(**kw)
        else:
            raise ValueError(f"kind must be one of {FAULT_KINDS}")

    def take(self, is_publish: bool) -> Fault | None:
        with self._lock:
            if self._queue and (is_publish or self._queue[0].match == "any"):
                fault = self._queue.popleft()
                if fault.kind == "hang":
                    self._hangs.append(fault)
                return fault
            return None

    def release(self) -> int:
        """Release every hung request; returns how many were hung."""
        with self._lock:
            hangs, self._hangs = self._hangs, []
        for fault in hangs:
            fault.released.set()
        return len(hangs)

    def clear(self) -> None:
        """Drop every queued fault and release hung requests."""
        with self._lock:
            self._queue.clear()
        self.release()

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._queue)
