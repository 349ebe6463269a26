"""The ntfy stand-in's read-back matches ntfy's: poll with since, cache rules, sequence IDs, streaming."""

from __future__ import annotations

import json

import httpx
from support.ntfy_kit import FakeClock, assert_error
from support.ntfy_standin import NtfyStandin

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


def test_a_new_revision_replaces_a_still_scheduled_one_only(srv: NtfyStandin, client: httpx.Client) -> None:
    """⚠ 2.16: a scheduled message is replaced by the next revision of its sequence ID; a delivered
    one, another sequence ID's scheduled one and another topic's stay."""

    def post(topic: str, text: str, sid: str, **headers: str) -> None:
        client.post("/", json={"topic": topic, "message": text, "sequence_id": sid}, headers=headers)

    post("t", "sent", "s1")
    post("t", "later-1", "s2", **{"X-Delay": "1h"})
    post("t", "other-later", "s3", **{"X-Delay": "1h"})
    post("u", "elsewhere", "s2", **{"X-Delay": "1h"})
    post("t", "update-1", "s1")
    post("t", "later-2", "s2", **{"X-Delay": "1h"})
    post("t", "now-3", "s2")
    assert [m["message"] for m in srv.messages()] == ["sent", "other-later", "elsewhere", "update-1", "now-3"]


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
