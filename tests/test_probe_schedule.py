"""One probe schedule and one meaning of ``unknown_retry_max_seconds`` (0: no cap) for every gate."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
from donebell.shared.backoff import doubling
from donebell.shared.ntfy.retry import backoff_seconds
from donebell.shared.statedir import StateDir
from donebell.workers.kit.probe_schedule import capped, clock_jump_horizon, unknown_delay
from fixtures.gate.claude_kit import ClaudeWorld
from fixtures.gate.kit import CodexWorld, fast_settings, gate, last_decision

INF = math.inf


@pytest.mark.parametrize(
    ("attempts", "setting", "until", "expected"),
    [
        (0, 60.0, INF, 0.5),  # the first re-probe
        (1, 60.0, INF, 1.0),
        (3, 60.0, INF, 4.0),
        (7, 60.0, INF, 60.0),  # 64 s capped by the setting
        (7, 0.0, INF, 64.0),  # 0 is no cap: the doubling goes on
        (12, 0.0, INF, 2048.0),
        (99, 0.0, INF, 0.5 * 2.0**30),  # the doubling stops at 2**30: finite, never an overflow
        (99, 0.0, 90.0, 90.0),  # ... and the probe grace still ends it
        (3, 0.0, 2.5, 2.5),  # never past the grace end
        (3, 60.0, 0.0, 0.05),  # at the grace end: the floor, never a zero-delay loop
        (3, 60.0, -5.0, 0.05),  # past it (a late pass)
        (0, 0.01, INF, 0.05),  # a cap below the floor: the floor wins
        (-2, 60.0, INF, 0.5),  # a damaged negative attempt count starts over
    ],
)
def test_unknown_delay_table(attempts: int, setting: float, until: float, expected: float) -> None:
    """0.5 s doubling per attempt, within the setting (0: no cap) and the grace end, at least 50 ms."""
    assert unknown_delay(attempts, setting, until=until) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("wait", "setting", "expected"),
    [(30.0, 60.0, 30.0), (90.0, 60.0, 60.0), (90.0, 0.0, 90.0), (0.01, 0.0, 0.01), (-1.0, 60.0, 0.0)],
)
def test_a_check_s_own_wait_is_held_within_the_same_cap(wait: float, setting: float, expected: float) -> None:
    """A quiet window, orphan timeout or error retry is cut to the setting; 0 leaves it; never negative."""
    assert capped(wait, setting) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("setting", "idle_grace", "expected"),
    [(0.0, 2.0, INF), (60.0, 2.0, 120.0), (0.5, 0.0, 10.0), (1.0, 30.0, 60.0)],
)
def test_clock_jump_horizon(setting: float, idle_grace: float, expected: float) -> None:
    """Twice the longest legitimate wait; with no cap no wait is too long to be legitimate."""
    assert clock_jump_horizon(setting, idle_grace) == expected


@pytest.mark.parametrize(
    ("base", "step", "expected"), [(2.0, 0, 2.0), (2.0, -1, 2.0), (2.0, 3, 16.0), (0.5, 31, 0.5 * 2.0**30)]
)
def test_doubling(base: float, step: int, expected: float) -> None:
    """The one doubling formula: base at step 0, negative steps clamp to 0, at most 2**30."""
    assert doubling(base, step) == expected


def test_delivery_backoff_keeps_its_own_table_on_the_shared_doubling() -> None:
    """The delivery retry starts at 2 s with equal jitter: attempt n waits within [2^n / 2, 2^n], capped."""

    class Fixed:
        def __init__(self, fraction: float) -> None:
            self.fraction = fraction

        def uniform(self, low: float, high: float) -> float:
            return low + (high - low) * self.fraction

    for attempts, step in ((1, 2.0), (2, 4.0), (5, 32.0)):
        assert backoff_seconds(attempts, 900.0, rng=Fixed(0.0)) == step / 2  # type: ignore[arg-type]
        assert backoff_seconds(attempts, 900.0, rng=Fixed(1.0)) == step  # type: ignore[arg-type]
    assert backoff_seconds(20, 900.0, rng=Fixed(1.0)) == 900.0  # type: ignore[arg-type]


def _delays(state: StateDir, key: str, setting: float, start: float, passes: int) -> list[float]:
    """The wait each of ``passes`` evaluations scheduled for unknown evidence, read from the record."""
    settings = fast_settings(idle_probe_grace_seconds=10_000, unknown_retry_max_seconds=setting)
    delays = []
    at = start
    for _ in range(passes):
        gate(state, settings, at)
        record = last_decision(state, key)["record"]
        assert record["probe"]["wait_kind"] == "unknown", record["probe"]["history"][-1]
        delays.append(round(record["probe"]["next_probe_at"] - at, 3))
        at = record["probe"]["next_probe_at"]
    return delays


@pytest.mark.parametrize(("setting", "cap"), [(0.0, INF), (8.0, 8.0)])
@pytest.mark.parametrize("provider", ["codex", "claude"])
def test_both_provider_gates_wait_on_the_same_schedule(
    provider: str, setting: float, cap: float, isolated_env: dict[str, Path], state: StateDir
) -> None:
    """Unknown evidence is re-probed 0.5, 1, 2 ... s on both gates; 0 lets it grow past 60 s (no cap)."""
    if provider == "codex":
        key = CodexWorld(isolated_env["codex_home"], state).submit("0000-missing", "t1", classification="unknown")
    else:  # a transcript that never appears: transcript-missing once the 3 s lag is over
        key = ClaudeWorld(isolated_env["claude_dir"] / "projects" / "-w", state).submit("s-1", "p-1", epoch=0)
    expected = [min(0.5 * 2**n, cap) for n in range(9)]
    assert _delays(state, key, setting, time.time() + 10, 9) == expected


@pytest.mark.parametrize(
    ("retry_in", "attempts", "setting", "expected"),
    [
        (None, 0, 0.0, 0.5),  # no hint and no cap: the schedule, never a zero-delay loop
        (None, 4, 0.0, 8.0),
        (None, 4, 3.0, 3.0),
        (90.0, 0, 60.0, 60.0),  # a check's own wait within the cap
        (90.0, 0, 0.0, 90.0),  # ... left alone without one
        (0.0, 9, 60.0, 0.0),  # "look again at once" (the commit's changed) stays at once
    ],
)
def test_the_commit_schedules_by_the_same_rules(
    retry_in: float | None, attempts: int, setting: float, expected: float
) -> None:
    """The stored next_probe_at follows the verdict's hint within the cap, else the probe schedule."""
    from donebell.workers.gate.commit import next_probe_delay
    from donebell.workers.kit.verdict import Verdict

    record = {"probe": {"attempts": attempts}}
    assert next_probe_delay(record, Verdict.wait("x", retry_in=retry_in), retry_max=setting) == expected
