"""Time: a six-hour outage and wall-clock jumps, through the ``DONEBELL_CLOCK_OFFSET`` seam.

``statedir.now()`` (the one clock every record is stamped with, and the one the delivery pass and
the gate decide by) adds ``DONEBELL_CLOCK_OFFSET`` seconds, so a test can move a real worker
process through hours of simulated time, or jump its clock, between passes.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from support.figures import record
from support.ntfy_standin import NtfyStandin
from support.rig import Rig, Turn, messages_by_sequence

OUTAGE = 6 * 3600.0
CAP = 900.0  # the default retry_max_seconds


def _offset(seconds: float) -> dict[str, str]:
    return {"DONEBELL_CLOCK_OFFSET": repr(seconds)}


def _in_outbox(rig: Rig, standin: NtfyStandin, **config: Any) -> Turn:
    """A turn promoted to outbox/ whose first attempt failed (503)."""
    rig.update_config(**config)
    turn = rig.new_turn()
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn)
    standin.faults.fail(503)
    assert rig.deliver_once().rc == 0
    assert rig.where(turn.key) == ["outbox"]
    return turn


def test_a_six_hour_outage_loses_nothing_backs_off_within_the_cap_and_delivers_after(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """Every attempt during six simulated hours of 503s is rescheduled no further than retry_max_seconds
    (900 s) ahead; the record never leaves outbox/; the first pass after the outage delivers it once."""
    rig = make_rig()
    turn = _in_outbox(rig, standin, retry_max_seconds=CAP)
    standin.faults.fail(503, count=10_000)
    gaps: list[float] = []
    offset = 0.0
    while offset < OUTAGE:
        rec = rig.state.read("outbox", turn.key)
        assert rec is not None, "the record left outbox/ during the outage"
        gaps.append(rec["next_attempt_at"] - rec["last_attempt_at"])
        offset = rec["next_attempt_at"] - time.time() + 0.01  # jump to the moment it is due
        assert rig.deliver_once(env=_offset(offset)).rc == 0
    last = rig.state.read("outbox", turn.key)
    assert last is not None
    attempts = last["attempts"]
    standin.faults.clear()

    assert rig.deliver_once(env=_offset(offset + CAP)).rc == 0

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    assert max(gaps) <= CAP
    assert min(gaps[-5:]) >= CAP / 2  # capped, not collapsing: equal jitter keeps at least half the cap
    record(
        "six_hour_outage",
        simulated_hours=round(offset / 3600, 2),
        attempts=attempts + 1,
        max_backoff_s=round(max(gaps), 1),
        cap_s=CAP,
        lost=0,
        delivered=1,
    )


def test_the_clock_jumping_back_during_retries_delays_an_outbox_record_by_at_most_one_cap(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """After a failed attempt the clock goes back a day: the far-future next_attempt_at is clamped to one
    cap (60 s) from the new now, and the record is sent when that passes, once."""
    rig = make_rig()
    turn = _in_outbox(rig, standin, retry_max_seconds=60.0)
    back = -86400.0

    assert rig.deliver_once(env=_offset(back)).rc == 0
    clamped = rig.state.read("outbox", turn.key)
    assert clamped is not None and clamped["next_attempt_at"] <= time.time() + back + 60.0 + 1.0
    assert rig.deliver_once(env=_offset(back + 61.0)).rc == 0

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    record("clock_back_outbox", jump_s=back, waited_at_most_s=60.0, delivered=1)


def test_the_clock_jumping_forward_then_back_sends_once(make_rig: Callable[..., Rig], standin: NtfyStandin) -> None:
    """A day forward makes the waiting record due at once; coming back afterwards sends nothing again."""
    rig = make_rig()
    turn = _in_outbox(rig, standin, retry_max_seconds=600.0)

    assert rig.deliver_once(env=_offset(86400.0)).rc == 0
    assert rig.deliver_once(env=_offset(0.0)).rc == 0
    assert rig.deliver_once(env=_offset(-3600.0)).rc == 0

    assert rig.where(turn.key) == ["sent"]
    assert messages_by_sequence(standin.messages(rig.topic)) == {turn.sequence_id: 1}
    record("clock_forward_outbox", jump_s=86400, delivered=1, duplicates=0)


def test_the_clock_jumping_back_does_not_strand_a_waiting_candidate(
    make_rig: Callable[..., Rig], standin: NtfyStandin
) -> None:
    """A candidate waiting for its quiet window when the clock goes back an hour is still notified within
    seconds, not an hour later."""
    rig = make_rig()
    turn = rig.new_turn()
    assert rig.hook_stop(turn).rc == 0
    rig.complete(turn, backdate=0)  # just written: the gate waits for the quiet window
    assert rig.deliver_once().rc == 0
    assert rig.where(turn.key) == ["pending"]

    deadline = time.monotonic() + 3.0  # idle_grace 0.2 s + unknown_retry_max 0.5 s, with room
    while rig.where(turn.key) != ["sent"] and time.monotonic() < deadline:
        rig.deliver_once(env=_offset(-3600.0))
        time.sleep(0.2)

    assert rig.where(turn.key) == ["sent"]
