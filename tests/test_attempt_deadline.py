"""The attempt deadline cuts a blocked attempt at its own deadline, however many attempts came before.

The watchdog is woken only when an attempt's deadline is earlier than the time it already means
to wake up at (``attempt_deadline.py``): these tests block a real socket read and check that
both paths, the woken one and the one left asleep, still shut the socket down on time.
"""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest
from donebell.workers.delivery.attempt_deadline import AttemptDeadline


class _Stream:
    """What httpx's trace hook hands over for a new connection: something with its socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock

    def get_extra_info(self, name: str) -> Any:
        return self.sock if name == "socket" else None


def _blocked_read(deadline: AttemptDeadline, sock: socket.socket, seconds: float) -> tuple[bytes, float]:
    started = time.monotonic()
    with deadline.armed(seconds):
        data = sock.recv(1)  # nothing is ever sent: only the watchdog's shutdown ends this read
    return data, time.monotonic() - started


@pytest.mark.parametrize(
    ("earlier", "blocked"),
    [
        (5.0, 0.3),  # the blocked attempt's deadline is earlier than the watchdog's wake-up: it is woken
        (0.3, 0.3),  # it is later: the watchdog, asleep until the earlier deadline, is not woken
    ],
)
def test_a_blocked_attempt_is_cut_at_its_deadline_after_many_quick_ones(earlier: float, blocked: float) -> None:
    ours, peer = socket.socketpair()
    try:
        deadline = AttemptDeadline()
        deadline.trace("connection.connect_tcp.complete", {"return_value": _Stream(ours)})
        for _ in range(200):  # a backlog's quick attempts, each answered well within its deadline
            with deadline.armed(earlier):
                pass
        with deadline.armed(earlier):
            time.sleep(0.1)  # long enough for the watchdog to be asleep until this deadline
        assert not deadline.fired
        data, took = _blocked_read(deadline, ours, blocked)
        assert data == b"" and deadline.fired, "the blocked read ended without the deadline"
        assert blocked * 0.9 <= took < blocked + 1.5, f"cut after {took:.2f}s, deadline {blocked}s"
    finally:
        ours.close()
        peer.close()


def test_an_attempt_that_ends_in_time_is_not_cut_later() -> None:
    ours, peer = socket.socketpair()
    try:
        deadline = AttemptDeadline()
        deadline.trace("connection.connect_tcp.complete", {"return_value": _Stream(ours)})
        with deadline.armed(0.2):
            pass
        time.sleep(0.5)  # past that attempt's deadline: disarmed, so nothing may fire
        assert not deadline.fired
        peer.sendall(b"x")
        assert ours.recv(1) == b"x", "the socket was shut down after its attempt had ended"
    finally:
        ours.close()
        peer.close()
