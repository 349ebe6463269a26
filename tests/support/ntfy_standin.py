"""A faithful stand-in for the ntfy server (v2.13 publish/poll/auth/limits, plus ⚠ 2.16 sequence IDs).

Models ntfy **2.13** (publish, poll, auth, limits; read in its source) and **2.16**'s sequence IDs
(from its docs; no real 2.16 server has been run). The real ntfy 2.11 (tests/support/ntfy_real.py,
tests/test_real_ntfy_*.py) differs where 2.16 matters: it ignores `sequence_id`. The stand-in stays
for fault injection (answers ntfy never gives a donebell publish: 5xx, 408, redirects,
Retry-After, dropped connections) and for the sequence-ID semantics.

The delivery, reliability and end-to-end suites talk to this instead of the real ntfy. Its rules
are ntfy's publish protocol (docs/agent-facts.md, "ntfy"), ported in `ntfy_rules` and `ntfy_core`; on top it records every
request and can be told to misbehave (`srv.faults`). Stdlib only; HTTP/1.1 keep-alive.

In-process::

    with NtfyStandin(users={"phil": "pw"}, tokens={TOKEN: "phil"}, default_access="deny-all",
                     access={"phil": {"alerts*": "read-write"}}) as srv:
        srv.faults.fail(502, count=2)           # the next two publishes get 502
        ...                                     # the client POSTs to srv.url
        [msg] = srv.wait_for_messages(1, timeout=5)

As a process (the end-to-end suite). The port file is written once listening, then stdout gets
one line `listening <url>`; SIGTERM or SIGINT exit 0::

    python -m support.ntfy_standin --port 0 --port-file PORT --record-file MESSAGES.jsonl
        [--user NAME:PASS] [--admin NAME:PASS] [--token TOKEN:NAME] [--access NAME:PATTERN:PERM]
        [--default-access PERM] [--request-limit BURST:SECONDS] [--daily-message-limit N] [--verbose]

Control endpoint on the same port, for tests driving a subprocess. Never recorded, never faulted,
no auth; ntfy itself has no `/_standin/` route. JSON in, JSON out:

    POST   /_standin/fault     {"kind": "fail"|"redirect"|"drop"|"delay"|"hang", ...}: the
                               keyword arguments of the matching `Faults` method, e.g.
                               {"kind": "fail", "status": 429, "code": 42901, "count": 2}
    DELETE /_standin/fault     drop queued faults and release hung requests
    POST   /_standin/release   release hung requests -> {"released": n}
    POST   /_standin/limits    {"request": [burst, seconds] | null, "daily_messages": n | null,
                                "auth_failures": [burst, seconds] | null}; absent keys unchanged
    POST   /_standin/reset     forget requests, messages, faults and connection counts
    GET    /_standin/requests  the recorded requests (`RecordedRequest.to_json`)
    GET    /_standin/messages  the accepted messages (`?topic=` to filter)
    GET    /_standin/state     {"connections_opened", "connections_accepted", "requests", "messages",
                                "pending_faults"}
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from .ntfy_core import PUBLISH_GET_PATH, NtfyCore
from .ntfy_errors import NtfyError
from .ntfy_faults import Fault, Faults
from .ntfy_go import go_json
from .ntfy_http import HttpServer, Incoming, Reply
from .ntfy_rules import DISALLOWED_TOPICS
from .ntfy_state import (
    NTFY_AUTH_FAILURE_LIMIT,
    NTFY_DAILY_MESSAGE_LIMIT,
    NTFY_REQUEST_LIMIT,
    Auth,
    RateLimit,
    RecordedRequest,
)

__all__ = [
    "NTFY_AUTH_FAILURE_LIMIT",
    "NTFY_DAILY_MESSAGE_LIMIT",
    "NTFY_REQUEST_LIMIT",
    "Faults",
    "NtfyError",
    "NtfyStandin",
    "RateLimit",
    "RecordedRequest",
]

CONTROL = "/_standin/"
_KEEP: Any = object()


class NtfyStandin(NtfyCore):
    """The stand-in. With no arguments: an open ntfy (no auth) with the rate limits off."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        users: Mapping[str, str] | None = None,
        admins: tuple[str, ...] = (),
        tokens: Mapping[str, str] | None = None,
        access: Mapping[str, Mapping[str, str]] | None = None,
        default_access: str | None = None,
        auth: bool | None = None,
        auth_failure_limit: RateLimit | None = NTFY_AUTH_FAILURE_LIMIT,
        request_limit: RateLimit | None = None,
        daily_message_limit: int | None = None,
        disallowed_topics: tuple[str, ...] = DISALLOWED_TOPICS,
        keepalive_seconds: float = 45.0,
        clock: Callable[[], float] = time.time,
        record_file: str | Path | None = None,
        verbose: bool = False,
    ) -> None:
        """Auth is on when users, tokens, access or default_access is given (or `auth=True`).
        `users` maps name -> password, `tokens` maps a `tk_` token -> user name, `access` maps a
        user (or "*", everyone) -> {topic pattern with `*`: read-write|read-only|write-only|
        deny-all}; default_access defaults to read-write as in ntfy. `clock` (wall seconds) drives
        message times, `since` and the rate buckets; a test can pass a settable one."""
        enabled = auth if auth is not None else bool(users or tokens or access or default_access)
        user_table = None
        if enabled:
            rw = default_access or "read-write"
            user_table = Auth(users or {}, admins, tokens or {}, access or {}, rw, auth_failure_limit, clock)
        super().__init__(user_table, disallowed_topics, keepalive_seconds, clock)
        self.faults = Faults()
        self.verbose = verbose
        self._bind = (host, port)
        self._record_path = Path(record_file) if record_file else None
        self._http: HttpServer | None = None
        self._used_connections: set[int] = set()
        self._accepted_before_reset = 0
        self.set_limits(request=request_limit, daily_messages=daily_message_limit)

    # --------------------------------------------------------------------------------- lifecycle

    def start(self) -> Self:
        self._http = HttpServer(*self._bind, self)
        self._open_record(self._record_path)
        self._http.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # ends delays and streams
        self.faults.clear()  # releases hung requests
        with self._cond:
            self._cond.notify_all()
        if self._http:
            self._http.stop()
        with self._cond:
            if self._record:
                self._record.close()
                self._record = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._http, "not started"
        return self._http.port

    @property
    def url(self) -> str:
        return f"http://{self._bind[0]}:{self.port}"

    # --------------------------------------------------------------------------------- recording

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every ntfy request so far, in arrival order (control requests are not recorded)."""
        with self._cond:
            return list(self._requests)

    def messages(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Every accepted `message`, as ntfy rendered it, in order: cached or not (`Cache: no`),
        and scheduled ones too. Poll `/<topic>/json` for ntfy's own cache view."""
        with self._cond:
            return self._messages(topic)

    def events(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Like `messages`, with every event kind (⚠ 2.16 message_clear / message_delete too)."""
        with self._cond:
            return [dict(r.msg) for r in self._cache.rows if topic in (None, r.topic)]

    @property
    def connections_opened(self) -> int:
        """TCP connections that carried at least one ntfy request (control-only ones not counted)."""
        with self._cond:
            return len(self._used_connections)

    @property
    def connections_accepted(self) -> int:
        """Every TCP connection accepted, control and idle ones included."""
        return (self._http.accepted if self._http else 0) - self._accepted_before_reset

    def wait_for_messages(self, n: int, timeout: float = 5.0, topic: str | None = None) -> list[dict[str, Any]]:
        """Block until `n` messages were accepted (on `topic`) and return them; else TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._messages(topic)) >= n, timeout):
                raise TimeoutError(f"{len(self._messages(topic))} of {n} messages after {timeout}s")
            return self._messages(topic)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Block until `n` requests arrived (answered or not) and return them; else TimeoutError."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"{len(self._requests)} of {n} requests after {timeout}s")
            return list(self._requests)

    # ------------------------------------------------------------------------------------ limits

    def set_limits(
        self,
        *,
        request: RateLimit | None = _KEEP,
        daily_messages: int | None = _KEEP,
        auth_failures: RateLimit | None = _KEEP,
    ) -> None:
        """Change the limits at runtime, with fresh full buckets; None turns one off, an omitted
        argument stays. ntfy's values: NTFY_REQUEST_LIMIT, NTFY_DAILY_MESSAGE_LIMIT,
        NTFY_AUTH_FAILURE_LIMIT (the last is on by default whenever auth is)."""
        with self._cond:
            if request is not _KEEP:
                self._set_request_limit(request)
            if daily_messages is not _KEEP:
                self._daily_limit, self._daily_count = daily_messages, 0
            if auth_failures is not _KEEP and self._auth:
                self._auth.set_failure_limit(auth_failures)

    def reset_daily_quota(self) -> None:
        """ntfy resets the daily message count at midnight UTC; a test calls this instead."""
        with self._cond:
            self._daily_count = 0

    def reset(self) -> None:
        """Forget recorded requests, messages, connection counts and queued faults."""
        self.faults.clear()
        with self._cond:
            self._requests, self._used_connections = [], set()
            self._cache.rows.clear()
            self._accepted_before_reset = self._http.accepted if self._http else 0

    # ---------------------------------------------------------------------------------- handling

    def handle(self, req: Incoming) -> Reply:
        """Record the request, then answer it as ntfy would, unless a queued fault takes over."""
        if req.path.startswith(CONTROL):
            try:
                return self._control(req.method, req.path[len(CONTROL) :], req.body, req.query)
            except (ValueError, TypeError) as exc:
                return Reply(400, go_json({"error": str(exc)}))
        rec = self._record_request(req)
        fault = self.faults.take(req.method in ("POST", "PUT", "DELETE") or bool(PUBLISH_GET_PATH.match(req.path)))
        reply = self._with_fault(fault, rec) if fault else self._serve(rec)
        with self._cond:
            rec.status, rec.ntfy_code = (None, None) if reply.drop else (reply.status, reply.code)
            rec.fault = fault.kind if fault else None
            self._cond.notify_all()
        if self.verbose:
            outcome = "dropped" if reply.drop else str(reply.status)
            print(f"ntfy-standin: {req.method} {req.target} -> {outcome}", file=sys.stderr, flush=True)
        return reply

    def _record_request(self, req: Incoming) -> RecordedRequest:
        try:
            parsed = json.loads(req.body) if req.body else None
        except ValueError:
            parsed = None
        with self._cond:
            rec = RecordedRequest(
                seq=len(self._requests) + 1,
                method=req.method,
                target=req.target,
                path=req.path,
                query=req.query,
                headers=req.headers,
                body=req.body,
                parsed=parsed,
                arrived_monotonic=time.monotonic(),
                arrived_wall=time.time(),
                connection_id=req.connection_id,
            )
            self._requests.append(rec)
            self._used_connections.add(req.connection_id)
            self._cond.notify_all()
        return rec

    def _with_fault(self, f: Fault, rec: RecordedRequest) -> Reply:
        served = self._serve(rec) if f.store else None  # "store" means: ntfy did accept it
        if f.kind == "hang":
            f.released.wait(f.max_seconds)
            return Reply(0, drop=True)
        if f.kind == "trickle":
            return Reply(200, stream=self._trickle(f.delay, f.max_seconds))
        if f.delay:
            self._stopping.wait(f.delay)  # an Event wait, so stop() cuts it short
        if f.kind == "delay":
            return served if served is not None else Reply(0, drop=True)
        if f.kind == "drop":
            return Reply(0, drop=True, reset=f.reset)
        if f.kind == "redirect":
            location = f.location or f"{self.url}{rec.target}"
            page = f'<a href="{location}">Redirect</a>.\n\n'.encode()
            return Reply(f.status, page, "text/html; charset=utf-8", [("Location", location)])
        assert f.error is not None
        body = f.body if f.body is not None else f.error.body()
        return Reply(f.status, body, f.content_type, list(f.headers), code=f.error.code)

    def _trickle(self, interval: float, max_seconds: float) -> Iterator[bytes]:
        ends = time.monotonic() + max_seconds
        while time.monotonic() < ends and not self._stopping.wait(interval):
            yield b" "

    def _control(self, method: str, action: str, body: bytes, query: dict[str, str]) -> Reply:
        doc = json.loads(body) if body.strip() else {}
        if (method, action) == ("POST", "fault"):
            self.faults.add_from_json(doc)
        elif (method, action) == ("DELETE", "fault"):
            self.faults.clear()
        elif (method, action) == ("POST", "release"):
            return Reply(200, go_json({"released": self.faults.release()}))
        elif (method, action) == ("POST", "limits"):
            limits: dict[str, Any] = {k: RateLimit(*v) if isinstance(v, list) else v for k, v in doc.items()}
            self.set_limits(**limits)
        elif (method, action) == ("POST", "reset"):
            self.reset()
        elif (method, action) == ("GET", "requests"):
            return Reply(200, go_json([r.to_json() for r in self.requests]))
        elif (method, action) == ("GET", "messages"):
            return Reply(200, go_json(self.messages(query.get("topic"))))
        elif (method, action) != ("GET", "state"):
            return Reply(404, go_json({"error": f"no control action {method} {CONTROL}{action}"}))
        state = {
            "connections_opened": self.connections_opened,
            "connections_accepted": self.connections_accepted,
            "requests": len(self.requests),
            "messages": len(self.messages()),
            "pending_faults": self.faults.pending,
        }
        return Reply(200, go_json(state))


if __name__ == "__main__":  # the CLI lives in ntfy_standin_cli; `-m support.ntfy_standin` still runs it
    from .ntfy_standin_cli import main

    sys.exit(main())
