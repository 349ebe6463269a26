"""Start a Codex turn through the managed app-server daemon, when its control socket exists.

The daemon (``codex app-server daemon start``) listens on
``$CODEX_HOME/app-server-control/app-server-control.sock``, a Unix socket speaking JSON-RPC 2.0
over WebSocket. One short connection per wake: ``initialize`` / ``initialized``, ``thread/read``
(``status.type``: ``notLoaded`` | ``idle`` | ``active`` | ``systemError``), ``thread/resume``
when the thread is not loaded, then ``turn/start`` with the configured prompt. A ``turn/start``
answered with a turn id is *accepted*: never requested again. Every request the daemon sends us
(approvals included) is declined: the wake role has no authority to approve anything.

The WebSocket client is the few frames this needs (RFC 6455: masked text frames out, text /
ping / close in), on the standard library, rather than a dependency for one short exchange.
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from typing import Any

from donebell.workers.agents.codex import codex_home_str
from donebell.workers.kit.thread_view import DaemonError

TIMEOUT = 10.0
FRAME_MAX = 16 << 20


class AppServerError(DaemonError):
    """The daemon could not be asked, or refused (``accepted`` says whether a turn may be running;
    ``unreachable``: a stale socket, nothing was asked, ``codex exec resume`` may go)."""


def control_socket() -> str | None:
    path = os.path.join(codex_home_str(), "app-server-control", "app-server-control.sock")
    return path if os.path.exists(path) else None


class _Connection:
    def __init__(self, path: str, timeout: float) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        # The socket is a symlink into a short /tmp path; a long CODEX_HOME would exceed sun_path.
        self.sock.connect(os.path.realpath(path))
        self.buffer = b""
        self.next_id = 0
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        self.sock.sendall(
            (
                "GET / HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ).encode("ascii")
        )
        head = self._until(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise AppServerError(f"no WebSocket upgrade: {head[:60]!r}")

    def _until(self, marker: bytes) -> bytes:
        while marker not in self.buffer:
            self._fill()
        head, _, self.buffer = self.buffer.partition(marker)
        return head

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise AppServerError("the daemon closed the connection")
        self.buffer += chunk

    def _take(self, n: int) -> bytes:
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode])
        if n < 126:
            head += bytes([0x80 | n])
        elif n < 1 << 16:
            head += bytes([0x80 | 126]) + struct.pack("!H", n)
        else:
            head += bytes([0x80 | 127]) + struct.pack("!Q", n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def _recv_text(self) -> bytes:
        message = b""
        while True:
            b0, b1 = self._take(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._take(2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._take(8))[0]
            if n > FRAME_MAX:
                raise AppServerError("frame too large")
            mask = self._take(4) if b1 & 0x80 else b""
            data = self._take(n)
            if mask:
                data = bytes(b ^ mask[i % 4] for i, b in enumerate(data))
            opcode = b0 & 0x0F
            if opcode == 0x9:
                self._send_frame(0xA, data)
            elif opcode == 0x8:
                raise AppServerError("the daemon closed the WebSocket")
            elif opcode in (0x0, 0x1, 0x2):
                message += data
                if b0 & 0x80:
                    return message

    def send(self, obj: dict[str, Any]) -> None:
        self._send_frame(0x1, json.dumps(obj).encode("utf-8"))

    def post(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; its id."""
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def answer(self, rid: int, method: str) -> dict[str, Any]:
        """The result of request ``rid``; every request the daemon makes meanwhile is declined."""
        while True:
            msg = json.loads(self._recv_text())
            if not isinstance(msg, dict):
                continue
            if "method" in msg and "id" in msg:
                error = {"code": -32601, "message": "donebell's wake role approves nothing"}
                self.send({"jsonrpc": "2.0", "id": msg["id"], "error": error})
            elif msg.get("id") == rid:
                if "error" in msg:
                    raise AppServerError(f"{method}: {msg['error'].get('message', msg['error'])}")
                result = msg.get("result")
                return result if isinstance(result, dict) else {}

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        return self.answer(self.post(method, params), method)

    def close(self) -> None:
        try:
            self._send_frame(0x8, b"")
        except OSError:
            pass
        self.sock.close()


def thread_status(conn: _Connection, thread_id: str) -> str:
    result = conn.request("thread/read", {"threadId": thread_id})
    status = (result.get("thread") or {}).get("status") or {}
    return str(status.get("type") if isinstance(status, dict) else status)


def _open(path: str, timeout: float) -> _Connection:
    """A connection past ``initialize`` / ``initialized``; ``unreachable`` when nothing listens."""
    try:
        conn = _Connection(path, timeout)
    except OSError as exc:
        raise AppServerError(f"cannot connect: {exc.strerror or exc}", unreachable=True) from None
    try:
        conn.request("initialize", {"clientInfo": {"name": "donebell-wake", "version": "1"}})
        conn.send({"jsonrpc": "2.0", "method": "initialized"})
    except (OSError, ValueError, AppServerError) as exc:
        conn.close()
        raise AppServerError(f"initialize: {exc}") from None
    return conn


def start_turn(path: str, thread_id: str, prompt: str, timeout: float = TIMEOUT) -> str:
    """Start one turn; its id. :class:`AppServerError` (``accepted`` False) if none was started,
    ``busy: …`` in the message when the thread is running a turn."""
    conn = _open(path, timeout)
    try:
        status = thread_status(conn, thread_id)
        if status == "active":
            raise AppServerError("busy: the thread is in a turn")
        if status == "systemError":
            raise AppServerError("the thread is in an error state")
        if status == "notLoaded":
            conn.request("thread/resume", {"threadId": thread_id})
        rid = conn.post("turn/start", {"threadId": thread_id, "input": [{"type": "text", "text": prompt}]})
        try:
            result = conn.answer(rid, "turn/start")
        except (OSError, ValueError) as exc:
            # turn/start went out: the daemon may have accepted it. Never ask again.
            raise AppServerError(f"turn/start unanswered: {exc}", accepted=True) from None
        return str((result.get("turn") or {}).get("id") or "")
    except (OSError, ValueError) as exc:
        raise AppServerError(f"{type(exc).__name__}: {exc}") from None
    finally:
        conn.close()
