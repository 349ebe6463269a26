"""A scripted HTTP server for fake model APIs: `fake_responses` (Codex) and `fake_messages` (Claude).

A stdlib ThreadingHTTPServer on 127.0.0.1 that records every request and answers each one with
the next step of a per-route script; subclasses say how a request is routed and how a step is
rendered (SSE events, via `sse`).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

JSON = dict[str, Any]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake saw it; `route` says which script answered it."""

    n: int
    t: float
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: Any  # parsed JSON, or None when there was no (JSON) body
    route: str
    step: str = ""  # repr of the step served ("" for HEAD / unrouted)


class Step:
    """Base of every scripted answer."""


@dataclass(frozen=True)
class HttpError(Step):
    """Answer with a plain HTTP error status and a JSON body (no SSE)."""

    status: int = 500
    body: JSON = field(default_factory=lambda: {"error": {"message": "fake server error", "type": "server_error"}})
    headers: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Stall(Step):
    """Send 200 and hold the stream open until `release_stalls()` (or stop), then serve `then`.

    Used to catch a turn mid-request, e.g. to SIGINT it. With `then=None` the connection is
    simply closed on release. `then` must be a streamed step: the 200 status is already sent.
    """

    then: Step | None = None


# A script entry is a fixed step, or a function of the request (e.g. to echo ids it carries).
StepSource = Step | Callable[[RecordedRequest], Step]
Fallback = StepSource | None | Mapping[str, StepSource]
Script = Mapping[str, Sequence[StepSource]]


class ScriptedServer:
    """Threaded HTTP server answering each request with the next step of its route's script.

    Subclasses define `route()` (which script a request belongs to) and `render()` (how a step
    becomes bytes on the wire). When a route's script is exhausted, `fallback` answers and the
    request is also listed in `unscripted`, so tests can assert nothing unexpected happened.
    """

    def __init__(
        self,
        script: Script | None = None,
        *,
        fallback: Fallback,
        router: Callable[[RecordedRequest], str] | None = None,
    ) -> None:
        self._queues: dict[str, list[StepSource]] = {k: list(v) for k, v in (script or {}).items()}
        self._fallback = fallback
        self._router = router
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self.unscripted: list[RecordedRequest] = []
        self._counter = itertools.count(1)
        self._ids = itertools.count(1)
        self._stalled = threading.Condition(self._lock)
        self._stall_requests: list[RecordedRequest] = []
        self._held: list[threading.Event] = []  # one per stalled request still held
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- lifecycle -------------------------------------------------------------------------
    def start(self) -> Self:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            # HTTP/1.0: one request per connection and the SSE body ends at close, which both
            # reqwest (Codex) and Bun (Claude) accept; no chunked encoding needed.
            protocol_version = "HTTP/1.0"

            def do_POST(self) -> None:
                outer._handle(self)

            def do_GET(self) -> None:
                outer._handle(self)

            def do_HEAD(self) -> None:
                outer._handle(self)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean; every request is in `requests` anyway

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # let stalled handlers finish so their threads end
        self.release_stalls()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """Base URL without a path, e.g. http://127.0.0.1:41234."""
        return f"http://127.0.0.1:{self.port}"

    # ---- scripting and inspection ----------------------------------------------------------
    def add(self, route: str, *steps: StepSource) -> None:
        """Append steps to a route's script (also while the agent runs)."""
        with self._lock:
            self._queues.setdefault(route, []).extend(steps)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    def requests_for(self, route: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.route == route]

    def remaining(self, route: str) -> int:
        with self._lock:
            return len(self._queues.get(route, []))

    def wait_for_stall(self, count: int = 1, timeout: float = 30.0) -> RecordedRequest:
        """Block until `count` requests have hit a `Stall` step; return the count-th one."""
        with self._stalled:
            if not self._stalled.wait_for(lambda: len(self._stall_requests) >= count, timeout):
                raise TimeoutError(f"no stalled request #{count} within {timeout}s; saw {len(self._requests)} requests")
            return self._stall_requests[count - 1]

    def release_stalls(self) -> None:
        """Let every request held right now continue; later `Stall` steps hold again."""
        with self._lock:
            held, self._held = self._held, []
        for ev in held:
            ev.set()

    def wait_for_requests(self, count: int, route: str | None = None, timeout: float = 30.0) -> list[RecordedRequest]:
        """Poll until at least `count` requests (of `route`, if given) were seen."""
        deadline = time.monotonic() + timeout
        while True:
            got = self.requests if route is None else self.requests_for(route)
            if len(got) >= count:
                return got
            if time.monotonic() > deadline:
                raise TimeoutError(f"saw {len(got)} of {count} requests (route={route}) in {timeout}s")
            time.sleep(0.02)

    def next_id(self, prefix: str) -> str:
        return f"{prefix}_fake_{next(self._ids)}"

    # ---- subclass hooks --------------------------------------------------------------------
    def route(self, req: RecordedRequest) -> str:
        return "root"

    def events(self, req: RecordedRequest, step: Step) -> Iterable[bytes]:
        """The SSE chunks for a streamed step (the 200 headers are already sent)."""
        raise NotImplementedError

    def stream_headers(self, req: RecordedRequest) -> dict[str, str]:
        """Extra headers of a streamed (200) answer."""
        return {}

    def answer_unrouted(self, h: BaseHTTPRequestHandler, req: RecordedRequest) -> bool:
        """Answer probes such as `HEAD /` directly; return True when handled."""
        return False

    # ---- request handling ------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        raw = _read_body(h)
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        req = RecordedRequest(
            n=0,
            t=time.time(),
            method=h.command,
            path=h.path,
            headers={k.lower(): v for k, v in h.headers.items()},
            body=body,
            route="",
        )
        if self.answer_unrouted(h, req):
            self._record(req)
            return
        req = replace(req, route=self._router(req) if self._router else self.route(req))
        with self._lock:
            queue = self._queues.get(req.route, [])
            source = queue.pop(0) if queue else None
        scripted = source is not None
        if source is None:
            fb = self._fallback
            source = fb.get(req.route, fb.get("*")) if isinstance(fb, Mapping) else fb
        step = source if isinstance(source, Step) or source is None else source(req)
        if step is None:
            step = HttpError(599, {"error": {"message": f"nothing scripted for route {req.route!r}"}})
        req = self._record(replace(req, step=repr(step)), unscripted=not scripted)
        try:
            self._serve(h, req, step)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the agent went away mid-stream (SIGINT, timeout): nothing left to answer

    def _record(self, req: RecordedRequest, unscripted: bool = False) -> RecordedRequest:
        with self._lock:
            req = replace(req, n=next(self._counter))
            self._requests.append(req)
            if unscripted:
                self.unscripted.append(req)
        return req

    def _serve(self, h: BaseHTTPRequestHandler, req: RecordedRequest, step: Step) -> None:
        if isinstance(step, HttpError):
            data = json.dumps(step.body).encode()
            h.send_response(step.status)
            h.send_header("Content-Type", "application/json")
            for k, v in step.headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(data)))
            h.end_headers()
            h.wfile.write(data)
            return
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        for k, v in self.stream_headers(req).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.flush()
        if isinstance(step, Stall):
            held = threading.Event()
            with self._stalled:
                if self._stopping.is_set():
                    return
                self._held.append(held)
                self._stall_requests.append(req)
                self._stalled.notify_all()
            held.wait()
            if self._stopping.is_set():
                return
            if step.then is None:
                return
            step = step.then
        for chunk in self.events(req, step):
            h.wfile.write(chunk)
            h.wfile.flush()


def _read_body(h: BaseHTTPRequestHandler) -> bytes:
    if h.headers.get("Transfer-Encoding", "").lower() == "chunked":
        out = b""
        while (size := int(h.rfile.readline().strip() or b"0", 16)) > 0:
            out += h.rfile.read(size)
            h.rfile.readline()
        h.rfile.readline()
        return out
    return h.rfile.read(int(h.headers.get("Content-Length") or 0))


def sse(event: str, data: JSON) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()
