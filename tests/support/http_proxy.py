"""A small real forward proxy on 127.0.0.1 that records what it was asked to carry.

Plain ``http://`` requests arrive in absolute form (``POST http://host:port/path``) with every
header the client sent, ``Authorization`` included: that is what a proxy hop sees in clear text.
``https://`` requests arrive as ``CONNECT host:port`` and are tunnelled byte for byte. Whatever the
host name, the proxy connects to 127.0.0.1 at the requested port, so a test can name a server
``ntfy.example.test`` (not loopback: the client's policy must decide about the proxy) and still
reach a local stand-in.
"""

from __future__ import annotations

import http.client
import select
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from urllib.parse import urlsplit


@dataclass
class ProxiedRequest:
    method: str
    target: str  # the absolute URL, or host:port for CONNECT
    headers: dict[str, str] = field(default_factory=dict)


class HttpProxy:
    """``with HttpProxy() as proxy:`` -> ``proxy.url``; ``proxy.requests`` lists what it carried."""

    def __init__(self) -> None:
        self.requests: list[ProxiedRequest] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                pass

            def _forward(self) -> None:
                owner.requests.append(ProxiedRequest(self.command, self.path, dict(self.headers.items())))
                parts = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                conn = http.client.HTTPConnection("127.0.0.1", parts.port or 80, timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "connection")}
                conn.request(self.command, parts.path or "/", body=body, headers=headers)
                answer = conn.getresponse()
                data = answer.read()
                self.send_response(answer.status)
                for key, value in answer.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = _forward

            def do_CONNECT(self) -> None:
                owner.requests.append(ProxiedRequest("CONNECT", self.path, dict(self.headers.items())))
                port = int(self.path.rpartition(":")[2])
                upstream = socket.create_connection(("127.0.0.1", port), timeout=10)
                self.send_response(200, "Connection established")
                self.end_headers()
                sockets = [self.connection, upstream]
                try:
                    while True:
                        readable, _, _ = select.select(sockets, [], [], 10)
                        if not readable:
                            return
                        for sock in readable:
                            chunk = sock.recv(65536)
                            if not chunk:
                                return
                            (upstream if sock is self.connection else self.connection).sendall(chunk)
                except OSError:
                    return
                finally:
                    upstream.close()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> HttpProxy:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self._server.shutdown()
        self._server.server_close()
