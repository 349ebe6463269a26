"""The ntfy stand-in publishes as the measured ntfy does (docs/agent-facts.md, "ntfy"): JSON and text bodies, errors."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from support.ntfy_kit import ID, assert_error

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
