"""systemd notify protocol over a real AF_UNIX datagram socket: READY=1, WATCHDOG=1, STOPPING=1."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from donebell.supervisor.sdnotify import Notifier
from support.supervisor_proc import Harness, harness
from support.waiting import wait_for


@pytest.fixture()
def listener(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    path = str(tmp_path / "notify.sock")
    sock.bind(path)
    sock.settimeout(0.1)
    yield sock, path
    sock.close()


def _drain(sock: socket.socket) -> list[str]:
    out = []
    while True:
        try:
            out.append(sock.recv(4096).decode())
        except (TimeoutError, BlockingIOError):
            return out


def test_notifier_sends_datagrams_to_a_path_socket(listener: tuple[socket.socket, str]) -> None:
    """READY=1 (with STATUS), WATCHDOG=1 and STOPPING=1 arrive as separate datagrams."""
    sock, path = listener
    n = Notifier({"NOTIFY_SOCKET": path})
    assert n.ready("up") and n.watchdog() and n.stopping()
    assert _drain(sock) == ["READY=1\nSTATUS=up", "WATCHDOG=1", "STOPPING=1"]


def test_notifier_reaches_an_abstract_socket() -> None:
    """A NOTIFY_SOCKET starting with '@' names a Linux abstract socket."""
    name = f"donebell-test-{os.getpid()}-{time.monotonic_ns()}"
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind("\0" + name)
    sock.settimeout(1)
    try:
        assert Notifier({"NOTIFY_SOCKET": "@" + name}).ready()
        assert sock.recv(100) == b"READY=1"
    finally:
        sock.close()


def test_without_notify_socket_nothing_is_sent_and_nothing_fails() -> None:
    """No NOTIFY_SOCKET: every call is a harmless no-op; a vanished socket is not an error."""
    assert not Notifier({}).ready()
    assert not Notifier({"NOTIFY_SOCKET": "/nonexistent/socket"}).watchdog()


def test_watchdog_interval_is_half_of_watchdog_usec_for_this_pid() -> None:
    """WATCHDOG_USEC=4s gives a 2 s ping interval; a WATCHDOG_PID of another process disables it."""
    assert Notifier({"WATCHDOG_USEC": "4000000"}).watchdog_interval == 2.0
    assert Notifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": str(os.getpid())}).watchdog_interval == 2.0
    assert Notifier({"WATCHDOG_USEC": "4000000", "WATCHDOG_PID": "1"}).watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "junk"}).watchdog_interval is None


@pytest.fixture()
def h(isolated_env: dict[str, Path], tmp_path: Path) -> Iterator[Harness]:
    with harness(isolated_env, tmp_path) as h:
        yield h


def test_supervisor_sends_ready_after_roles_settle_then_watchdog_then_stopping(
    h: Harness, listener: tuple[socket.socket, str]
) -> None:
    """Under a notify socket the supervisor says READY=1 only once its roles settled, pings at half
    WATCHDOG_USEC while running, and says STOPPING=1 on SIGTERM."""
    sock, path = listener
    sup = h.start(
        DONEBELL_SUPERVISOR_ROLES="maintenance",
        DONEBELL_SUPERVISOR_HEARTBEAT="5",
        NOTIFY_SOCKET=path,
        WATCHDOG_USEC="600000",
    )
    got: list[str] = []

    def ready() -> bool:
        got.extend(_drain(sock))
        return any(m.startswith("READY=1") for m in got)

    wait_for(ready, what="READY=1")
    assert h.working_pid("maintenance")
    sj = h.supervisor_json()
    first_pass_at = h.health("maintenance")["last_success"]  # maintenance passes every 30 s: the first
    assert sj["ready_at"] >= first_pass_at, "READY=1 came before the role reported its first pass"
    assert sj["systemd_notify"] is True and sj["watchdog_seconds"] == pytest.approx(0.3)
    time.sleep(1.5)  # a window of time to count the pings in, not a wait for one event
    got.extend(_drain(sock))
    pings = got.count("WATCHDOG=1")
    assert 3 <= pings <= 12, got  # every 0.3 s, from start-up on
    assert sum(m.startswith("READY=1") for m in got) == 1
    sup.send_signal(signal.SIGTERM)
    assert sup.wait(10) == 0
    assert "STOPPING=1" in _drain(sock)
