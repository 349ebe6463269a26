"""What ntfy does with one request: `handle` → `handleInternal` of server.go (v2.13), in its order.

`NtfyCore` holds the server state (cache, limits, users) under one condition variable and turns
a recorded request into a `Reply`. The test-facing shell, with faults, is `ntfy_standin`.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from .ntfy_actions import Panic
from .ntfy_errors import NtfyError, err
from .ntfy_go import go_json, go_text, go_trim, random_id
from .ntfy_http import Reply
from .ntfy_rules import (
    CACHE_SECONDS,
    NAME,
    Params,
    apply_body,
    decode_publish_json,
    json_overrides,
    parse_priority,
    parse_publish_params,
    render_message,
)
from .ntfy_state import Auth, Cache, Filters, RateLimit, RecordedRequest, Row, TokenBucket
from .ntfy_times import parse_since

PUBLISH_PATH = re.compile(rf"^/({NAME})$")
PUBLISH_GET_PATH = re.compile(rf"^/({NAME})/(publish|send|trigger)$")  # a webhook: params in the query
SUBSCRIBE_PATH = re.compile(rf"^/({NAME}(?:,{NAME})*)/(json|sse|raw|ws|auth)$")
SEQUENCE_PATH = re.compile(rf"^/({NAME})/({NAME})$")  # ⚠ 2.16
CLEAR_PATH = re.compile(rf"^/({NAME})/({NAME})/clear$")  # ⚠ 2.16
_CORS_OPTIONS = [
    ("Access-Control-Allow-Methods", "GET, PUT, POST, PATCH, DELETE"),
    ("Access-Control-Allow-Headers", "*"),
]


def _encode_sse(m: Mapping[str, Any]) -> bytes:
    data = b"data: " + go_json(m) + b"\n"
    return data if m["event"] == "message" else f"event: {m['event']}\n".encode() + data


def _encode_raw(m: Mapping[str, Any]) -> bytes:
    return (str(m.get("message", "")).replace("\n", " ") + "\n").encode() if m["event"] == "message" else b"\n"


# subscribe kind: (Content-Type, how one message is written)
_FORMATS: dict[str, tuple[str, Callable[[Mapping[str, Any]], bytes]]] = {
    "json": ("application/x-ndjson; charset=utf-8", go_json),
    "sse": ("text/event-stream; charset=utf-8", _encode_sse),
    "raw": ("text/plain; charset=utf-8", _encode_raw),
}


class NtfyCore:
    def __init__(
        self,
        auth: Auth | None,
        disallowed_topics: tuple[str, ...],
        keepalive_seconds: float,
        clock: Callable[[], float],
    ) -> None:
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._auth, self._disallowed, self._keepalive, self.clock = auth, disallowed_topics, keepalive_seconds, clock
        self._requests: list[RecordedRequest] = []
        self._cache = Cache()
        self._requests_bucket: TokenBucket | None = None
        self._daily_limit: int | None = None
        self._daily_count = 0
        self._record: BinaryIO | None = None  # the subprocess mode's --record-file

    def _open_record(self, path: Path | None) -> None:
        self._record = path.open("ab") if path else None

    def _messages(self, topic: str | None) -> list[dict[str, Any]]:
        return [dict(r.msg) for r in self._cache.rows if r.msg["event"] == "message" and topic in (None, r.topic)]

    def _serve(self, rec: RecordedRequest) -> Reply:
        try:
            return self._route(rec)
        except NtfyError as e:
            return Reply(e.status, e.body(), code=e.code)
        except Panic:
            return Reply(0, drop=True)  # net/http recovers a handler panic by closing the connection

    def _route(self, rec: RecordedRequest) -> Reply:
        headers: dict[str, str] = {}
        for name, value in rec.headers:  # Go's Header.Get: the first value
            headers.setdefault(name.lower(), value)
        params = Params(headers, rec.query)
        user = self._authenticate(params)  # before routing: a bad credential is 401 on any path
        m, path = rec.method, rec.path
        if m == "GET" and path == "/v1/health":
            return Reply(200, go_json({"healthy": True}))
        if m == "OPTIONS":
            self._limit_request()
            return Reply(200, b"", None, list(_CORS_OPTIONS))
        if m in ("PUT", "POST") and path == "/":
            fields = decode_publish_json(rec.body)
            params.headers.update(json_overrides(fields))  # the JSON becomes X-* headers and the body
            return self._publish(rec, params, fields["topic"], user, (fields.get("message") or "triggered").encode())
        if m in ("PUT", "POST") and (match := PUBLISH_PATH.match(path)):
            return self._publish(rec, params, match[1], user, rec.body)
        if m == "GET" and (match := PUBLISH_GET_PATH.match(path)):
            return self._publish(rec, params, match[1], user, b"")
        if m == "GET" and (match := SUBSCRIBE_PATH.match(path)):
            return self._subscribe(params, match[1], match[2], user)
        if m in ("PUT", "POST") and (match := SEQUENCE_PATH.match(path)):
            return self._publish(rec, params, match[1], user, rec.body, match[2])
        if m == "PUT" and (match := CLEAR_PATH.match(path)):
            return self._event(rec, match[1], match[2], user, "message_clear")
        if m == "DELETE" and (match := SEQUENCE_PATH.match(path)):
            return self._event(rec, match[1], match[2], user, "message_delete")
        raise err(40401)  # also the web app, accounts, stats, metrics: all off here

    def _authenticate(self, params: Params) -> str | None:
        """`maybeAuthenticate`: the user, None for anonymous; 401 40101, 429 42909 or 500."""
        if self._auth is None:
            return None
        value = go_trim(params.headers.get("authorization", ""))
        query = params.query.get("authorization") or params.query.get("auth")
        if query:  # base64 RawURL of the header value, for clients that cannot set headers
            try:
                if "=" in query:
                    raise ValueError("RawURLEncoding has no padding")
                raw = base64.b64decode(query + "=" * (-len(query) % 4), b"-_", validate=True)
            except (binascii.Error, ValueError):
                raise err(50001) from None  # a plain error in ntfy, not an errHTTP: hence 500
            value = go_trim(go_text(raw))
        with self._cond:
            return self._auth.identify(value)

    def _authorize(self, user: str | None, topics: list[str], write: bool) -> None:
        if self._auth is not None and not all(self._auth.allowed(user, t, write) for t in topics):
            raise err(40301)

    def _limit_request(self) -> None:
        with self._cond:
            if self._requests_bucket is not None and not self._requests_bucket.allow():
                raise err(42901)

    def _limit_topic_request(self, user: str | None, topic: str) -> None:
        """`limitRequestsWithTopic` → `authorizeTopicWrite`."""
        if topic in self._disallowed:
            raise err(40010)
        self._limit_request()
        self._authorize(user, [topic], write=True)

    def _publish(
        self, rec: RecordedRequest, params: Params, topic: str, user: str | None, body: bytes, path_sid: str = ""
    ) -> Reply:
        """`handlePublishInternal`: parameters, the daily quota, then the body."""
        self._limit_topic_request(user, topic)
        now = self.clock()
        draft = parse_publish_params(params, now, path_sid)
        with self._cond:
            if self._daily_limit is not None:
                if self._daily_count >= self._daily_limit:
                    raise err(42908)
                self._daily_count += 1  # counted before the body is looked at, as in ntfy
        apply_body(draft, body)
        mid = random_id()
        expires = draft.time + CACHE_SECONDS if draft.cache else 0  # Cache: no has no expiry
        msg = {**draft.fields, "id": mid, "time": draft.time, "event": "message", "topic": topic, "expires": expires}
        msg["sequence_id"] = msg["sequence_id"] or mid
        return self._store(rec, render_message(msg), draft.cache, now)

    def _event(self, rec: RecordedRequest, topic: str, sid: str, user: str | None, event: str) -> Reply:
        """⚠ 2.16 clear/delete (inferred): an event carrying the sequence ID, kept in the cache."""
        self._limit_topic_request(user, topic)
        now = self.clock()
        msg = {"id": random_id(), "sequence_id": sid, "time": int(now), "event": event, "topic": topic}
        msg["expires"] = int(now) + CACHE_SECONDS
        return self._store(rec, render_message(msg), True, now)

    def _store(self, rec: RecordedRequest, msg: dict[str, Any], cached: bool, now: float) -> Reply:
        with self._cond:
            sid = msg.get("sequence_id", msg["id"])
            self._cache.add(msg, msg["topic"], msg["time"], msg.get("expires", 0), cached, sid, now)
            rec.message_ids.append(msg["id"])
            if self._record:
                self._record.write(go_json(msg))
                self._record.flush()
            self._cond.notify_all()
        return Reply(200, go_json(msg))

    def _subscribe(self, params: Params, topics_str: str, kind: str, user: str | None) -> Reply:
        """`limitRequests` → `authorizeTopicRead` → `handleSubscribeHTTP` (poll=1, or a stream)."""
        self._limit_request()
        topics = [t for t in topics_str.split(",") if t]
        if any(t in self._disallowed for t in topics):
            raise err(40009)  # topicsFromPath turns every topic error into 40009
        self._authorize(user, topics, write=False)
        if kind == "auth":
            return Reply(200, go_json({"success": True}))
        if kind == "ws":
            raise err(40016)  # no WebSocket emulation: answered as a plain GET without Upgrade
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
        ctype, encode = _FORMATS[kind]
        with self._cond:
            backlog = self._cache.poll(topics, since, scheduled, now, filters)
            last = self._cache.last_rowid
        if poll:
            return Reply(200, b"".join(encode(r.msg) for r in backlog), ctype)
        return Reply(200, b"", ctype, stream=self._stream(topics, topics_str, backlog, last, filters, encode))

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

    def _set_request_limit(self, limit: RateLimit | None) -> None:
        self._requests_bucket = TokenBucket(limit, self.clock) if limit else None
