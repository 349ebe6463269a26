"""The delivery role's gap between passes caps a wake-up loop, but never delays a pass the gate
scheduled: at the end of a quiet window the notification is due now, not 25 ms later."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from donebell.shared.config.view import SettingsLike
from donebell.shared.statedir import StateDir
from donebell.workers.delivery import role as delivery_role
from support.delivery_kit import Env

pytestmark = pytest.mark.usefixtures("no_outside_config")


class FakeGatePass:
    promoted = suppressed = waiting = 0
    watch_paths: list[Path] = []

    def __init__(self, next_due: float | None) -> None:
        self.next_due = next_due


def _role(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, due_in: float | None) -> tuple[Any, list[float]]:
    role = Env(tmp_path, server="http://127.0.0.1:9").role()

    def gate(_state: StateDir, _settings: SettingsLike, at: float, /) -> FakeGatePass:
        return FakeGatePass(None if due_in is None else at + due_in)

    role.gate = gate
    slept: list[float] = []
    monkeypatch.setattr(time, "sleep", slept.append)  # the module the role sleeps through
    return role, slept


def _until(deadline: float) -> None:
    while time.monotonic() < deadline:  # time.sleep is recorded, not slept, in these tests
        pass


def test_a_pass_right_after_another_waits_the_gap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    role, slept = _role(tmp_path, monkeypatch, None)
    role.run_pass()
    role.run_pass()
    assert len(slept) == 1 and 0 < slept[0] <= delivery_role.MIN_PASS_GAP_SECONDS


def test_a_pass_at_the_time_the_last_one_scheduled_does_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    role, slept = _role(tmp_path, monkeypatch, 0.005)  # the gate: look again in 5 ms
    result = role.run_pass()
    assert result.next_in is not None and 0 < result.next_in <= 0.005
    _until(time.monotonic() + 0.006)
    role.run_pass()
    assert slept == []


def test_the_gap_is_skipped_at_most_once_in_a_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gate that keeps asking for a pass in a few ms cannot make the role spin."""
    role, slept = _role(tmp_path, monkeypatch, 0.001)
    for _ in range(6):
        _until(time.monotonic() + 0.002)
        role.run_pass()
    # The first pass has no predecessor; then skipped, waited, skipped, waited, skipped.
    assert len(slept) == 2


class PromotingGatePass(FakeGatePass):
    promoted = 1


def test_passes_that_decide_at_their_moments_never_wait_the_gap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fifty tasks coming due a few ms apart: each pass at its moment promotes one, and the next
    moment is sooner than the gap. None of them may wait the gap out."""
    role, slept = _role(tmp_path, monkeypatch, 0.004)
    role.gate = lambda _state, _settings, at, /: PromotingGatePass(at + 0.004)
    for _ in range(6):
        _until(time.monotonic() + 0.002)  # woken early (the pass's own writes): half-way to the moment
        role.run_pass()
    assert slept and all(s <= 0.004 for s in slept)


def test_a_moment_inside_the_gap_is_kept_when_records_arrive_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass that sees new records asks for another at once; the record due in 5 ms must not
    wait for the gap that re-pass observes."""
    role, slept = _role(tmp_path, monkeypatch, 0.005)
    (role.state.root / "pending" / f"{'a' * 64}.json").write_text("{}")  # arrived, not judged by the fake gate
    result = role.run_pass()
    assert result.next_in == 0.0
    role.run_pass()
    assert len(slept) == 1 and slept[0] <= 0.005
