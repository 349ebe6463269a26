"""The ntfy stand-in's injected faults: error answers, redirects, drops, delays and hangs."""

from __future__ import annotations

import threading

import httpx
import pytest
from support.ntfy_kit import assert_error
from support.ntfy_standin import NtfyStandin

# ------------------------------------------------------------------------------------- faults


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (500, None, 50001),
        (502, None, 50201),
        (401, 40101, 40101),
        (403, None, 40301),
        (408, None, 40801),
        (409, None, 40901),
        (425, None, 42501),
        (429, 42901, 42901),
        (429, 42908, 42908),
        (400, 40024, 40024),
        (404, None, 40401),
    ],
)
def test_injected_error_then_recovery(
    srv: NtfyStandin, client: httpx.Client, status: int, code: int | None, expected: int
) -> None:
    """An injected status + ntfy code answers the next publish only, with ntfy's error JSON and no message stored."""
    srv.faults.fail(status, code)
    assert_error(client.post("/", json={"topic": "t", "message": "m"}), status, expected)
    assert srv.messages() == [] and srv.requests[0].fault == "fail"
    assert client.post("/", json={"topic": "t", "message": "m"}).status_code == 200
    assert len(srv.messages("t")) == 1


def test_fail_count_and_store_flag(srv: NtfyStandin, client: httpx.Client) -> None:
    """`count` queues several failures; `store=True` models a server that stored the message and still failed."""
    srv.faults.fail(503, count=2, store=True)
    codes = [client.post("/", json={"topic": "t", "message": "m"}).status_code for _ in range(3)]
    assert codes == [503, 503, 200] and len(srv.messages()) == 3


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_is_not_followed(srv: NtfyStandin, client: httpx.Client, status: int) -> None:
    """A redirect carries a Location back to the same URL, and a non-following client makes one request only."""
    srv.faults.redirect(status)
    r = client.post("/", json={"topic": "t", "message": "m"})
    assert r.status_code == status and r.headers["location"] == f"{srv.url}/"
    assert len(srv.requests) == 1 and srv.messages() == []


def test_accept_then_drop_stores_and_closes_without_response(srv: NtfyStandin, client: httpx.Client) -> None:
    """`accept_then_drop` stores the message, then closes the socket with no response at all."""
    srv.faults.accept_then_drop()
    with pytest.raises(httpx.RemoteProtocolError):
        client.post("/", json={"topic": "t", "message": "m"})
    assert [m["message"] for m in srv.wait_for_messages(1, timeout=2)] == ["m"]
    assert srv.requests[0].status is None and srv.requests[0].fault == "drop"
    assert client.post("/", json={"topic": "t", "message": "again"}).status_code == 200


def test_drop_with_reset_is_a_transport_error(srv: NtfyStandin, client: httpx.Client) -> None:
    """`reset=True` without storing answers with a TCP reset and leaves nothing stored."""
    srv.faults.accept_then_drop(store=False, reset=True)
    with pytest.raises(httpx.TransportError):
        client.post("/", json={"topic": "t", "message": "m"})
    assert srv.messages() == []


@pytest.mark.parametrize("store", [True, False])
def test_delay_past_client_timeout(srv: NtfyStandin, store: bool) -> None:
    """A slow server times the client out; with `store=True` the message was still accepted."""
    srv.faults.delay(0.6, store=store)
    with httpx.Client(base_url=srv.url, timeout=0.2) as c, pytest.raises(httpx.ReadTimeout):
        c.post("/", json={"topic": "t", "message": "m"})
    assert len(srv.messages()) == (1 if store else 0)


def test_delay_within_client_timeout_answers_normally(srv: NtfyStandin, client: httpx.Client) -> None:
    """A short delay only slows the normal answer down."""
    srv.faults.delay(0.1)
    r = client.post("/", json={"topic": "t", "message": "m"})
    assert r.status_code == 200 and srv.messages()[0]["id"] == r.json()["id"]


def test_hang_until_released(srv: NtfyStandin, client: httpx.Client) -> None:
    """A hung request gets nothing until released, then the connection closes unanswered."""
    srv.faults.hang()
    outcome: list[BaseException] = []

    def send() -> None:
        try:
            client.post("/", json={"topic": "t", "message": "m"})
        except httpx.HTTPError as exc:
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    srv.wait_for_requests(1, timeout=2)
    sender.join(0.2)
    assert sender.is_alive() and outcome == []
    assert srv.faults.release() == 1
    sender.join(2)
    assert isinstance(outcome[0], httpx.RemoteProtocolError) and srv.messages() == []


def test_faults_skip_reads_by_default(srv: NtfyStandin, client: httpx.Client) -> None:
    """Queued faults answer publishes, so a test can still poll while they wait."""
    srv.faults.fail(500)
    assert client.get("/t/json?poll=1").status_code == 200
    assert client.post("/", json={"topic": "t"}).status_code == 500
