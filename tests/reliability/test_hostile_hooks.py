"""Hostile hook input: the agent is never hurt (exit 0, the documented output, fast) and the turn is
never lost and never notified twice.

All hostile payloads below name one real root turn (or try to); afterwards the turn completes and
the pipeline settles: exactly one notification, with the turn's own ``sequence_id``, whatever
arrived before. A refused payload is recovered by the rollout scanner (the safety net).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Any

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, messages_by_sequence

WRONG: tuple[Any, ...] = (None, 0, -1, 1e308, True, "", [], [1], {}, {"a": 1}, "y" * 100_000)
#: Wall time a hook may take even on a loaded test machine (the budget is ~2.5x interpreter start-up).
HOOK_SECONDS = 5.0
HUGE = 100 << 20


def _raw_payloads(good: bytes) -> dict[str, bytes]:
    """Byte-level breakage of a valid Stop payload."""
    return {
        "invalid-utf8": good[:-1] + b',"cwd":"\xff\xfe\xc0\x80"}',
        "lone-surrogate-escape": good[:-1] + b',"session_id":"\\ud800"}',
        "bom": b"\xef\xbb\xbf" + good,
        "double-bom": b"\xef\xbb\xbf\xef\xbb\xbf" + good,
        "utf16": good.decode().encode("utf-16"),
        "partial": good[: len(good) // 2],
        "empty": b"",
        "whitespace": b" \n\t ",
        "non-object": b"[1, 2, 3]",
        "deep-nesting": b'{"a":' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}",
        "nul-bytes": b"\x00" * 1024,
        "huge-100MB": good[:-1] + b',"pad":"' + b"a" * HUGE + b'"}',
    }


def _hostile_paths(rig: Rig) -> dict[str, str]:
    fifo = rig.root / "planted.fifo"
    os.mkfifo(fifo)
    one_line = rig.root / "one-line.jsonl"
    with open(one_line, "wb") as f:
        f.truncate(HUGE)  # 100 MB of NUL bytes and no newline
    return {
        "fifo": str(fifo),
        "dev-zero": "/dev/zero",
        "dev-urandom": "/dev/urandom",
        "directory": str(rig.root),
        "one-100MB-line": str(one_line),
        "relative": "../../../../etc/passwd",
        "missing": str(rig.root / "nope.jsonl"),
    }


def _call(rig: Rig, stdin: bytes, *argv: str) -> tuple[float, str, int]:
    started = time.monotonic()
    result = rig.run("hook", *(argv or ("codex-stop",)), stdin=stdin, timeout=60)
    return time.monotonic() - started, result.output, result.rc


def test_hostile_stop_payloads_never_hurt_the_agent_and_never_lose_or_double_the_turn(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """~100 broken Stop payloads (bytes, wrong types in every field, hostile transcript paths) each exit 0
    with exactly `{}` within the hook budget; the turn is then delivered exactly once."""
    rig = make_rig(idle_probe_grace_seconds=1.0)
    turn = rig.new_turn()
    payload = rig.stop_payload(turn)
    good = json.dumps(payload).encode()
    cases: dict[str, bytes] = dict(_raw_payloads(good))
    for field in payload:
        for n, value in enumerate(WRONG):
            cases[f"{field}={n}"] = json.dumps({**payload, field: value}).encode()
    for name, path in _hostile_paths(rig).items():
        cases[f"transcript_path:{name}"] = json.dumps({**payload, "transcript_path": path}).encode()

    slowest = 0.0
    for name, data in cases.items():
        seconds, output, rc = _call(rig, data)
        assert (rc, output) == (0, "{}\n"), f"{name}: exit {rc}, output {output[:300]!r}"
        assert seconds < HOOK_SECONDS, f"{name}: {seconds:.1f}s"
        slowest = max(slowest, seconds)
    rig.complete(turn)
    rig.settle([turn.key], drain=True)

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    assert rig.counts()["outbox"] == rig.counts()["pending"] == 0
    record(
        "hostile_stop_payloads",
        bad_inputs=len(cases),
        slowest_hook_s=round(slowest, 3),
        delivered=1,
        duplicates=0,
        lost=0,
    )


def test_hostile_input_to_the_claude_and_notify_hooks_exits_quietly(make_rig: Callable[..., Rig]) -> None:
    """The same broken bytes on `hook claude` stdin and as the `hook codex-notify` argument: exit 0, no
    output, no record, within the hook budget."""
    rig = make_rig()
    good = json.dumps({"hook_event_name": "Stop", "session_id": "s", "prompt_id": "p"}).encode()
    tried = 0
    for name, data in _raw_payloads(good).items():
        seconds, output, rc = _call(rig, data, "claude")
        assert (rc, output, seconds < HOOK_SECONDS) == (0, "", True), (name, output[:300], seconds)
        # An argv element cannot hold a NUL byte, and one over 1 MiB does not survive exec (the cap).
        if len(data) <= 1 << 20 and b"\0" not in data:
            arg = data.decode("utf-8", "surrogateescape")
            started = time.monotonic()
            result = rig.run("hook", "codex-notify", arg)
            assert (result.rc, result.output) == (0, ""), (name, result.output[:300])
            assert time.monotonic() - started < HOOK_SECONDS
            tried += 1
        tried += 1
    assert rig.counts() == {"pending": 0, "outbox": 0, "sent": 0, "suppressed": 0, "dead": 0}
    record("hostile_claude_notify_payloads", bad_inputs=tried, records_created=0)


def test_a_stop_payload_whose_session_id_disagrees_with_its_rollout_is_not_a_second_notification(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """A Stop naming the real rollout and turn but another session_id does not notify that turn twice (the
    hook no longer attaches a rollout whose session_meta names another thread; found by this suite)."""
    rig = make_rig(idle_probe_grace_seconds=1.0)
    turn = rig.new_turn()
    payload = rig.stop_payload(turn)
    assert rig.run("hook", "codex-stop", stdin=json.dumps({**payload, "session_id": "x"}).encode()).rc == 0
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn)
    rig.settle([turn.key], drain=True)
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
