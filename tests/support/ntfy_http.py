"""HTTP/1.1 plumbing for the ntfy stand-in: keep-alive connections, answering like Go's net/http,
dropping a connection on purpose, chunked streams, and a stop() that takes effect at once.

The application (`NtfyStandin`) sees each request as an `Incoming` and answers with a `Reply`.
"""

from __future__ import annotations

import selectors
import socket
import struct
import threading
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

from .ntfy_go import go_text
from .ntfy_rules import parse_query

MAX_BODY = 16 * 1024 * 1024  # kept for the record; ntfy itself looks at most at 8 KiB of a publish


@dataclass
class Incoming:
    method: str
    target: str  # as sent, query included
    path: str  # percent-decoded, like Go's r.URL.Path
    query: dict[str, str]
    headers: list[tuple[str, str]]  # arrival order; values decoded as Go would (UTF-8 bytes)
    body: bytes
    connection_id: int


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str | None = "application/json"
    headers: list[tuple[str, str]] = field(default_factory=list)
    stream: Iterator[bytes] | None = None  # a chunked body that ends when the iterator does
    drop: bool = False  # close the connection without any answer
    reset: bool = False  # ... with a TCP RST rather than a FIN
    code: int | None = None  # the ntfy error code, for the record


class App(Protocol):
    def handle(self, req: Incoming) -> Reply: ...


class HttpServer:
    """A ThreadingHTTPServer (one thread per connection) that tracks its connections."""

    def __init__(self, host: str, port: int, app: App) -> None:
        self.app = app
        self.accepted = 0  # TCP connections accepted so far
        self._lock = threading.Lock()
        self._sockets: dict[int, socket.socket] = {}
        self._ids = iter(range(1, 2**62))
        self._stopping = threading.Event()
        self._server = _Server((host, port), _Handler)
        self._server.owner = self
        self._wake_r, self._wake_w = socket.socketpair()
        self._thread = threading.Thread(target=self._accept_loop, name="ntfy-standin", daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> None:
        self._thread.start()

    def _accept_loop(self) -> None:
        # Rather than serve_forever(), which sees shutdown() only at its next poll tick: wait on the
        # listening socket and a wake-up socket, so nothing polls and stop() acts at once.
        self._server.timeout = 0  # handle_request() below never waits: the socket is ready
        with selectors.DefaultSelector() as sel:
            sel.register(self._server.socket, selectors.EVENT_READ)
            sel.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopping.is_set():
                for key, _ in sel.select():
                    if key.fileobj is self._server.socket and not self._stopping.is_set():
                        self._server.handle_request()

    def stop(self) -> None:
        if self._stopping.is_set():
            return  # stop() twice is harmless
        self._stopping.set()
        self._wake_w.send(b"x")
        if self._thread.is_alive():
            self._thread.join(5)
        with self._lock:
            sockets = list(self._sockets.values())
        for sock in sockets:  # an idle keep-alive connection would keep its thread waiting
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._server.server_close()
        self._wake_r.close()
        self._wake_w.close()

    def opened(self, sock: socket.socket) -> int:
        with self._lock:
            conn_id = next(self._ids)
            self._sockets[conn_id] = sock
            self.accepted += 1
            return conn_id

    def closed(self, conn_id: int) -> None:
        with self._lock:
            self._sockets.pop(conn_id, None)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: HttpServer


class _Handler(BaseHTTPRequestHandler):
    """One instance per TCP connection; `handle()` loops over its keep-alive requests."""

    protocol_version = "HTTP/1.1"
    # Buffered, so the head and a body leave in one segment (as from Go); in two, the second waits
    # for the client's delayed ACK and every answer takes ~40 ms.
    wbufsize = 256 * 1024
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as Go does
        self.conn_id = self.server.owner.opened(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner.closed(self.conn_id)

    def send_response(self, code: int, message: str | None = None) -> None:
        # Go sends no Server header; BaseHTTPRequestHandler would add "BaseHTTP/0.6 Python/3.x".
        self.log_request(code)
        self.send_response_only(code, message)
        self.send_header("Date", self.date_time_string())

    def log_message(self, format: str, *args: Any) -> None:
        pass  # NtfyStandin(verbose=True) logs one line per request instead

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while size := int(self.rfile.readline(1024).split(b";")[0].strip() or b"0", 16):
                chunks.append(self.rfile.read(size))
                self.rfile.readline(3)
            while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass  # trailers
            return b"".join(chunks)[:MAX_BODY]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(min(length, MAX_BODY))
        for _ in range(0, length - len(body), 65536):
            self.rfile.read(65536)  # beyond the cap: drained, so the next request still parses
        return body

    def _dispatch(self) -> None:
        try:
            body = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            return
        split = urllib.parse.urlsplit(self.path)
        # http.server decodes header bytes as Latin-1; Go keeps the bytes (UTF-8 in practice).
        headers = [(k, go_text(v.encode("latin-1", "replace"))) for k, v in self.headers.items()]
        incoming = Incoming(
            self.command,
            self.path,
            urllib.parse.unquote(split.path),
            parse_query(split.query),
            headers,
            body,
            self.conn_id,
        )
        self._write(self.server.owner.app.handle(incoming))

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
            else:
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(reply.body)
            self.wfile.flush()
        except OSError:
            self.close_connection = True  # the client went away mid-answer
