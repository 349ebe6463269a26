"""Hook storms: many hook processes at the same instant, with no service running.

The hooks start their own on-demand delivery workers (the kick; no ``DONEBELL_KICK_COMMAND=off``
here), as on a machine where donebell is not installed as a service: several hooks may start a
worker at once, one gets the delivery lock, the others exit.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence
from support.runner import Proc
from support.service import kill_leftovers, processes_of

HOOKS = 100


def _storm(rig: Rig, turns: list[Turn]) -> tuple[list[Proc], float]:
    """Start one Stop hook per entry of ``turns`` all at once; as each returns, Codex writes its turn's
    task_complete (once per distinct turn)."""
    started = time.monotonic()
    procs = [rig.start("hook", "codex-stop", stdin=json.dumps(rig.stop_payload(t)).encode()) for t in turns]
    completed: set[str] = set()
    for proc, turn in zip(procs, turns, strict=True):
        assert proc.wait(60) == 0, proc.output()
        assert proc.output() == "{}\n"
        if turn.key not in completed:
            rig.complete(turn)
            completed.add(turn.key)
    return procs, time.monotonic() - started


def _wait_sent(rig: Rig, turns: list[Turn], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not all(rig.where(t.key) == ["sent"] for t in turns):
        assert time.monotonic() < deadline, rig.counts()
        time.sleep(0.1)


def _kicks(rig: Rig) -> int:
    return sum(1 for line in rig.log() if line.get("msg") == "started an on-demand delivery worker")


def _workers_gone(rig: Rig, timeout: float = 45.0) -> None:
    """The on-demand workers exit by themselves once idle: no process of this rig is left."""
    deadline = time.monotonic() + timeout
    while processes_of(rig):
        if time.monotonic() > deadline:
            raise AssertionError(f"left behind: {kill_leftovers(rig)}")
        time.sleep(0.2)


def test_a_hundred_concurrent_hooks_for_one_turn_make_one_notification(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """100 Stop hooks for the same turn at once: all exit 0 with `{}`, one pending record, one
    notification, and the on-demand workers they started all exit."""
    rig = make_rig(idle_probe_grace_seconds=30.0)  # 100 real processes on a small machine take seconds
    rig.extra_env.pop("DONEBELL_KICK_COMMAND")
    turn = rig.new_turn()
    try:
        _, seconds = _storm(rig, [turn] * HOOKS)
        outcomes = [line["msg"] for line in rig.log() if str(line.get("msg")).startswith("codex codex-stop:")]
        assert outcomes.count("codex codex-stop: created") == 1, outcomes
        assert len(outcomes) == HOOKS
        _wait_sent(rig, [turn])
        time.sleep(0.5)  # a straggling worker would send now if it were going to
        assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
        assert rig.counts() == {"pending": 0, "outbox": 0, "sent": 1, "suppressed": 0, "dead": 0}
        _workers_gone(rig)
    finally:
        kill_leftovers(rig)
    record(
        "hook_storm_one_turn",
        hooks=HOOKS,
        storm_seconds=round(seconds, 2),
        pending_records=1,
        notifications=1,
        workers_kicked=_kicks(rig),
    )


def test_a_hundred_distinct_roots_at_once_make_a_hundred_notifications(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """100 Stop hooks for 100 different root turns at once: 100 notifications, one per turn, each with
    its own sequence_id, none twice."""
    rig = make_rig(idle_probe_grace_seconds=30.0)  # 100 real processes on a small machine take seconds
    rig.extra_env.pop("DONEBELL_KICK_COMMAND")
    turns = [rig.new_turn() for _ in range(HOOKS)]
    try:
        _, seconds = _storm(rig, turns)
        _wait_sent(rig, turns)
        time.sleep(0.5)
        assert messages_by_sequence(standin.messages(rig.topic)) == {t.sequence_id: 1 for t in turns}
        _workers_gone(rig)
    finally:
        kill_leftovers(rig)
    record(
        "hook_storm_distinct_roots",
        hooks=HOOKS,
        storm_seconds=round(seconds, 2),
        notifications=HOOKS,
        duplicates=0,
        workers_kicked=_kicks(rig),
    )
