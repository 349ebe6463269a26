"""Issue 37, item 7: an API error Claude Code's StopFailure calls ``unknown`` is pushed by its kind.

The recorded StopFailure payload of a real `claude -p` run (tests/fixtures/hooks/claude/), with
what Claude Code 2.1.332 sends for a 400: ``error: "unknown"`` and the last message
``API Error: 400 Invalid Request Error`` (measured by tests/e2e/test_claude_drift.py). Through
the installed ``donebell hook claude`` and ``donebell run``, without ``include_message``: the push
says ``failed: 400 Invalid Request Error``, not ``failed: unknown``; a secret in that line is
redacted and the line is one line.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.new_user import NewUser
from support.ntfy_standin import NtfyStandin

FIXTURE = Path(__file__).parent / "fixtures" / "hooks" / "claude" / "print-apierror529" / "hooks.jsonl"
TOPIC = "donebell-firstweek-api"


def _stop_failure(last_message: str) -> dict[str, object]:
    for line in FIXTURE.read_text().splitlines():
        event = json.loads(line)
        if event["event"] == "StopFailure":
            return {**event["payload"], "error": "unknown", "last_assistant_message": last_message}
    raise AssertionError("no StopFailure in the fixture")


def _pushed(tmp_path: Path, srv: NtfyStandin, last_message: str) -> str:
    user = NewUser(tmp_path)
    try:
        user.setup(srv.url, ("topic", TOPIC))
        hook = user.cli("hook", "claude", stdin=json.dumps(_stop_failure(last_message)))
        assert hook.returncode == 0, hook.stderr
        user.start_run()
        [note] = srv.wait_for_messages(1, timeout=60, topic=TOPIC)
        return str(note["message"])
    finally:
        user.cleanup()


def test_a_400_is_pushed_by_its_kind_not_as_unknown(tmp_path: Path, srv: NtfyStandin) -> None:
    message = _pushed(tmp_path, srv, "API Error: 400 Invalid Request Error")
    assert message.startswith("failed: 400 Invalid Request Error · "), message


def test_the_kind_is_one_redacted_line(tmp_path: Path, srv: NtfyStandin) -> None:
    secret = "sk-ant-api03-" + "Q" * 40
    message = _pushed(tmp_path, srv, f"API Error: 400 bad key {secret} in request\nsecond line")
    assert message.startswith("failed: 400 bad key "), message
    assert secret not in message and "second line" not in message and "\n" not in message
