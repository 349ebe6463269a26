"""Hook input discipline: bounded strict-UTF-8 JSON objects; every refusal is logged and exits 0."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
from donebell.workers.kit.hook_context import MAX_PAYLOAD_BYTES, PayloadError, argv_object, decode_object
from support.hooks_harness import HookEnv, claude_event

#: command -> what it always prints
OUTPUT = {"codex-stop": b"{}\n", "claude": b""}


@pytest.fixture()
def hooks(tmp_path: Path) -> HookEnv:
    return HookEnv(tmp_path)


def _stdin_payload(hooks: HookEnv, command: str) -> dict[str, object]:
    if command == "codex-stop":
        hooks.install_rollout("simple-exec")
        return hooks.stop_payload("simple")
    return claude_event("print-tool", "Stop")


def _assert_refused(hooks: HookEnv, result: subprocess.CompletedProcess[bytes], command: str, reason: str) -> None:
    assert result.returncode == 0 and result.stdout == OUTPUT[command]
    assert hooks.counts() == {"pending": 0, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}
    refused = [r for r in hooks.log() if r["msg"].startswith("payload refused")]
    assert len(refused) == 1 and reason in refused[0]["msg"], hooks.log()


@pytest.mark.parametrize("command", ["codex-stop", "claude"])
def test_invalid_utf8_is_refused_not_guessed(hooks: HookEnv, command: str) -> None:
    """Invalid UTF-8 bytes refuse the payload (logged, exit 0) instead of being replaced and parsed."""
    raw = json.dumps(_stdin_payload(hooks, command)).encode().replace(b"Hello", b"Hel\xfflo").replace(b"FAKE", b"F\xc3")
    _assert_refused(hooks, hooks.run(command, stdin=raw), command, "not valid UTF-8")


@pytest.mark.parametrize("command", ["codex-stop", "claude"])
def test_utf8_bom_is_accepted(hooks: HookEnv, command: str) -> None:
    """A leading UTF-8 BOM (Windows tools) is accepted and the payload ingested normally."""
    raw = b"\xef\xbb\xbf" + json.dumps(_stdin_payload(hooks, command)).encode()
    result = hooks.run(command, stdin=raw)
    assert result.returncode == 0 and result.stdout == OUTPUT[command]
    assert hooks.counts()["pending"] == 1


@pytest.mark.parametrize("command", ["codex-stop", "claude"])
def test_empty_stdin_is_logged(hooks: HookEnv, command: str) -> None:
    """An empty (or whitespace-only) stdin writes nothing, logs 'empty payload' and exits 0."""
    _assert_refused(hooks, hooks.run(command, stdin=b" \n"), command, "empty payload")


@pytest.mark.parametrize("command", ["codex-stop", "claude"])
def test_ten_megabyte_stdin_is_refused_quickly(hooks: HookEnv, command: str) -> None:
    """10 MB on stdin is refused after reading cap+1 bytes (never parsed, never truncated-and-used)."""
    payload = _stdin_payload(hooks, command)
    payload["last_assistant_message"] = "x" * (10 * 1024 * 1024)
    started = time.monotonic()
    result = hooks.run(command, stdin=json.dumps(payload).encode())
    assert time.monotonic() - started < 20
    _assert_refused(hooks, result, command, f"larger than {MAX_PAYLOAD_BYTES} bytes")


@pytest.mark.parametrize("command", ["codex-stop", "claude"])
@pytest.mark.parametrize("raw", [b"[1, 2]", b'"Stop"', b"42", b"null", b"{not json", b"[" * 100000])
def test_non_object_json_is_refused(hooks: HookEnv, command: str, raw: bytes) -> None:
    """Arrays, scalars, null, broken and absurdly nested JSON are refused with a log line, exit 0."""
    result = hooks.run(command, stdin=raw)
    reason = "not JSON" if raw.startswith((b"{not", b"[[")) else "not an object"
    _assert_refused(hooks, result, command, reason)


def test_unknown_fields_are_ignored(hooks: HookEnv) -> None:
    """Extra and unknown fields do not disturb ingestion (and are not copied into the record)."""
    hooks.install_rollout("simple-exec")
    hooks.stop(hooks.stop_payload("simple", brand_new_field={"x": [1, 2]}, model=None))
    rec = hooks.only("pending")
    assert "brand_new_field" not in rec and rec["classification"] == "root"


def test_wrong_types_and_lone_surrogates_count_as_missing(hooks: HookEnv) -> None:
    """Ids of the wrong type or with unencodable lone surrogates mean 'missing': a weak identity, no crash."""
    hooks.install_rollout("simple-exec")
    raw = json.dumps(hooks.stop_payload("simple", turn_id=12345)).replace(
        '"last_assistant_message": "Hello', '"last_assistant_message": "\\ud800Hello'
    )
    hooks.write_config(include_message=True)
    result = hooks.run("codex-stop", stdin=raw.encode())
    assert result.returncode == 0 and result.stdout == b"{}\n"
    rec = hooks.only("pending")
    assert rec["weak_identity"] is True and rec["turn_id"] is None and rec["last_message"] is None


def test_notify_argument_with_invalid_utf8_is_refused(hooks: HookEnv) -> None:
    """A notify argument whose bytes are not UTF-8 is refused (logged), exit 0, nothing written."""
    arg = os.fsdecode(b'{"type":"agent-turn-complete","thread-id":"t\xff","turn-id":"u"}')
    result = subprocess.run(hooks.argv("codex-notify", arg), capture_output=True, env=hooks.env(), timeout=60)
    assert result.returncode == 0 and result.stdout == b""
    assert hooks.counts()["pending"] == 0
    assert "argument is not valid UTF-8" in hooks.log_messages()


def test_notify_without_argument_is_logged(hooks: HookEnv) -> None:
    """codex-notify with no payload argument logs and exits 0."""
    result = hooks.run("codex-notify")
    assert result.returncode == 0 and "no payload argument" in hooks.log_messages()


def test_notify_of_another_type_is_ignored(hooks: HookEnv) -> None:
    """A notify payload that is not agent-turn-complete writes nothing."""
    hooks.notify({"type": "approval-requested", "thread-id": "a", "turn-id": "b"})
    assert hooks.counts()["pending"] == 0 and "codex notify ignored" in hooks.log_messages()


def test_unknown_hook_command_exits_zero(hooks: HookEnv) -> None:
    """`donebell hook bogus` prints usage on stderr but still exits 0 (a misconfigured hook must not loop)."""
    result = hooks.run("bogus", stdin=b"{}")
    assert result.returncode == 0 and b"usage: donebell hook" in result.stderr


def test_stdin_decoder_contract() -> None:
    """decode_object: BOM stripped, strict UTF-8, objects only; argv_object: strict re-encoding and size cap."""
    assert decode_object(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}
    for bad in (b"", b"\xef\xbb\xbf", b'{"a": "\xed\xa0\x80"}', b"[]"):
        with pytest.raises(PayloadError):
            decode_object(bad)
    with pytest.raises(PayloadError, match="larger than"):
        argv_object("{" + " " * MAX_PAYLOAD_BYTES + "}")
    assert argv_object('{"k": "v"}') == {"k": "v"}
