"""The ntfy stand-in matches the measured ntfy behaviour (docs/agent-facts.md, "ntfy") over real HTTP."""

from __future__ import annotations

import base64
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from support.ntfy_standin import NtfyStandin, RateLimit

TOKEN = "tk_0123456789abcdefghijklmnopqrs"  # tk_ + 29 lowercase alphanumerics
OTHER_TOKEN = "tk_zyxwvutsrqponmlkjihgfedcba987"
ID = re.compile(r"^[A-Za-z0-9]{12}$")
TESTS_DIR = Path(__file__).resolve().parent


class FakeClock:
    """A settable wall clock for message times and rate buckets."""

    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture()
def client(srv: NtfyStandin) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=srv.url, timeout=5, follow_redirects=False) as c:
        yield c


@pytest.fixture()
def locked() -> Iterator[NtfyStandin]:
    with NtfyStandin(
        users={"phil": "secret", "ben": "pw"},
        tokens={TOKEN: "phil", OTHER_TOKEN: "ben"},
        access={"phil": {"alerts*": "read-write"}},
        default_access="deny-all",
    ) as s:
        yield s


def post(url: str, **kw: Any) -> httpx.Response:
    with httpx.Client(base_url=url, timeout=5, follow_redirects=False) as c:
        return c.post("/", **kw)


def assert_error(r: httpx.Response, status: int, code: int) -> dict[str, Any]:
    assert (r.status_code, r.headers["content-type"]) == (status, "application/json")
    assert "retry-after" not in r.headers and "www-authenticate" not in r.headers
    assert r.content.endswith(b"}\n")
    doc: dict[str, Any] = r.json()
    assert (doc["code"], doc["http"]) == (code, status) and doc["error"]
    return doc


# ------------------------------------------------------------------------------ JSON publishing


def test_success_response_shape(client: httpx.Client) -> None:
    """A JSON publish answers 200 with compact, ordered, Go-escaped message JSON and a trailing newline."""
    r = client.post(
        "/",
        json={
            "topic": "alerts",
            "title": "<done>",
            "message": "a & b",
            "priority": 4,
            "tags": ["white_check_mark"],
            "click": "https://example.com",
            "markdown": True,
            "actions": [{"action": "VIEW", "label": "Open", "url": "https://example.com"}],
        },
    )
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    assert r.headers["access-control-allow-origin"] == "*" and "server" not in r.headers
    assert r.content.endswith(b"}\n") and b'"title":"\\u003cdone\\u003e"' in r.content
    assert b": " not in r.content and b'"message":"a \\u0026 b"' in r.content
    m = r.json()
    assert list(m) == [
        "id",
        "time",
        "expires",
        "event",
        "topic",
        "title",
        "message",
        "priority",
        "tags",
        "click",
        "actions",
        "content_type",
    ]
    assert ID.match(m["id"]) and m["expires"] == m["time"] + 12 * 3600
    assert (m["event"], m["topic"], m["priority"], m["content_type"]) == ("message", "alerts", 4, "text/markdown")
    [action] = m["actions"]
    assert (action["action"], action["clear"], len(action["id"])) == ("view", False, 10)


def test_priority_three_is_echoed_and_unset_priority_omitted(client: httpx.Client) -> None:
    """An explicit priority 3 appears in the answer while an absent priority is omitted (0 is empty)."""
    assert client.post("/", json={"topic": "t", "message": "m", "priority": 3}).json()["priority"] == 3
    assert "priority" not in client.post("/", json={"topic": "t", "message": "m"}).json()


@pytest.mark.parametrize(("size", "status"), [(4095, 200), (4096, 400)])
def test_message_size_boundary(client: httpx.Client, size: int, status: int) -> None:
    """A 4095-byte message is accepted; 4096 bytes takes the attachment path and gets 400 40014."""
    r = client.post("/", json={"topic": "t", "message": "é" * (size // 2) + "x" * (size % 2)})
    if status == 200:
        assert r.status_code == 200 and len(r.json()["message"].encode()) == size
    else:
        assert_error(r, 400, 40014)


def test_text_body_that_is_not_utf8_is_40014(client: httpx.Client) -> None:
    """A non-UTF-8 text body would be an attachment, which is not configured: 400 40014."""
    assert_error(client.post("/t", content=b"\xff\xfe bad"), 400, 40014)


@pytest.mark.parametrize(("length", "status"), [(8191, 200), (8192, 413)])
def test_json_body_peek_limit(client: httpx.Client, length: int, status: int) -> None:
    """A JSON body of 8192 bytes or more gets 413 41303; one byte less is decoded."""
    stub = json.dumps({"topic": "t", "message": "m", "pad": ""}).encode()
    body = stub[:-2] + b"y" * (length - len(stub)) + stub[-2:]
    assert len(body) == length
    r = client.post("/", content=body)
    if status == 200:
        assert r.status_code == 200
    else:
        assert_error(r, 413, 41303)


@pytest.mark.parametrize(
    "body",
    [
        b'{"topic":"t","priority":"high"}',
        b'{"topic":"t","priority":4.0}',
        b'{"topic":"t","tags":"a,b"}',
        b'{"topic":"t","markdown":"yes"}',
        b'{"topic":"t","message":5}',
        b'{"topic":"t","actions":{}}',
        b"not json",
        b"",
        b"[]",
        b'{"topic":"t","priority":NaN}',
    ],
)
def test_invalid_json_or_wrong_types_are_40024(client: httpx.Client, body: bytes) -> None:
    """Invalid JSON, an empty body and Go type mismatches all get 400 40024."""
    assert_error(client.post("/", content=body), 400, 40024)


@pytest.mark.parametrize(
    ("doc", "code"),
    [
        ({"topic": "t", "priority": 7}, 40007),
        ({"message": "no topic"}, 40009),
        ({"topic": "a.b"}, 40009),
        ({"topic": "x" * 65}, 40009),
        ({"topic": "v1"}, 40010),
        ({"topic": "t", "actions": [{"action": "view", "label": str(i), "url": "https://x"} for i in range(4)]}, 40018),
        ({"topic": "t", "actions": [{"action": "view", "url": "https://x"}]}, 40018),
        ({"topic": "t", "actions": [{"action": "http", "label": "L"}]}, 40018),
        ({"topic": "t", "actions": [{"action": "open", "label": "L"}]}, 40018),
    ],
)
def test_invalid_values_get_their_ntfy_codes(client: httpx.Client, doc: dict[str, Any], code: int) -> None:
    """Bad priority, topic, disallowed topic and invalid actions get 40007, 40009, 40010 and 40018."""
    assert_error(client.post("/", json=doc), 400, code)


def test_actions_error_carries_ntfy_reason(client: httpx.Client) -> None:
    """The 40018 text names the failing rule the way ntfy words it."""
    doc = assert_error(client.post("/", json={"topic": "t", "actions": [{"action": "view", "label": "L"}]}), 400, 40018)
    assert doc["error"] == "invalid request: actions invalid; parameter 'url' is required for action 'view'"


def test_case_insensitive_fields_empty_message_and_trailing_bytes(client: httpx.Client) -> None:
    """Field names match case-insensitively, an empty message becomes "triggered", trailing bytes are ignored."""
    r = client.post("/", content=b'{"TOPIC":"t","Title":"T","Message":"","unknown":[1]} trailing')
    assert r.status_code == 200
    assert (r.json()["title"], r.json()["message"]) == ("T", "triggered")


def test_text_publish_with_headers(client: httpx.Client) -> None:
    """`POST /<topic>` takes the body as the message and X-Title/X-Priority/X-Tags/X-Sequence-ID headers."""
    r = client.post(
        "/t",
        content=b"  hello\n",
        headers={"X-Title": "Done", "X-Priority": "high", "X-Tags": "a, b,,c", "X-Sequence-ID": "codex-1"},
    )
    m = r.json()
    assert (m["message"], m["title"], m["priority"], m["tags"]) == ("hello", "Done", 4, ["a", "b", "c"])
    assert list(m)[:2] == ["id", "sequence_id"] and m["sequence_id"] == "codex-1"


def test_health_and_unknown_path(client: httpx.Client) -> None:
    """`GET /v1/health` answers healthy; an unknown path gets the exact 404 40401 body."""
    assert client.get("/v1/health").content == b'{"healthy":true}\n'
    r = client.get("/nope/deeper")
    assert_error(r, 404, 40401)
    assert r.content == b'{"code":40401,"http":404,"error":"page not found"}\n'


# -------------------------------------------------------------------------------------- auth


@pytest.mark.parametrize(
    "auth",
    [
        f"Bearer {TOKEN}",
        "Basic " + base64.b64encode(b"phil:secret").decode(),
        "Basic " + base64.b64encode(f":{TOKEN}".encode()).decode(),
    ],
)
def test_auth_bearer_basic_and_token_as_password(locked: NtfyStandin, auth: str) -> None:
    """A granted user publishes with a Bearer token, Basic user:pass, or Basic with the token as password."""
    r = post(locked.url, json={"topic": "alerts-1", "message": "m"}, headers={"Authorization": auth})
    assert r.status_code == 200
    assert locked.requests[-1].header("authorization") == auth


@pytest.mark.parametrize(
    ("auth", "path"),
    [
        ("Basic " + base64.b64encode(b"phil:wrong").decode(), "/"),
        ("Bearer tk_" + "0" * 29, "/"),  # well-formed but unknown
        (f"bearer {TOKEN}", "/"),  # Bearer is matched case-sensitively
        ("Basic " + base64.b64encode(b"phil:wrong").decode(), "/no/such/path"),
    ],
)
def test_bad_credentials_are_401_even_on_unknown_paths(locked: NtfyStandin, auth: str, path: str) -> None:
    """A bad credential gets 401 40101 with the auth docs link before any routing."""
    with httpx.Client(base_url=locked.url, timeout=5) as c:
        r = c.post(path, json={"topic": "alerts", "message": "m"}, headers={"Authorization": auth})
    doc = assert_error(r, 401, 40101)
    assert doc["link"] == "https://ntfy.sh/docs/publish/#authentication"


@pytest.mark.parametrize("headers", [{}, {"Authorization": f"Bearer {OTHER_TOKEN}"}, {"Authorization": "Token x"}])
def test_anonymous_or_ungranted_is_403(locked: NtfyStandin, headers: dict[str, str]) -> None:
    """Anonymous (or a foreign scheme) and a user without a grant get 403 40301 under deny-all."""
    assert_error(post(locked.url, json={"topic": "alerts", "message": "m"}, headers=headers), 403, 40301)
    assert locked.messages() == []


def test_auth_failures_are_limited_after_29() -> None:
    """After 29 failed credentials the next attempt gets 429 42909, even with a good token."""
    bad = {"Authorization": "Basic " + base64.b64encode(b"phil:nope").decode()}
    # A frozen clock: the bucket refills one token a minute, so real time would blur the edge.
    locked = NtfyStandin(users={"phil": "secret"}, tokens={TOKEN: "phil"}, clock=FakeClock())
    with locked, httpx.Client(base_url=locked.url, timeout=5) as c:
        codes = [c.post("/", json={"topic": "alerts"}, headers=bad).json()["code"] for _ in range(29)]
        assert set(codes) == {40101}
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert_error(c.post("/", json={"topic": "alerts"}, headers=good), 429, 42909)


# ------------------------------------------------------------------------------------ limits


def test_request_bucket_429_42901_then_refills() -> None:
    """With the request bucket on, the request past the burst gets 429 42901 (no Retry-After) until it refills."""
    clock = FakeClock()
    with NtfyStandin(request_limit=RateLimit(2, 5.0), clock=clock) as s:
        with httpx.Client(base_url=s.url, timeout=5) as c:
            assert [c.post("/", json={"topic": "t"}).status_code for _ in range(2)] == [200, 200]
            assert_error(c.post("/", json={"topic": "t"}), 429, 42901)
            clock.t += 5
            assert c.post("/", json={"topic": "t"}).status_code == 200


def test_daily_quota_42908(srv: NtfyStandin, client: httpx.Client) -> None:
    """The daily message quota answers 429 42908 once used up, and resets on demand."""
    srv.set_limits(daily_messages=1)
    assert client.post("/", json={"topic": "t"}).status_code == 200
    assert_error(client.post("/", json={"topic": "t"}), 429, 42908)
    srv.reset_daily_quota()
    assert client.post("/", json={"topic": "t"}).status_code == 200


# ---------------------------------------------------------------------------------- read-back


def test_poll_since_variants() -> None:
    """Poll returns ndjson filtered by since=all|none|latest|<id>|<unix ts>|<duration>, and 40008 otherwise."""
    clock = FakeClock()
    t0 = int(clock.t)
    with NtfyStandin(clock=clock) as s, httpx.Client(base_url=s.url, timeout=5) as c:
        ids = []
        for i in range(3):
            ids.append(c.post("/", json={"topic": "t", "message": f"m{i}"}).json()["id"])
            clock.t += 10
        c.post("/", json={"topic": "other", "message": "o"})

        def poll(query: str, topics: str = "t") -> list[str]:
            r = c.get(f"/{topics}/json?poll=1{query}")
            assert r.status_code == 200 and r.headers["content-type"] == "application/x-ndjson; charset=utf-8"
            return [json.loads(line)["message"] for line in r.text.splitlines()]

        assert poll("") == poll("&since=all") == ["m0", "m1", "m2"]
        assert poll("&since=none") == []
        assert poll("&since=latest") == ["m2"]
        assert poll(f"&since={ids[0]}") == ["m1", "m2"]
        assert poll(f"&since={t0 + 10}") == ["m1", "m2"]
        assert poll("&since=15s") == ["m2"]  # now is t0+30
        assert poll("", "t,other") == ["m0", "m1", "m2", "o"]
        assert_error(c.get("/t/json?poll=1&since=yesterday"), 400, 40008)


def test_uncached_and_scheduled_messages_are_not_polled(srv: NtfyStandin, client: httpx.Client) -> None:
    """`Cache: no` messages have no expiry and never come back from poll; scheduled ones only with scheduled=1."""
    uncached = client.post("/t", content=b"gone", headers={"Cache": "no"}).json()
    later = client.post("/t", content=b"later", headers={"X-Delay": "1h"}).json()
    assert "expires" not in uncached and later["time"] >= uncached["time"] + 3600
    assert client.get("/t/json?poll=1").text == ""
    assert [json.loads(x)["message"] for x in client.get("/t/json?poll=1&sched=1").text.splitlines()] == ["later"]
    assert [m["message"] for m in srv.messages()] == ["gone", "later"]


def test_sequence_id_update_is_a_new_message_and_both_stay_cached(client: httpx.Client) -> None:
    """⚠ 2.16: an update with the same sequence_id gets a new id; poll returns both revisions."""
    first = client.post("/", json={"topic": "t", "message": "v1", "sequence_id": "codex-abc"}).json()
    second = client.post("/", json={"topic": "t", "message": "v2", "sequence_id": "codex-abc"}).json()
    assert first["id"] != second["id"] and first["sequence_id"] == second["sequence_id"] == "codex-abc"
    polled = [json.loads(line) for line in client.get("/t/json?poll=1").text.splitlines()]
    assert [(m["message"], m["sequence_id"]) for m in polled] == [("v1", "codex-abc"), ("v2", "codex-abc")]


def test_returned_id_can_be_used_as_sequence_id(client: httpx.Client) -> None:
    """⚠ 2.16: sequence_id is omitted when it equals id, and shown on an update that reuses that id."""
    first = client.post("/", json={"topic": "t", "message": "v1"}).json()
    assert "sequence_id" not in first
    update = client.post("/", json={"topic": "t", "message": "v2", "sequence_id": first["id"]}).json()
    assert update["sequence_id"] == first["id"] != update["id"]


def test_streaming_subscription_gets_open_and_live_messages(srv: NtfyStandin, client: httpx.Client) -> None:
    """Without poll the subscription streams an open event and then live messages."""
    with httpx.Client(base_url=srv.url, timeout=5) as sub, sub.stream("GET", "/t/json") as stream:
        lines = stream.iter_lines()
        assert json.loads(next(lines))["event"] == "open"
        client.post("/", json={"topic": "t", "message": "live"})
        assert json.loads(next(lines))["message"] == "live"


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


# ------------------------------------------------------------------------- recording, keep-alive


def test_one_keepalive_connection_is_reused(srv: NtfyStandin) -> None:
    """Requests on one client share one TCP connection; a second client opens another."""
    with httpx.Client(base_url=srv.url, timeout=5) as c:
        for i in range(3):
            assert c.post("/", json={"topic": "t", "message": str(i)}).status_code == 200
    assert srv.connections_opened == 1 and len({r.connection_id for r in srv.requests}) == 1
    post(srv.url, json={"topic": "t"})
    assert srv.connections_opened == 2


def test_requests_are_recorded_with_headers_body_and_times(srv: NtfyStandin, client: httpx.Client) -> None:
    """Each request keeps method, path, headers, raw body, parsed JSON and monotonic/wall arrival times."""
    client.post("/", json={"topic": "t", "message": "one"}, headers={"Authorization": "Bearer x"})
    client.post("/t?title=q", content=b"two")
    first, second = srv.requests
    assert (first.method, first.path, first.parsed, first.header("AUTHORIZATION")) == (
        "POST",
        "/",
        {"topic": "t", "message": "one"},
        "Bearer x",
    )
    assert (second.target, second.query, second.body, second.parsed) == ("/t?title=q", {"title": "q"}, b"two", None)
    assert first.arrived_monotonic <= second.arrived_monotonic and first.message_ids == [srv.messages()[0]["id"]]
    assert srv.messages()[1]["title"] == "q"


def test_wait_for_messages_times_out() -> None:
    """`wait_for_messages` raises TimeoutError when too few messages arrive."""
    with NtfyStandin() as s, pytest.raises(TimeoutError):
        s.wait_for_messages(1, timeout=0.05)


# ------------------------------------------------------------------------------------ subprocess


def test_subprocess_mode(tmp_path: Path) -> None:
    """As a process it writes its port, records stored messages as JSON lines, takes faults via /_standin and exits 0 on SIGTERM."""
    port_file, record = tmp_path / "port", tmp_path / "messages.jsonl"
    env = {**os.environ, "PYTHONPATH": str(TESTS_DIR)}
    cmd = [sys.executable, "-m", "support.ntfy_standin", "--port", "0", "--port-file", str(port_file)]
    proc = subprocess.Popen(
        [*cmd, "--record-file", str(record)], stdout=subprocess.PIPE, env=env, cwd=tmp_path, text=True
    )
    guard = threading.Timer(10, proc.kill)  # a stand-in that never starts cannot hang the suite
    guard.start()
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until it is listening: no polling for the port file
        assert line.startswith("listening "), line
        url = line.split()[1]
        assert url == f"http://127.0.0.1:{int(port_file.read_text())}"
        with httpx.Client(base_url=url, timeout=5) as c:
            c.post("/_standin/fault", json={"kind": "fail", "status": 503, "count": 1}).raise_for_status()
            assert c.post("/", json={"topic": "t", "message": "m"}).status_code == 503
            ok = c.post("/", json={"topic": "t", "message": "m"}).json()
            recorded = c.get("/_standin/requests").json()
            state = c.get("/_standin/state").json()
        assert [r["status"] for r in recorded] == [503, 200] and state["connections_opened"] == 1
        assert [json.loads(line) for line in record.read_text().splitlines()] == [ok]
    finally:
        guard.cancel()
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(5) == 0
