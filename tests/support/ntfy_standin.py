"""A faithful stand-in for the ntfy server (v2.13 publish/poll, plus ⚠ 2.16 sequence IDs).

The delivery, reliability and end-to-end suites talk to this instead of the real ntfy. Its rules
come from /work/shared/facts/ntfy.md (ported in `ntfy_rules`); on top it records every request
and can be told to misbehave (`srv.faults`). Stdlib only; HTTP/1.1 keep-alive on 127.0.0.1.

In-process::

    with NtfyStandin(tokens={TOKEN: "phil"}, users={"phil": "pw"}, default_access="deny-all",
                     access={"phil": {"alerts": "rw"}}) as srv:
        srv.faults.fail(502, count=2)           # the next two publishes get 502
        ... client POSTs to srv.url ...
        [msg] = srv.wait_for_messages(1, timeout=5)

As a process (the end-to-end suite; the port file is written once listening, stdout then gets
one line `listening <url>`, SIGTERM exits 0)::

    python -m support.ntfy_standin --port 0 --port-file PORT --record-file MSGS.jsonl

Control endpoint (same port; never recorded, never faulted, no auth). JSON in, JSON out:

    POST   /_standin/fault     {"kind": "fail"|"redirect"|"drop"|"delay"|"hang", ...Faults kwargs}
    DELETE /_standin/fault     drop queued faults, release hung requests
    POST   /_standin/release   release hung requests
    POST   /_standin/limits    {"request": [burst, seconds]|null, "daily_messages": n|null,
                                "auth_failures": [burst, seconds]|null}  (absent keys unchanged)
    POST   /_standin/reset     forget requests, messages, faults and counters
    GET    /_standin/requests  recorded requests (RecordedRequest.to_json)
    GET    /_standin/messages  accepted messages (?topic=...)
    GET    /_standin/state     {"connections_opened", "connections_accepted", "requests", ...}
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import re
import selectors
import signal
import socket
import struct
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, BinaryIO, Self

from .ntfy_rules import (
    CACHE_SECONDS,
    DISALLOWED_TOPICS,
    NAME,
    NtfyError,
    Panic,
    Params,
    apply_body,
    decode_publish_json,
    err,
    go_json,
    go_text,
    go_trim,
    json_overrides,
    parse_priority,
    parse_publish_params,
    parse_since,
    random_id,
    render_message,
)
from .ntfy_state import (
    NTFY_AUTH_FAILURE_LIMIT,
    Auth,
    Cache,
    Fault,
    Faults,
    Filters,
    RateLimit,
    RecordedRequest,
    Row,
    TokenBucket,
)

__all__ = ["NtfyStandin", "RateLimit", "RecordedRequest", "NtfyError", "main"]

CONTROL = "/_standin/"
MAX_BODY = 16 * 1024 * 1024  # kept for the record; ntfy itself peeks at most 8 KiB of a publish
_TOPIC_PATH = re.compile(rf"^/({NAME})$")
_SEQUENCE_PATH = re.compile(rf"^/({NAME})/({NAME})$")  # ⚠ 2.16
_CLEAR_PATH = re.compile(rf"^/({NAME})/({NAME})/clear$")  # ⚠ 2.16
_PUBLISH_GET = re.compile(rf"^/({NAME})/(publish|send|trigger)$")
_SUBSCRIBE = re.compile(rf"^/({NAME}(?:,{NAME})*)/(json|sse|raw|ws|auth)$")
_KEEP: Any = object()


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: Iterator[bytes] | None = None  # a chunked body (non-poll subscribe)
    drop: bool = False  # close the connection without answering
    reset: bool = False
    code: int | None = None  # the ntfy error code, for the record


def _error_reply(e: NtfyError) -> Reply:
    return Reply(e.status, e.body(), code=e.code)


class NtfyStandin:
    """The stand-in server. Pass nothing for an open ntfy with limits off; see the README above."""

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
        """Auth is on when any of users/tokens/access/default_access is given (or `auth=True`);
        `tokens` maps a `tk_...` token to a user name. `clock` drives message times and buckets."""
        self._cond = threading.Condition()
        self.clock, self.verbose = clock, verbose
        self.faults = Faults()
        self._bind = (host, port)
        on = auth if auth is not None else bool(users or tokens or access or default_access)
        self._auth = (
            Auth(
                users or {},
                admins,
                tokens or {},
                access or {},
                default_access or "read-write",
                auth_failure_limit,
                clock,
            )
            if on
            else None
        )
        self._disallowed = disallowed_topics
        self._keepalive = keepalive_seconds
        self._record_path = Path(record_file) if record_file else None
        self._record: BinaryIO | None = None
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._sockets: dict[int, socket.socket] = {}
        self._conn_ids = iter(range(1, 2**62))
        self.set_limits(request=request_limit, daily_messages=daily_message_limit)
        self._reset_records()

    # ------------------------------------------------------------------ lifecycle and accessors

    def start(self) -> Self:
        self._server = _Server(self._bind, _Handler)
        self._server.standin = self
        if self._record_path:
            self._record = self._record_path.open("ab")
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._accept_loop, name="ntfy-standin", daemon=True)
        self._thread.start()
        return self

    def _accept_loop(self) -> None:
        # Instead of serve_forever(), which only sees shutdown() at its next poll tick, wait on the
        # listening socket and a wake-up socket: no polling, and stop() takes effect at once.
        assert self._server
        with selectors.DefaultSelector() as sel:
            self._server.timeout = 0
            sel.register(self._server.socket, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in sel.select():
                    if key.fileobj is self._server.socket and not self._stopping.is_set():
                        self._server.handle_request()  # ready, and timeout 0: returns at once

    def stop(self) -> None:
        self._stopping.set()
        self.faults.clear()
        with self._cond:
            self._cond.notify_all()
            sockets = list(self._sockets.values())
        if self._server:
            self._wake_w.send(b"x")
            if self._thread:
                self._thread.join(5)
            for sock in sockets:  # idle keep-alive connections would otherwise block their threads
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            self._server.server_close()
            self._wake_r.close()
            self._wake_w.close()
        if self._record:
            self._record.close()
            self._record = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server, "not started"
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self._bind[0]}:{self.port}"

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every ntfy request so far (control requests excluded), in arrival order."""
        with self._cond:
            return list(self._requests)

    def messages(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Every accepted `message` (cached or not, scheduled too) as ntfy rendered it, in order."""
        with self._cond:
            return self._messages(topic)

    def events(self, topic: str | None = None) -> list[dict[str, Any]]:
        """Like `messages` but with every event kind (⚠ message_clear / message_delete)."""
        with self._cond:
            return [r.msg for r in self._cache.rows if topic in (None, r.topic)]

    @property
    def connections_opened(self) -> int:
        """TCP connections that carried at least one ntfy request (control-only ones not counted)."""
        with self._cond:
            return len(self._used_connections)

    @property
    def connections_accepted(self) -> int:
        with self._cond:
            return self._accepted

    def wait_for_messages(self, n: int, timeout: float = 5.0, topic: str | None = None) -> list[dict[str, Any]]:
        """Block until `n` messages were accepted (on `topic`); TimeoutError otherwise."""
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._messages(topic)) >= n, timeout):
                raise TimeoutError(f"{len(self._messages(topic))} of {n} messages after {timeout}s")
            return self._messages(topic)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> list[RecordedRequest]:
        with self._cond:
            if not self._cond.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"{len(self._requests)} of {n} requests after {timeout}s")
            return list(self._requests)

    def set_limits(
        self,
        *,
        request: RateLimit | None = _KEEP,
        daily_messages: int | None = _KEEP,
        auth_failures: RateLimit | None = _KEEP,
    ) -> None:
        """Swap rate limits at runtime (fresh, full buckets); omitted arguments stay as they are.
        ntfy's own values are `NTFY_REQUEST_LIMIT`, `NTFY_DAILY_MESSAGE_LIMIT`, `NTFY_AUTH_FAILURE_LIMIT`."""
        with self._cond:
            if request is not _KEEP:
                self._requests_bucket = TokenBucket(request, self.clock) if request else None
            if daily_messages is not _KEEP:
                self._daily_limit, self._daily_count = daily_messages, 0
            if auth_failures is not _KEEP and self._auth:
                self._auth.set_failure_limit(auth_failures)

    def reset_daily_quota(self) -> None:
        """ntfy resets the daily message count at midnight UTC; tests call this instead."""
        with self._cond:
            self._daily_count = 0

    def reset(self) -> None:
        """Forget recorded requests, messages, connection counts and queued faults."""
        self.faults.clear()
        with self._cond:
            self._reset_records()

    def _reset_records(self) -> None:
        self._requests: list[RecordedRequest] = []
        self._cache = Cache()
        self._used_connections: set[int] = set()
        self._accepted = 0

    def _messages(self, topic: str | None) -> list[dict[str, Any]]:
        return [r.msg for r in self._cache.rows if r.msg["event"] == "message" and topic in (None, r.topic)]

    def _log(self, text: str) -> None:
        if self.verbose:
            print(f"ntfy-standin: {text}", file=sys.stderr, flush=True)

    # ----------------------------------------------------------------------- request handling

    def _connection_opened(self, sock: socket.socket) -> int:
        with self._cond:
            conn_id = next(self._conn_ids)
            self._sockets[conn_id] = sock
            self._accepted += 1
            return conn_id

    def _connection_closed(self, conn_id: int) -> None:
        with self._cond:
            self._sockets.pop(conn_id, None)

    def _record_request(self, h: _Handler, body: bytes, path: str, query: dict[str, str]) -> RecordedRequest:
        try:
            parsed = json.loads(body) if body else None
        except ValueError:
            parsed = None
        with self._cond:
            # http.server decodes header bytes as Latin-1; Go keeps the bytes (UTF-8 in practice).
            headers = [(k, go_text(v.encode("latin-1", "replace"))) for k, v in h.headers.items()]
            rec = RecordedRequest(
                len(self._requests) + 1,
                h.command,
                h.path,
                path,
                query,
                headers,
                body,
                parsed,
                time.monotonic(),
                time.time(),
                h.conn_id,
            )
            self._requests.append(rec)
            self._used_connections.add(h.conn_id)
            self._cond.notify_all()
        return rec

    def handle(self, h: _Handler, body: bytes, path: str, query: dict[str, str]) -> Reply:
        """Record the request, then answer it as ntfy would, unless a queued fault takes over."""
        rec = self._record_request(h, body, path, query)
        is_publish = h.command in ("POST", "PUT", "DELETE") or bool(_PUBLISH_GET.match(path))
        fault = self.faults.take(is_publish)
        reply = self._with_fault(fault, rec) if fault else self._serve(rec)
        with self._cond:
            rec.status, rec.ntfy_code = (None, None) if reply.drop else (reply.status, reply.code)
            rec.fault = fault.kind if fault else None
            self._cond.notify_all()
        self._log(
            f"{h.command} {h.path} -> {'dropped' if reply.drop else reply.status}"
            f"{f' (fault {fault.kind})' if fault else ''}"
        )
        return reply

    def _with_fault(self, f: Fault, rec: RecordedRequest) -> Reply:
        served = self._serve(rec) if f.store else None
        if f.kind == "hang":
            f.released.wait(f.max_seconds)
            return Reply(0, drop=True)
        if f.delay:
            self._stopping.wait(f.delay)  # not a busy wait; stop() cuts it short
        if f.kind == "delay":
            return served if served is not None else Reply(0, drop=True)
        if f.kind == "drop":
            return Reply(0, drop=True, reset=f.reset)
        if f.kind == "redirect":
            location = f.location or f"{self.url}{rec.target}"
            return Reply(
                f.status,
                f'<a href="{location}">Redirect</a>.\n\n'.encode(),
                "text/html; charset=utf-8",
                [("Location", location)],
            )
        assert f.error is not None
        body = f.body if f.body is not None else f.error.body()
        return Reply(f.status, body, f.content_type, list(f.headers), code=f.error.code)

    def _serve(self, rec: RecordedRequest) -> Reply:
        try:
            return self._route(rec)
        except NtfyError as e:
            return _error_reply(e)
        except Panic:
            return Reply(0, drop=True)

    def _route(self, rec: RecordedRequest) -> Reply:
        """`handle` → `handleInternal` of server.go, in its order (web app, accounts etc. are off)."""
        headers: dict[str, str] = {}
        for k, v in rec.headers:  # Go's Header.Get: the first value
            headers.setdefault(k.lower(), v)
        params = Params(headers, rec.query)
        user = self._authenticate(params)  # before routing: a bad credential is 401 on any path
        m, path = rec.method, rec.path
        if m == "GET" and path == "/v1/health":
            return Reply(200, go_json({"healthy": True}))
        if m == "OPTIONS":
            self._limit_request()
            return Reply(
                200,
                b"",
                None,
                [
                    ("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE"),
                    ("Access-Control-Allow-Headers", "*"),
                ],
            )
        if m in ("PUT", "POST") and path == "/":
            fields = decode_publish_json(rec.body)
            params.headers.update(json_overrides(fields))
            message = (fields.get("message") or "triggered").encode()
            return self._publish(rec, params, fields["topic"], user, message)
        if m in ("PUT", "POST") and (match := _TOPIC_PATH.match(path)):
            return self._publish(rec, params, match[1], user, rec.body)
        if m == "GET" and (match := _PUBLISH_GET.match(path)):
            return self._publish(rec, params, match[1], user, b"")
        if m == "GET" and (match := _SUBSCRIBE.match(path)):
            return self._subscribe(params, match[1], match[2], user)
        if m in ("PUT", "POST") and (match := _SEQUENCE_PATH.match(path)):
            return self._publish(rec, params, match[1], user, rec.body, match[2])
        if m == "PUT" and (match := _CLEAR_PATH.match(path)):
            return self._event(rec, match[1], match[2], user, "message_clear")
        if m == "DELETE" and (match := _SEQUENCE_PATH.match(path)):
            return self._event(rec, match[1], match[2], user, "message_delete")
        raise err(40401)

    def _authenticate(self, params: Params) -> str | None:
        if self._auth is None:
            return None
        value = go_trim(params.headers.get("authorization", ""))
        query = params.query.get("authorization") or params.query.get("auth")
        if query:  # base64 RawURL of the header value (for WebSocket clients)
            try:
                if "=" in query:
                    raise ValueError("padding")
                value = go_trim(go_text(base64.b64decode(query + "=" * (-len(query) % 4), b"-_", validate=True)))
            except (binascii.Error, ValueError):
                raise err(50001) from None  # not an errHTTP in ntfy, hence 500
        with self._cond:
            return self._auth.identify(value)

    def _authorize(self, user: str | None, topics: list[str], write: bool) -> None:
        if self._auth is not None and not all(self._auth.allowed(user, t, write) for t in topics):
            raise err(40301)

    def _limit_request(self) -> None:
        with self._cond:
            if self._requests_bucket is not None and not self._requests_bucket.allow():
                raise err(42901)

    def _publish(
        self, rec: RecordedRequest, params: Params, topic: str, user: str | None, body: bytes, path_sid: str = ""
    ) -> Reply:
        """`limitRequestsWithTopic` → `authorizeTopicWrite` → `handlePublishInternal`."""
        if topic in self._disallowed:
            raise err(40010)
        self._limit_request()
        self._authorize(user, [topic], write=True)
        now = self.clock()
        draft = parse_publish_params(params, topic, now, path_sid)
        with self._cond:
            if self._daily_limit is not None:
                if self._daily_count >= self._daily_limit:
                    raise err(42908)
                self._daily_count += 1  # counted before the body is looked at, as in ntfy
        apply_body(draft, body)
        mid = random_id()
        msg = {
            **draft.fields,
            "id": mid,
            "time": draft.time,
            "event": "message",
            "topic": topic,
            "expires": draft.time + CACHE_SECONDS if draft.cache else 0,
        }
        msg["sequence_id"] = msg["sequence_id"] or mid
        return self._store(rec, render_message(msg), draft.cache, now)

    def _event(self, rec: RecordedRequest, topic: str, sid: str, user: str | None, event: str) -> Reply:
        """⚠ 2.16 clear/delete: publishes an event that carries the sequence ID (inferred)."""
        if topic in self._disallowed:
            raise err(40010)
        self._limit_request()
        self._authorize(user, [topic], write=True)
        now = self.clock()
        msg = {
            "id": random_id(),
            "sequence_id": sid,
            "time": int(now),
            "expires": int(now) + CACHE_SECONDS,
            "event": event,
            "topic": topic,
        }
        return self._store(rec, render_message(msg), True, now)

    def _store(self, rec: RecordedRequest, msg: dict[str, Any], cached: bool, now: float) -> Reply:
        with self._cond:
            self._cache.add(
                msg, msg["topic"], msg["time"], msg.get("expires", 0), cached, msg.get("sequence_id", msg["id"]), now
            )
            rec.message_ids.append(msg["id"])
            if self._record:
                self._record.write(go_json(msg))
                self._record.flush()
            self._cond.notify_all()
        return Reply(200, go_json(msg))

    def _subscribe(self, params: Params, topics_str: str, kind: str, user: str | None) -> Reply:
        """`limitRequests` → `authorizeTopicRead` → `handleSubscribe*` (poll=1 or a stream)."""
        self._limit_request()
        topics = [t for t in topics_str.split(",") if t]
        if any(t in self._disallowed for t in topics):
            raise err(40009)  # topicsFromPath turns every topic error into 40009
        self._authorize(user, topics, write=False)
        if kind == "auth":
            return Reply(200, go_json({"success": True}))
        if kind == "ws":
            raise err(40016)  # no WebSocket emulation; a plain GET gets what ntfy answers it
        now = self.clock()
        poll = params.read_bool(False, "x-poll", "poll", "po")
        scheduled = params.read_bool(False, "x-scheduled", "scheduled", "sched")
        since = parse_since(params.read("x-since", "since", "si"), poll, now)
        filters = Filters(
            params.read("x-id", "id"),
            params.read("x-message", "message", "m"),
            params.read("x-title", "title", "t"),
            [t for t in params.read("x-tags", "tags", "tag", "ta").split(",") if t],
            [parse_priority(p) for p in params.read("x-priority", "priority", "prio", "p").split(",") if p],
        )
        encode = _ENCODERS[kind]
        ctype = {"json": "application/x-ndjson", "sse": "text/event-stream", "raw": "text/plain"}[kind]
        with self._cond:
            backlog = self._cache.poll(topics, since, scheduled, now, filters)
            last = self._cache.last_rowid
        if poll:
            return Reply(200, b"".join(encode(r.msg) for r in backlog), ctype + "; charset=utf-8")
        return Reply(
            200, b"", ctype + "; charset=utf-8", stream=self._stream(topics, topics_str, backlog, last, filters, encode)
        )

    def _stream(
        self,
        topics: list[str],
        topics_str: str,
        backlog: list[Row],
        last: int,
        filters: Filters,
        encode: Callable[[Mapping[str, Any]], bytes],
    ) -> Iterator[bytes]:
        """An open subscription: `open`, the backlog, then live messages and keepalives until the
        client goes away or the stand-in stops. (Scheduled messages falling due are not pushed.)"""

        def event(kind: str) -> dict[str, Any]:
            return {"id": random_id(), "time": int(self.clock()), "event": kind, "topic": topics_str}

        def news(seen: int) -> Callable[[], bool]:
            return lambda: self._stopping.is_set() or self._cache.last_rowid > seen

        yield encode(event("open"))
        for row in backlog:
            yield encode(row.msg)
        while not self._stopping.is_set():
            with self._cond:
                woke = self._cond.wait_for(news(last), self._keepalive)
                fresh = self._cache.after(last, topics, self.clock())
                last = self._cache.last_rowid
            if self._stopping.is_set():
                return
            for row in fresh:
                if filters.passes(row.msg):
                    yield encode(row.msg)
            if not woke:
                yield encode(event("keepalive"))

    # -------------------------------------------------------------------------------- control

    def control(self, method: str, action: str, body: bytes, query: dict[str, str]) -> Reply:
        doc = json.loads(body) if body.strip() else {}
        if method == "POST" and action == "fault":
            self.faults.add_from_json(doc)
        elif method == "DELETE" and action == "fault":
            self.faults.clear()
        elif method == "POST" and action == "release":
            return Reply(200, go_json({"released": self.faults.release()}))
        elif method == "POST" and action == "limits":
            kw: dict[str, Any] = {k: (RateLimit(*v) if isinstance(v, list) else v) for k, v in doc.items()}
            self.set_limits(**{k: kw[k] for k in ("request", "daily_messages", "auth_failures") if k in kw})
        elif method == "POST" and action == "reset":
            self.reset()
        elif method == "GET" and action == "requests":
            return Reply(200, go_json([r.to_json() for r in self.requests]))
        elif method == "GET" and action == "messages":
            return Reply(200, go_json(self.messages(query.get("topic"))))
        elif method != "GET" or action != "state":
            return Reply(404, go_json({"error": f"no control action {method} {action}"}))
        with self._cond:
            state = {
                "connections_opened": len(self._used_connections),
                "connections_accepted": self._accepted,
                "requests": len(self._requests),
                "messages": len(self._messages(None)),
                "pending_faults": self.faults.pending,
            }
        return Reply(200, go_json(state))


def _encode_json(m: Mapping[str, Any]) -> bytes:
    return go_json(m)


def _encode_sse(m: Mapping[str, Any]) -> bytes:
    data = b"data: " + go_json(m) + b"\n"
    return data if m["event"] == "message" else f"event: {m['event']}\n".encode() + data


def _encode_raw(m: Mapping[str, Any]) -> bytes:
    return (str(m.get("message", "")).replace("\n", " ") + "\n").encode() if m["event"] == "message" else b"\n"


_ENCODERS: dict[str, Callable[[Mapping[str, Any]], bytes]] = {
    "json": _encode_json,
    "sse": _encode_sse,
    "raw": _encode_raw,
}


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    standin: NtfyStandin


class _Handler(BaseHTTPRequestHandler):
    """One instance per TCP connection; `handle()` loops over its keep-alive requests."""

    protocol_version = "HTTP/1.1"
    # Buffered: head and body leave in one segment when handle_one_request() flushes, as from Go;
    # written separately they meet the client's delayed ACK.
    wbufsize = 256 * 1024
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Go sets TCP_NODELAY on every connection; without it, headers and body in two segments
        # meet the client's delayed ACK and every answer takes ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.conn_id = self.server.standin._connection_opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.standin._connection_closed(self.conn_id)

    def send_response(self, code: int, message: str | None = None) -> None:
        # Go sends no Server header; BaseHTTPRequestHandler would add "BaseHTTP/x Python/y".
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def log_message(self, format: str, *args: Any) -> None:
        pass  # NtfyStandin(verbose=True) logs one line per request instead

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(chunks)[:MAX_BODY]
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY))
        for _ in range(0, length - len(body), 65536):
            self.rfile.read(65536)  # beyond the cap: drained, so keep-alive stays in step
        return body

    def _dispatch(self) -> None:
        standin = self.server.standin
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        split = urllib.parse.urlsplit(self.path)
        path, query = urllib.parse.unquote(split.path), Params.parse_query(split.query)
        if path.startswith(CONTROL):
            try:
                reply = standin.control(self.command, path[len(CONTROL) :], body, query)
            except (ValueError, TypeError) as exc:
                reply = Reply(400, go_json({"error": str(exc)}))
        else:
            reply = standin.handle(self, body, path, query)
        self._write(reply)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _dispatch

    def _write(self, reply: Reply) -> None:
        try:
            if reply.drop:
                self.close_connection = True
                if reply.reset:  # SO_LINGER 0: close() sends RST instead of FIN
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                else:
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(reply.status)
            if reply.content_type:
                self.send_header("Content-Type", reply.content_type)
            self.send_header("Access-Control-Allow-Origin", "*")
            for name, value in reply.headers:
                self.send_header(name, value)
            if reply.stream is not None:
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for chunk in reply.stream:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                return
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(reply.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away mid-answer


# ------------------------------------------------------------------------------------------ CLI


def _pairs(values: list[str], sep: str, n: int, flag: str) -> list[list[str]]:
    out = [v.split(sep, n - 1) for v in values]
    for v, parts in zip(values, out, strict=True):
        if len(parts) != n:
            raise SystemExit(f"{flag} {v!r}: expected {n} parts separated by {sep!r}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m support.ntfy_standin", description=__doc__.split("\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--port-file", help="written (atomically) with the port once listening")
    ap.add_argument("--record-file", help="each accepted message/event is appended as a JSON line")
    ap.add_argument("--user", action="append", default=[], metavar="NAME:PASSWORD")
    ap.add_argument("--admin", action="append", default=[], metavar="NAME:PASSWORD")
    ap.add_argument("--token", action="append", default=[], metavar="TOKEN:NAME")
    ap.add_argument(
        "--access",
        action="append",
        default=[],
        metavar="NAME:TOPIC_PATTERN:PERMISSION",
        help="NAME may be '*' (everyone); PERMISSION read-write|read-only|write-only|deny-all",
    )
    ap.add_argument("--default-access", help="turns auth on; ntfy's default is read-write")
    ap.add_argument("--request-limit", metavar="BURST:SECONDS", help="e.g. 60:5 (ntfy's default); off if unset")
    ap.add_argument("--daily-message-limit", type=int)
    ap.add_argument("--verbose", action="store_true")
    a = ap.parse_args(argv)
    users = {name: password for name, password in _pairs(a.user + a.admin, ":", 2, "--user")}
    access: dict[str, dict[str, str]] = {}
    for name, pattern, perm in _pairs(a.access, ":", 3, "--access"):
        access.setdefault(name, {})[pattern] = perm
    request = None
    if a.request_limit:
        burst, seconds = _pairs([a.request_limit], ":", 2, "--request-limit")[0]
        request = RateLimit(int(burst), float(seconds))
    srv = NtfyStandin(
        a.host,
        a.port,
        users=users,
        admins=tuple(n for n, _ in _pairs(a.admin, ":", 2, "--admin")),
        tokens={t: n for t, n in _pairs(a.token, ":", 2, "--token")},
        access=access,
        default_access=a.default_access,
        request_limit=request,
        daily_message_limit=a.daily_message_limit,
        record_file=a.record_file,
        verbose=a.verbose,
    )
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    srv.start()
    if a.port_file:  # write-then-rename: a reader never sees a half-written port
        tmp = Path(a.port_file + ".tmp")
        tmp.write_text(f"{srv.port}\n")
        tmp.replace(a.port_file)
    print(f"listening {srv.url}", flush=True)
    done.wait()
    srv.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
